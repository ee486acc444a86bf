"""Volcano v1.15's vGPU rules (pkg/scheduler/api/devices/nvidia/vgpu), docs/design.md §9.2.

- Card filter, in checkNodeGPUSharingPredicateAndScore's order: slots (Number <= UsedNum),
  memory, cores (UsedCore + Coresreq > 100), a 100 % core request on a shared card, a 0-core
  request on a card whose cores are all taken. There is no health check.
- A memory share is `uint(float64(Memory) * pct / 100.0)` of each card and wins over an
  absolute memory; neither asks the whole card.
- Card order: binpack by used memory (most first), spread by vGPUs on the card (fewest
  first), both ties to the lowest index; `legacy` (no deviceshare.SchedulePolicy) walks the
  cards from the last to the first.
- Node score: binpack sums 100·UsedMem/Memory over the chosen cards after placement; spread
  and legacy score 0 (after TryAddPod the spread term never fires). Rounded, times
  deviceshare.ScheduleWeight (default 0). The node with the highest total wins; Volcano
  breaks ties at random.
"""

from __future__ import annotations

import math

import numpy as np

from advisor.core.jobs import VOLCANO_SESSION, VOLCANO_SETTINGS, SessionRules
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
    walk,
)
from advisor.core.shape import Shape

REGISTER = "volcano.sh/node-vgpu-register"  # the node's card registration Volcano reads
DIALECT = Dialect(
    name="volcano-vgpu",
    count="volcano.sh/vgpu-number",
    memory="volcano.sh/vgpu-memory",
    core="volcano.sh/vgpu-cores",
    memory_percentage="volcano.sh/vgpu-memory-percentage",
    memory_unit_mib=1,
    per_card=True,
    allocation="volcano.sh/vgpu-ids-new",
)


