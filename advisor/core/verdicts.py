"""One filtering pass's verdicts, node by node and card by card, as placement decides by and
the diagnosis explains by (`CardState.verdicts`), and the counts taken of them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.core.profiles.base import BoolArray, IntArray

# Columns of the node resource arrays, in NodeResourcesFit's check order.
SLOTS, CPU, MEMORY = 0, 1, 2
SPARSE = 16  # `eligible_per_node` counts marked cards where under 1 in this many are


@dataclass(frozen=True, slots=True)
class StaticVerdicts:
    """The static filters' verdicts on every node for one set of pod constraints."""

    ok: BoolArray
    rejected: dict[int, tuple[str, ...]]  # node index -> messages, rejected nodes only
    counts: dict[str, int]  # message -> nodes


@dataclass(frozen=True, slots=True)
class Verdicts:
    """One filtering pass for a shape, every filter's verdict kept: what `place` decides by
    is what the diagnosis explains by (as kube-scheduler's `fitsRequest` returns the
    resources it found short), so no rule is judged twice."""

    static_ok: BoolArray  # per node: NodeUnschedulable, NodeAffinity, TaintToleration pass
    short: BoolArray  # (nodes, 3): the session's resource shortfalls (`CardState.fit`)
    rejections: tuple[BoolArray | None, ...]  # per card check of the profile (`card_rejections`)
    eligible: BoolArray  # per card: no card check rejects it
    gpu_fit: BoolArray  # per node: the profile's GPU filter passes

    @property
    def passing(self) -> BoolArray:
        """Per node: every filter passes."""
        return np.asarray(self.gpu_fit & self.static_ok & self.roomy, dtype=np.bool_)

    @property
    def nodes(self) -> IntArray:
        """The nodes every filter passes."""
        return np.flatnonzero(self.passing).astype(np.int64)

    @property
    def roomy(self) -> BoolArray:
        """Per node: no resource short. Column by column, as numpy's `any` over rows of
        three costs about fifteen times as much."""
        s = self.short
        return np.asarray(~(s[:, SLOTS] | s[:, CPU] | s[:, MEMORY]), dtype=np.bool_)

    def card_codes(self) -> IntArray:
        """Per card, 1 + the index of the first card check that rejects it, or 0."""
        conditions = [c for c in self.rejections if c is not None]
        choices = [1 + i for i, c in enumerate(self.rejections) if c is not None]
        return np.select(conditions, choices, 0).astype(np.int64)


def count_per_node(
    eligible: BoolArray, node_of: IntArray, first_card: IntArray, carded: IntArray
) -> IntArray:
    """`CardState.eligible_per_node` over the arrays named (`core.placer`'s few nodes too)."""
    hits = np.flatnonzero(eligible)
    if hits.size * SPARSE < eligible.size:
        return np.bincount(node_of[hits], minlength=first_card.size).astype(np.int64)
    counts = np.zeros(first_card.size, dtype=np.int64)
    if carded.size:
        counts[carded] = np.add.reduceat(eligible, first_card[carded], dtype=np.int64)
    return counts


def eligible_of(rejections: tuple[BoolArray | None, ...], size: int) -> BoolArray:
    """The cards no check rejects."""
    rejected: BoolArray = np.zeros(size, dtype=np.bool_)
    for check in rejections:
        if check is not None:
            rejected |= check
    return np.asarray(~rejected, dtype=np.bool_)
