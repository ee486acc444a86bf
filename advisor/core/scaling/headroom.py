"""Headroom: the GPUs the cluster needs at its observed peak, and what it has and allots."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from advisor.core.model import Cluster, reference_card_mib
from advisor.core.occupancy import build_state


@dataclass(frozen=True, slots=True)
class Headroom:
    """GPUs needed at the observed peak (module docstring of `headroom` for the formula)."""

    capacity_gpus: float
    peak_allotted_gpus: float
    needed_gpus: int  # by allotment: what scheduling needs
    spare_gpus: float  # capacity - needed; negative: a shortfall
    target_utilisation: float
    redundancy: float
    peak_used_gpus: float | None = None
    needed_by_use_gpus: int | None = None  # if requests matched use (after right-sizing)


def gpus_needed(peak_gpus: float, target_utilisation: float = 0.7, redundancy: float = 0.2) -> int:
    """ceil(peak × (1 + redundancy) / target_utilisation).

    The peak grows by the redundancy margin (a rolling update runs old and new pods side by
    side, about maxSurge more), and that load must sit at the target utilisation, not at 100%.
    Example: peak 70 GPUs, margin 0.2, target 0.7 -> ceil(70 × 1.2 / 0.7) = 120 GPUs.
    """
    if not 0 < target_utilisation <= 1:
        raise ValueError(f"target utilisation must be in (0, 1], got {target_utilisation}")
    if redundancy < 0 or peak_gpus < 0:
        raise ValueError("peak and redundancy must not be negative")
    # Round away float noise before the ceiling (70 × 1.2 / 0.7 is 120.00000000000001).
    return math.ceil(round(peak_gpus * (1 + redundancy) / target_utilisation, 9))


def headroom(
    capacity_gpus: float,
    peak_allotted_gpus: float,
    peak_used_gpus: float | None = None,
    target_utilisation: float = 0.7,
    redundancy: float = 0.2,
) -> Headroom:
    """GPUs the cluster needs at its observed peak, in GPUs of memory (`model.gpu_mib`), by
    allotment and, when given, by use."""
    needed = gpus_needed(peak_allotted_gpus, target_utilisation, redundancy)
    by_use = (
        None
        if peak_used_gpus is None
        else gpus_needed(peak_used_gpus, target_utilisation, redundancy)
    )
    return Headroom(
        capacity_gpus=capacity_gpus,
        peak_allotted_gpus=peak_allotted_gpus,
        needed_gpus=needed,
        spare_gpus=capacity_gpus - needed,
        target_utilisation=target_utilisation,
        redundancy=redundancy,
        peak_used_gpus=peak_used_gpus,
        needed_by_use_gpus=by_use,
    )


def allotted_gpus(cluster: Cluster) -> float:
    """GPUs of memory allotted now (`model.gpu_mib`: the product's one unit)."""
    state = build_state(cluster)
    used = (state.capacity - state.free_memory).astype(np.float64)
    return float(used.sum()) / reference_card_mib(cluster)


def capacity_gpus(cluster: Cluster, healthy_only: bool = True) -> float:
    """The vGPU cards' memory in GPUs of memory (a card of the commonest size = 1); a card in
    MIG mode takes MIG pods only (docs/design.md §13), so it is no vGPU capacity."""
    mib = sum(
        c.memory_mib
        for n in cluster.nodes
        for c in n.cards
        if (c.healthy or not healthy_only) and c.mig is None
    )
    return mib / reference_card_mib(cluster)