class VolcanoProfile:
    name = "volcano-vgpu"
    title = "Volcano vGPU"
    reasons: tuple[str, ...] = (
        "too-few-cards",
        "vgpu-limit",
        "card-memory",
        "card-core",
        "exclusive-conflict",
        "core-exhausted",
        # allocate's resource check over the plugin's totals (before the card filter)
        f"Insufficient {DIALECT.count}",
        f"Insufficient {DIALECT.core}",
    )
    few_cards_reason = 0  # index of the reason for a node with fewer cards than asked
    refused_reason: int | None = 6  # index of the reason for enough cards refused together
    refused_reasons: tuple[int, ...] = (6, 7)
    memory_reason = 2  # index of the card check for free memory
    health_reason: int | None = None  # index of the card check for health, if any
    checks_health = False
    card_word = ""
    random_ties = True
    requires_memory = False
    one_mode_per_card = False
    named_in_reports = True
    scale_up_actor: ScaleUpActor = "cluster-autoscaler"
    node_pool_label: str | None = None
    default_policy = Policy("binpack", "legacy")
    card_policies: tuple[PolicyName, ...] = ("binpack", "spread", "legacy")
    default_max_vgpus = 10
    settings: tuple[str, ...] = ("schedule_weight", *VOLCANO_SETTINGS)
    session: SessionRules = VOLCANO_SESSION
    dialect: Dialect | None = DIALECT
    allocation_annotation: str | None = DIALECT.allocation
    registration_annotation: str | None = REGISTER

    def __init__(self, weight: int = 0) -> None:
        self.weight = weight  # deviceshare.ScheduleWeight, the cluster's `Scheduler` setting

    def configured(self, scheduler: Scheduler) -> VolcanoProfile:
        return VolcanoProfile(scheduler.schedule_weight)

    def request_problem(self, request: Request) -> str | None:
        problem = gpus_problem(request) or split_problem(request)
        if problem is None and request.core_percent // request.gpus > 100:
            per_card = request.core_percent // request.gpus
            return f"core {per_card}% per card is above 100%: Volcano never places it"
        return problem

    def shape_problem(self, shape: Shape) -> str | None:
        return None

    def mode_conflicts(self, card_modes: IntArray, mode: int) -> BoolArray:
        return np.zeros(card_modes.shape, dtype=np.bool_)

    def queue_request(self, request: Request) -> dict[str, int]:
        return dialect_request(DIALECT, request)

    def device_allocatable(self, cards: tuple[Card, ...], slots: int) -> dict[str, int]:
        """The plugin's slots and cores count its healthy cards, its memory every card:
        Project-HAMi/volcano-vgpu-device-plugin pkg/plugin/vgpu/plugin.go ListAndWatch
        re-sends the memory devices unchanged when a card fails (its FIXME), while the slot
        and core devices carry the card's health (apiDevices, cache.go notify)."""
        found = dialect_allocatable(DIALECT, cards, slots)
        memory = sum(c.memory_mib for c in cards)
        if memory > 0:
            found[DIALECT.memory] = memory
        return found

    def card_need(self, capacity: IntArray, shape: Shape) -> IntArray:
        if shape.memory_percent > 0:
            share = capacity.astype(np.float64) * float(shape.memory_percent) / 100.0
            return np.trunc(share).astype(np.int64)
        if shape.card_memory_mib > 0:
            return np.full(capacity.shape, shape.card_memory_mib, dtype=np.int64)
        return capacity.copy()

    def card_core(self, shape: Shape) -> int:
        return shape.card_core

    def card_rejections(
        self, st: CardView, shape: Shape, at: IntArray | slice
    ) -> tuple[BoolArray | None, ...]:
        core = shape.card_core
        free_core = st.free_core[at]
        return (
            st.vgpus[at] >= st.slots[at],
            st.free_memory[at] < self.card_need(st.capacity[at], shape),
            free_core < core,
            st.vgpus[at] > 0 if core == 100 else None,
            free_core == 0 if core == 0 else None,
        )

    def card_reason_text(self, code: int, cards: list[int], shape: Shape, limit: int) -> str:
        if code in self.refused_reasons:
            what = "vGPU slots" if code == 6 else "cores"
            return f"{self.reasons[code]}: its healthy cards' {what}, less what its pods ask"
        return listed_cards(self.reasons, code, cards)

    def fits(self, st: CardView, shape: Shape, eligible: BoolArray) -> BoolArray:
        slots, cores = self._totals_short(st, shape)
        return np.asarray(enough_cards(st, shape, eligible) & ~slots & ~cores, dtype=np.bool_)

    def refusals(self, st: CardView, shape: Shape) -> IntArray:
        slots, _ = self._totals_short(st, shape)
        return np.where(slots, 6, 7).astype(np.int64)

    def _totals_short(self, st: CardView, shape: Shape) -> tuple[BoolArray, BoolArray]:
        """Per node, whether allocate's resource check (actions/allocate/allocate.go
        `predicate`, `InitResreq.LessEqualWithResourcesName(FutureIdle)`) refuses the pod's
        volcano.sh/vgpu-number, or its vgpu-cores: the node's allocatable counts the
        plugin's healthy cards only (`device_allocatable`) while every pod on it counts,
        one on a card gone unhealthy too. Its vgpu-memory counts every card: never
        tighter than the card filter."""
        n_nodes = st.card_count.size
        slots = np.bincount(st.node_of, weights=st.slots * st.healthy, minlength=n_nodes)
        short_slots = shape.gpus > slots - st.node_used[:, 0]
        core = shape.card_core
        room = 100 * st.healthy_count - st.node_core_asked
        short_cores = (core > 0) & (core > room)
        return np.asarray(short_slots, dtype=np.bool_), np.asarray(short_cores, dtype=np.bool_)

    def order(self, st: CardView, node: int, card_policy: PolicyName) -> list[int]:
        positions = list(st.node_positions(node))
        if card_policy == "binpack":
            used = st.capacity - st.free_memory
            return sorted(positions, key=lambda k: (-int(used[k]), int(st.card_index[k])))
        if card_policy == "spread":
            return sorted(positions, key=lambda k: (int(st.vgpus[k]), int(st.card_index[k])))
        return positions[::-1]

    def node_scores(
        self,
        st: CardView,
        nodes: IntArray,
        shape: Shape,
        eligible: BoolArray,
        policy: tuple[PolicyName, PolicyName],
    ) -> FloatArray:
        card_policy = policy[1]
        if card_policy != "binpack" or self.weight == 0:
            return np.zeros(nodes.size)  # every node scores 0
        scores = np.zeros(nodes.size)
        for i, node in enumerate(nodes):
            cards = walk(self.order(st, int(node), card_policy), eligible, shape.gpus)
            need = self.card_need(st.capacity[np.array(cards, dtype=np.int64)], shape)
            total = 0.0
            for k, mem in zip(cards, need, strict=True):
                used_after = int(st.capacity[k] - st.free_memory[k] + mem)
                total += 100.0 * (used_after / float(st.capacity[k]))  # GPUScore, as Go rounds
            scores[i] = math.floor(total + 0.5) * self.weight
        return scores

    def pick_best(
        self,
        st: CardView,
        nodes: IntArray,
        scores: FloatArray,
        shape: Shape,
        eligible: BoolArray,
        policy: tuple[PolicyName, PolicyName],
    ) -> list[int]:
        tied = nodes[scores == scores.max()]
        st.tied = int(tied.size)
        return walk(self.order(st, first_by_name(st, tied), policy[1]), eligible, shape.gpus)
