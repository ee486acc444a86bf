"""GPU fragmentation as FGD measures it (Weng et al., USENIX ATC '23), and stranded memory.

FGD's measure, on this model (memory stands for the GPU fraction a task asks):

- The *typical task shapes* are the observed workload's requests reduced to what each card
  must give, ``(gpus, MiB per card, core per card, mode)``, each weighted by its share of pods.
- For one shape m and node n, ``F_n(m)`` is the free memory on n's healthy cards that m can
  not use: if n cannot host m at all (fewer than m.gpus eligible cards), *all* its free memory;
  otherwise the free memory of the cards that are not eligible for m (too little free memory
  or core, the other isolation mode, or at the vGPU limit). This is the simulator's
  ``NodeGpuShareFragAmount`` summed except its "satisfied" (Q3) part.
- ``F_n = Σ_m share(m) · F_n(m)``; the cluster's fragmentation is ``Σ_n F_n``, and the ratio
  is that over the cluster's free memory (the ``xgpu_advisor_fragmentation_ratio`` series).

*Stranded* memory is plainer: free memory on healthy cards that no Pending pod could use
(the card is not eligible for the pod's shape, or its node has too few eligible cards).
With no Pending pod, nothing waits, so nothing is stranded.

Every figure is kept twice: in MiB, and in GPUs (each card's free memory as a fraction of
the card, FGD's "milli-GPU" / 1000), which is what the openb replay reports.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from advisor.core.model import Cluster, Pod, ProfileName, gpu_mib
from advisor.core.occupancy import build_state
from advisor.core.profiles import profile_for
from advisor.core.state import CardState, Shape

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class WeightedShape:
    shape: Shape
    share: float  # of the shapes kept; the shares sum to 1
    pods: int


@dataclass(frozen=True, slots=True)
class NodeFragmentation:
    node: str
    free_mib: int  # on healthy cards
    fragment_mib: float
    stranded_mib: int
    free_gpus: float
    fragment_gpus: float
    stranded_gpus: float


@dataclass(frozen=True, slots=True)
class Fragmentation:
    shapes: tuple[WeightedShape, ...]
    nodes: tuple[NodeFragmentation, ...]  # cluster order
    free_mib: int
    fragment_mib: float
    stranded_mib: int
    free_gpus: float
    fragment_gpus: float
    stranded_gpus: float

    @property
    def ratio(self) -> float:
        """Cluster fragment / cluster free memory; 0 when nothing is free."""
        return self.fragment_mib / self.free_mib if self.free_mib else 0.0

    @property
    def stranded_ratio(self) -> float:
        return self.stranded_mib / self.free_mib if self.free_mib else 0.0


def valid_shape(pod: Pod, profile: ProfileName = "cce") -> Shape | None:
    """The pod's per-card shape, or None when its request breaks a rule of the profile
    (§1, §9.2; under hami also a pod annotation HAMi refuses), as the diagnosis judges it."""
    rules = profile_for(profile)
    if pod.invalid is not None or rules.request_problem(pod.request) is not None:
        return None
    shape = Shape.of_pod(pod)
    return None if rules.shape_problem(shape) is not None else shape


def typical_shapes(
    pods: Iterable[Pod], coverage: float = 1.0, profile: ProfileName = "cce"
) -> tuple[WeightedShape, ...]:
    """The workload's distinct valid shapes, most popular first, with their share of pods.

    `coverage` < 1 keeps only the most popular shapes that together cover that share of the
    pods and renormalises them, as the FGD simulator's popularity threshold does (it uses 0.6);
    the default keeps every shape. Ties in popularity go by (gpus, MiB, core, mode).
    """
    if not 0 < coverage <= 1:
        raise ValueError(f"coverage must be in (0, 1], got {coverage}")
    counts = Counter(s for pod in pods if (s := valid_shape(pod, profile)) is not None)
    total = sum(counts.values())
    ranked = sorted(
        counts.items(), key=lambda kv: (-kv[1], kv[0].gpus, kv[0].card_memory_mib, kv[0].card_core)
    )
    kept: list[tuple[Shape, int]] = []
    covered = 0
    for shape, count in ranked:
        if covered >= coverage * total:
            break
        kept.append((shape, count))
        covered += count
    return tuple(WeightedShape(shape, count / covered, count) for shape, count in kept)


def fragmentation(
    cluster: Cluster,
    shapes: tuple[WeightedShape, ...] | None = None,
    pending: Iterable[Pod] | None = None,
) -> Fragmentation:
    """Fragmentation of the cluster as it runs now (running pods bound, Pending ones not).

    `shapes` defaults to the typical shapes of all its pods (running and Pending); `pending`
    (the pods whose needs define stranded memory) to its Pending pods.
    """
    if shapes is None:
        shapes = typical_shapes(cluster.pods, profile=cluster.scheduler.profile)
    if pending is None:
        pending = cluster.pending
    return measure(build_state(cluster), shapes, pending)


def measure(
    state: CardState, shapes: tuple[WeightedShape, ...], pending: Iterable[Pod]
) -> Fragmentation:
    """FGD fragmentation and stranded memory of an occupancy (see the module docstring)."""
    n_nodes = len(state.node_names)
    # the cards the profile counts: healthy ones, or all where it has no health check
    free = np.where(state.counted, state.free_memory, 0).astype(np.float64)
    # GPUs of memory (`model.gpu_mib`): the one unit of every GPU figure
    free_gpus = free / gpu_mib(state.capacity[state.healthy].tolist())
    fragment = np.zeros_like(free)
    fragment_gpus = np.zeros_like(free)
    for weighted in shapes:
        unusable = ~_usable(state, weighted.shape)
        fragment += weighted.share * np.where(unusable, free, 0.0)
        fragment_gpus += weighted.share * np.where(unusable, free_gpus, 0.0)
    profile = state.profile.name
    waiting = {s for pod in pending if (s := valid_shape(pod, profile)) is not None}
    usable_by_some = np.zeros(free.size, dtype=np.bool_)
    for shape in sorted(waiting, key=_shape_key):
        usable_by_some |= _usable(state, shape)
    stranded = np.where(usable_by_some, 0.0, free) if waiting else np.zeros_like(free)
    stranded_gpus = np.where(usable_by_some, 0.0, free_gpus) if waiting else np.zeros_like(free)

    def per_node(values: FloatArray) -> FloatArray:
        return np.bincount(state.node_of, weights=values, minlength=n_nodes).astype(np.float64)

    sums = [
        per_node(v) for v in (free, fragment, stranded, free_gpus, fragment_gpus, stranded_gpus)
    ]
    nodes = tuple(
        NodeFragmentation(
            node=name,
            free_mib=round(sums[0][i]),
            fragment_mib=float(sums[1][i]),
            stranded_mib=round(sums[2][i]),
            free_gpus=float(sums[3][i]),
            fragment_gpus=float(sums[4][i]),
            stranded_gpus=float(sums[5][i]),
        )
        for i, name in enumerate(state.node_names)
    )
    return Fragmentation(
        shapes=shapes,
        nodes=nodes,
        free_mib=round(float(free.sum())),
        fragment_mib=float(fragment.sum()),
        stranded_mib=round(float(stranded.sum())),
        free_gpus=float(free_gpus.sum()),
        fragment_gpus=float(fragment_gpus.sum()),
        stranded_gpus=float(stranded_gpus.sum()),
    )


def _shape_key(shape: Shape) -> tuple[int, int, int, int]:
    return (shape.gpus, shape.card_memory_mib, shape.card_core, shape.mode)


def _usable(state: CardState, shape: Shape) -> npt.NDArray[np.bool_]:
    """Cards `shape` could use: eligible, on a node with enough eligible cards to host it."""
    eligible = state.eligible(shape)
    hosts = state.eligible_per_node(eligible) >= shape.gpus
    usable: npt.NDArray[np.bool_] = eligible & hosts[state.node_of]
    return usable
