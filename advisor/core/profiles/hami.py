"""HAMi v2.10's GPU rules (NvidiaGPUDevices.Fit, pkg/scheduler/policy), docs/design.md §9.2.

- Card filter, in Fit's order: CardNotHealth, CardTimeSlicingExhausted (slots),
  CardInsufficientMemory, CardInsufficientCore, ExclusiveDeviceAllocateConflict (a 100 %
  core request wants the card alone), CardComputeUnitsExhausted (a 0-core request on a card
  whose cores are all taken). Cores above 100 are clamped to 100.
- Card score, once per request before sorting, in float32, one operation at a time (as Go
  computes it): 10 · (w_slot·(1+used)/count + w_core·(core+usedcores)/100 +
  w_mem·(mem+usedmem)/totalmem).
- Fit walks the sorted list from its end, so binpack takes the highest scores first and
  spread the lowest; ties go to the higher NUMA node, then the later list position (Go's
  insertion sort is stable on up to 12 cards; above that its pdqsort order is not
  reproduced). With numa-bind, NUMA is the primary key and a change of NUMA node while
  collecting discards the cards collected so far (NumaNotFit).
- Node score, taken before placement over every card, unhealthy ones included:
  10 · (Σused/Σcount + Σusedcores/Σtotalcore + Σusedmem/Σtotalmem); binpack takes the
  highest, spread the lowest; HAMi breaks ties at random.
"""

from __future__ import annotations

import numpy as np

from advisor.core.jobs import HAMI_SESSION, SessionRules
from advisor.core.model import Card, Policy, PolicyName, Request, Scheduler
from advisor.core.profiles.base import (
    BoolArray,
    CardView,
    Dialect,
    FloatArray,
    IntArray,
    ScaleUpActor,
    dialect_allocatable,
    dialect_request,
    enough_cards,
    first_by_name,
    gpus_problem,
    listed_cards,
    split_problem,
)
from advisor.core.shape import Shape

F32 = np.float32
REGISTER = "hami.io/node-nvidia-register"  # the node's card registration HAMi reads
DIALECT = Dialect(
    name="hami",
    count="nvidia.com/gpu",
    memory="nvidia.com/gpumem",
    core="nvidia.com/gpucores",
    memory_percentage="nvidia.com/gpumem-percentage",
    memory_unit_mib=1,
    per_card=True,
    allocation="hami.io/vgpu-devices-allocated",
)
TOTAL_CORE = 100  # Totalcore with the default DeviceCoreScaling of 1


