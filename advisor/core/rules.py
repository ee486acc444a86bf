"""Each scheduler profile's GPU rules, behind one interface (docs/design.md §9.2).

kube-scheduler's own filters (nodefilters) run the same way under every profile; what
differs is the GPU filter, which cards a pod gets and which node wins:

- `cce` (rules_cce): CCE xGPU, the even split of §1–§2;
- `hami` (rules_hami): HAMi v2.10's NvidiaGPUDevices.Fit and its float32 scores;
- `volcano-vgpu` (rules_volcano): Volcano v1.15's vGPU device share.

A profile's card checks are the one definition of its card filter: placement decides by them
and the diagnosis explains by them (`reasons` names them in the profile's own words).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

from advisor.core.model import PolicyName, ProfileName, Request, Scheduler

if TYPE_CHECKING:
    from advisor.core.state import CardState, Shape

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


class CardRules(Protocol):
    profile: ProfileName
    # Per-node GPU reasons: the node-level one first (too few cards qualify), then one per
    # card check in the order `card_rejections` returns them, then any node-level extras.
    reasons: tuple[str, ...]
    # The real scheduler breaks equal node scores at random: the model takes the first node
    # by name and says the real pick may differ.
    random_ties: bool
    few_cards_reason: int  # index in `reasons`: the node has fewer cards than asked
    refused_reason: int | None  # index in `reasons`: enough eligible cards, refused together
    # Indices in `reasons` of the card checks for free memory and for health (None: none):
    # a headline names any other check that decided, since it is not about memory.
    memory_reason: int
    health_reason: int | None
    checks_health: bool  # whether an unhealthy card is refused
    card_word: str  # what the counted cards are called in messages ("healthy", or "")

    def request_problem(self, request: Request) -> str | None: ...

    def card_need(self, capacity: IntArray, shape: Shape) -> IntArray:
        """Memory (MiB) each card of these capacities must give `shape`."""
        ...

    def card_core(self, shape: Shape) -> int:
        """Core (%) each card must give `shape`."""
        ...

    def card_rejections(
        self, st: CardState, shape: Shape, at: IntArray | slice
    ) -> tuple[BoolArray | None, ...]: ...

    def fits(self, st: CardState, shape: Shape, eligible: BoolArray) -> BoolArray:
        """Per node: the GPU filter passes (enough eligible cards, and any profile rule on
        how they combine)."""
        ...

    def pick(
        self,
        st: CardState,
        nodes: IntArray,
        shape: Shape,
        eligible: BoolArray,
        policy: tuple[PolicyName, PolicyName],
    ) -> list[int]:
        """Card positions on the winning node among `nodes` (all fit); sets `st.tied`."""
        ...


def rules_for(scheduler: Scheduler) -> CardRules:
    # Imported here: each profile module reads CardState, which imports this one.
    from advisor.core.rules_cce import CceRules
    from advisor.core.rules_hami import HamiRules
    from advisor.core.rules_volcano import VolcanoRules

    if scheduler.profile == "hami":
        return HamiRules(scheduler)
    if scheduler.profile == "volcano-vgpu":
        return VolcanoRules(scheduler)
    return CceRules()


def enough_cards(st: CardState, shape: Shape, eligible: BoolArray) -> BoolArray:
    return np.asarray(st.eligible_per_node(eligible) >= shape.gpus, dtype=np.bool_)


def first_by_name(st: CardState, nodes: IntArray) -> int:
    return int(nodes[np.argmin(st.name_rank[nodes])])


def walk(order: list[int], eligible: BoolArray, gpus: int) -> list[int]:
    """The first `gpus` eligible cards in walk order (both HAMi's and Volcano's Fit loops
    take cards as they meet them and stop at N)."""
    taken = [k for k in order if eligible[k]][:gpus]
    return taken if len(taken) == gpus else []