class HamiProfile:
    name = "hami"
    title = "HAMi"
    reasons: tuple[str, ...] = (
        "AllocatedCardsInsufficientRequest",
        "CardNotHealth",
        "CardTimeSlicingExhausted",
        "CardInsufficientMemory",
        "CardInsufficientCore",
        "ExclusiveDeviceAllocateConflict",
        "CardComputeUnitsExhausted",
        "NumaNotFit",
        "NodeInsufficientDevice",
    )
    few_cards_reason = 8  # index of the reason for a node with fewer cards than asked
    refused_reason: int | None = 7  # index of the reason for enough cards refused together
    refused_reasons: tuple[int, ...] = (7,)
    memory_reason = 3  # index of the card check for free memory
    health_reason: int | None = 1  # index of the card check for health, if any
    checks_health = True
    card_word = "healthy "
    random_ties = True
    requires_memory = False
    one_mode_per_card = False
    named_in_reports = True
    scale_up_actor: ScaleUpActor = "cluster-autoscaler"
    node_pool_label: str | None = None
    default_policy = Policy("binpack", "spread")
    card_policies: tuple[PolicyName, ...] = ("binpack", "spread")
    default_max_vgpus = 10  # deviceSplitCount
    settings: tuple[str, ...] = ("default_memory_mib", "weights", "preemption")
    session: SessionRules = HAMI_SESSION
    dialect: Dialect | None = DIALECT
    allocation_annotation: str | None = DIALECT.allocation
    registration_annotation: str | None = REGISTER

    def __init__(self, default_memory: int = 0, weights: tuple[int, int, int] = (1, 1, 1)) -> None:
        self.default_memory = default_memory  # the cluster's `Scheduler` settings
        self.weights = weights

    def configured(self, scheduler: Scheduler) -> HamiProfile:
        return HamiProfile(scheduler.default_memory_mib, scheduler.weights)

    def request_problem(self, request: Request) -> str | None:
        return gpus_problem(request) or split_problem(request)

    def shape_problem(self, shape: Shape) -> str | None:
        return shape.options.problem

    def mode_conflicts(self, card_modes: IntArray, mode: int) -> BoolArray:
        return np.zeros(card_modes.shape, dtype=np.bool_)

    def queue_request(self, request: Request) -> dict[str, int]:
        return dialect_request(DIALECT, request)

    def device_allocatable(self, cards: tuple[Card, ...], slots: int) -> dict[str, int]:
        return dialect_allocatable(DIALECT, cards, slots)

    def card_need(self, capacity: IntArray, shape: Shape) -> IntArray:
        if shape.card_memory_mib > 0:
            return np.full(capacity.shape, shape.card_memory_mib, dtype=np.int64)
        if shape.memory_percent > 0:  # Totalmem * pct / 100 in integers
            return capacity * shape.memory_percent // 100
        if self.default_memory > 0:
            return np.full(capacity.shape, self.default_memory, dtype=np.int64)
        return capacity.copy()

    def card_core(self, shape: Shape) -> int:
        return min(shape.card_core, TOTAL_CORE)

    def card_rejections(
        self, st: CardView, shape: Shape, at: IntArray | slice
    ) -> tuple[BoolArray | None, ...]:
        core = self.card_core(shape)
        free_core = st.free_core[at]
        return (
            ~st.healthy[at],
            st.vgpus[at] >= st.slots[at],
            st.free_memory[at] < self.card_need(st.capacity[at], shape),
            free_core < core,
            st.vgpus[at] > 0 if core == TOTAL_CORE else None,
            free_core == 0 if core == 0 else None,
        )

    def card_reason_text(self, code: int, cards: list[int], shape: Shape, limit: int) -> str:
        if code in self.refused_reasons:
            return f"{self.reasons[code]}: no {shape.gpus} eligible cards on one NUMA node"
        return listed_cards(self.reasons, code, cards)

    def refusals(self, st: CardView, shape: Shape) -> IntArray:
        return np.full(st.card_count.shape, 7, dtype=np.int64)

    def fits(self, st: CardView, shape: Shape, eligible: BoolArray) -> BoolArray:
        ok = enough_cards(st, shape, eligible)
        if shape.options.numa_bind:
            for node in np.flatnonzero(ok):
                ok[node] = bool(self._walk(st, int(node), shape, eligible))
        return ok

    def node_scores(
        self,
        st: CardView,
        nodes: IntArray,
        shape: Shape,
        eligible: BoolArray,
        policy: tuple[PolicyName, PolicyName],
    ) -> FloatArray:
        return node_scores(st, nodes)

    def pick_best(
        self,
        st: CardView,
        nodes: IntArray,
        scores: FloatArray,
        shape: Shape,
        eligible: BoolArray,
        policy: tuple[PolicyName, PolicyName],
    ) -> list[int]:
        node_policy = shape.options.node_policy or policy[0]
        best = scores.max() if node_policy == "binpack" else scores.min()
        tied = nodes[scores == best]
        st.tied = int(tied.size)
        return self._walk(st, first_by_name(st, tied), shape, eligible, policy[1])

    def _walk(
        self,
        st: CardView,
        node: int,
        shape: Shape,
        eligible: BoolArray,
        default_policy: PolicyName = "spread",
    ) -> list[int]:
        """Fit's reverse walk over the node's sorted cards: the first N eligible ones (with
        numa-bind, N of one NUMA node met in a row); [] when it finds none."""
        positions = np.array(list(st.node_positions(node)), dtype=np.int64)
        card_policy = shape.options.card_policy or default_policy
        score = self.card_scores(st, shape, positions)
        numa = st.numa[positions]
        later = -positions  # the later list position first
        sign = -1 if card_policy == "binpack" else 1  # binpack: highest score first
        if shape.options.numa_bind:
            numa_key = numa if card_policy == "binpack" else -numa
            order = np.lexsort((later, sign * score, numa_key))
        else:
            order = np.lexsort((later, -numa, sign * score))
        taken: list[int] = []
        current: int | None = None
        for k in (int(positions[i]) for i in order):
            if not st.healthy[k]:
                continue
            if shape.options.numa_bind and st.numa[k] != current:
                taken, current = [], int(st.numa[k])
            if eligible[k]:
                taken.append(k)
                if len(taken) == shape.gpus:
                    return taken
        return []

    def card_scores(self, st: CardView, shape: Shape, at: IntArray) -> np.ndarray:
        """ComputeScore of each card at `at` for `shape`, float32 operation by operation."""
        w_slot, w_core, w_mem = shape.options.weights or self.weights
        count, capacity = st.slots[at], st.capacity[at]
        used_cores = TOTAL_CORE - st.free_core[at]
        used_mem = capacity - st.free_memory[at]
        with np.errstate(divide="ignore", invalid="ignore"):
            slot_score = F32(1 + st.vgpus[at]) / count.astype(F32)
            core_score = (self.card_core(shape) + used_cores).astype(F32) / F32(TOTAL_CORE)
            # ComputeScore reads a share when one is given, even beside a memory (Fit does not)
            pct = shape.memory_percent
            mem = capacity * pct // 100 if pct else self.card_need(capacity, shape)
            mem_score = (mem + used_mem).astype(F32) / capacity.astype(F32)
            weighted = F32(w_slot) * slot_score + F32(w_core) * core_score
            score = F32(10) * (weighted + F32(w_mem) * mem_score)
        return np.where((count == 0) | (capacity == 0), F32(0), score).astype(F32)


def node_scores(st: CardView, nodes: IntArray) -> np.ndarray:
    """ComputeDefaultScore of each node, before placement, over all its cards (float32)."""
    used, total = st.node_used[nodes], st.node_total[nodes]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = used.astype(F32) / total.astype(F32)
        score = F32(10) * (ratio[:, 0] + ratio[:, 1] + ratio[:, 2])
    return np.where((total == 0).any(axis=1), F32(0), score).astype(F32)
