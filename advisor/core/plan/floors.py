"""Floors under the greedy's estimates, so that targets are listed only when they may win.

Listing a target means working out its victims (`plan.victims`), and a full listing of a
large cluster costs more than the search's whole work bound: at 20,000 nodes about 316,000
units against 200,000. But the greedy takes targets cheapest estimate first, and most are
never taken. So a full listing puts in the heap, in place of targets, a *listing*: a card's
single-card targets, or one node's targets for one multi-card shape, keyed by a floor no
estimate of its targets is below (numpy over every card at once). Only when a listing comes
to the top of the heap are its targets worked out and estimated: every target cheaper than
the listings left is in the heap by then, so targets come out in the order of their
estimates, as from a full listing.

The floor of an estimate (`Search.estimate`: victims' cost per GPU of the shape, then their
count): a target has at least one victim, every victim lies on its node's cards and costs
at least the cheapest movable pod there; an N-card target frees N cards, a card that
already has the shape's memory free may need no victim, and one victim on M cards frees at
most M. A batch workload's pods cost once (`plan_cost`), so where gangs run only one
victim's cost is counted.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple

import numpy as np

from advisor.core.plan.search import PlanKey, Search
from advisor.core.profiles.base import BoolArray, FloatArray
from advisor.core.state import IntArray, Shape

# Below every estimate it stands for, whatever rounding the cost's sum went through
# (`plan_cost` rounds to 6 decimals).
COST_SLACK = 1e-6
RATIO_SLACK = 1e-9


class Listing(NamedTuple):  # a named tuple: a full listing makes tens of thousands
    """Targets not yet worked out: card `card`'s single-card targets (`level` None), or
    node `node`'s targets for the multi-card shape `level`."""

    node: int
    card: int  # -1 for a node's listing
    level: Shape | None
    level_id: int = -1  # the level's id in the search (`Search.level_ids`)

    @property
    def key(self) -> tuple[str, int, int, int]:
        """Its name in the greedy's `latest`, apart from every target's (hashing a Shape
        costs more than a listing's whole entry)."""
        return ("listing", self.node, self.card, self.level_id)


class CardFloors:
    """Per card, bounds on what evictions could do there: at most `room` MiB free, no pod
    cheaper than `cheapest` to move, none on more than `widest` cards. Read over the pods
    a plan may evict at all (`Board.movable` allows no more), so kept per card while its
    stamp stays the same: listings follow many commits, and most cards are as they were."""

    def __init__(self, search: Search) -> None:
        self.search = search
        n = len(search.board.state.capacity)
        self.seen: list[int | None] = [None] * n
        self.room: IntArray = np.zeros(n, dtype=np.int64)
        self.cheapest: FloatArray = np.full(n, np.inf)
        self.widest: IntArray = np.zeros(n, dtype=np.int64)

    def update(self) -> int:
        """Bring every card's bounds up to date; returns how many were worked out."""
        b = self.search.board
        worked = 0
        for k, stamp in enumerate(b.stamps):
            if self.seen[k] != stamp:
                self.seen[k] = stamp
                self._work_out(k)
                worked += 1
        return worked

    def _work_out(self, k: int) -> None:
        b = self.search.board
        if not b.state.healthy[k]:
            self.room[k], self.cheapest[k], self.widest[k] = -1, np.inf, 0
            return
        pods = [p for p in b.on_card[k] if b.evictable[p]]
        held = sum(b.need_on(b.shape_of(p), k) for p in pods)
        self.room[k] = int(b.state.free_memory[k]) + held
        self.cheapest[k] = min((b.costs[p].cost for p in pods), default=np.inf)
        self.widest[k] = max((b.shape_of(p).gpus for p in pods), default=0)


def listings(
    search: Search,
    levels: Sequence[Shape],
    floors: CardFloors,
    nodes: BoolArray | None = None,
    card_nodes: BoolArray | None = None,
) -> Iterator[tuple[PlanKey, Listing]]:
    """The listings that may hold a target, with their floors: every node's (else those
    `nodes` marks) and every card's (else those on the nodes `card_nodes` marks); none
    where no target can be (no pod that may move, too little room, a node too small or
    refused by its static filters, more victims needed than a plan may evict)."""
    # a card's bounds worked out cost about what one card's victims do
    search.board.card_checks += floors.update()
    room, cheapest = floors.room, floors.cheapest
    yield from _card_listings(search, levels, room, cheapest, card_nodes)
    yield from _node_listings(search, levels, room, cheapest, floors.widest, nodes)


def _card_listings(
    search: Search,
    levels: Sequence[Shape],
    room: IntArray,
    cheapest: FloatArray,
    among: BoolArray | None,
) -> Iterator[tuple[PlanKey, Listing]]:
    st = search.board.state
    best = np.zeros(len(room))  # per card, the most GPUs a single-card target of it may rescue
    for level in levels:
        if level.gpus == 1:
            fits = room >= need_all(search, level)
            best = np.where(fits, np.maximum(best, _value(search, level)), best)
    hopeful = (best > 0) & np.isfinite(cheapest)
    if among is not None:
        hopeful &= among[st.node_of]
    cards = np.flatnonzero(hopeful)
    ratios = _ratios(search, cheapest[cards], best[cards])
    for k, node, ratio in zip(
        cards.tolist(), st.node_of[cards].tolist(), ratios.tolist(), strict=True
    ):
        yield (ratio, 1, 0, 0, (node, (), 0, 0, 0, 0, 0, 0, k)), Listing(node, k, None)


def _node_listings(
    search: Search,
    levels: Sequence[Shape],
    room: IntArray,
    cheapest: FloatArray,
    widest: IntArray,
    among: BoolArray | None,
) -> Iterator[tuple[PlanKey, Listing]]:
    b, st = search.board, search.board.state
    starts = st.first_card[st.card_count > 0]
    carded = st.card_count > 0
    node_cheapest = np.full(len(st.node_names), np.inf)
    node_cheapest[carded] = np.minimum.reduceat(cheapest, starts)
    node_widest = np.ones(len(st.node_names), dtype=np.int64)
    node_widest[carded] = np.maximum(1, np.maximum.reduceat(widest, starts))
    most = search.limits.max_evictions
    for order, level in enumerate(levels):
        if level.gpus == 1:
            continue
        need = need_all(search, level)
        hopeful = room >= need
        ready = hopeful & (st.free_memory >= need)  # may need no victim
        count_hopeful = _per_node(st.first_card, st.card_count, hopeful)
        count_ready = _per_node(st.first_card, st.card_count, ready)
        fewest = np.maximum(1, -((count_ready - level.gpus) // node_widest))  # ceil
        ok = (
            (st.healthy_count >= level.gpus)
            & st.static_ok(level.constraints)
            & (count_hopeful >= level.gpus)
            & np.isfinite(node_cheapest)
            & (fewest <= most)
        )
        if among is not None:
            ok &= among
        nodes = np.flatnonzero(ok)
        counts = fewest[nodes]
        paid = np.ones_like(counts) if b.members else counts  # a gang's victims cost as one
        ratios = _ratios(search, paid * node_cheapest[nodes], _value(search, level))
        level_id = search.level_ids.get(level, 0)
        for n, count, ratio in zip(nodes.tolist(), counts.tolist(), ratios.tolist(), strict=True):
            key = (ratio, count, 0, 0, (n, (), 0, 0, 0, 0, 0, 0, order))
            yield key, Listing(n, -1, level, level_id)


def need_all(search: Search, level: Shape) -> IntArray:
    """`Board.need_on` for every card."""
    st = search.board.state
    if level.card_memory_mib > 0 and level.memory_percent == 0:
        return np.full(len(st.capacity), level.card_memory_mib, dtype=np.int64)
    return st.card_need(level)


def _per_node(first: IntArray, count: IntArray, marked: np.ndarray) -> IntArray:
    """Per node, how many of its cards (side by side from `first`) are marked."""
    ends = np.concatenate(([0], np.cumsum(marked, dtype=np.int64)))
    return np.asarray(ends[first + count] - ends[first], dtype=np.int64)


def _value(search: Search, level: Shape) -> float:
    """GPUs a target of `level` rescues, as `Search.estimate` counts them."""
    return level.gpus * search.board.nominal_mib(level) / search.reference_mib


def _ratios(search: Search, cost: FloatArray, value: FloatArray | float) -> FloatArray:
    """Floors of `Search.estimate`'s first figure: cost per unit per GPU, a little below."""
    value = np.asarray(value, dtype=np.float64)
    safe = np.where(value > 0, value, 1.0)
    ratio = (cost - COST_SLACK) / search.cost_unit / safe - RATIO_SLACK
    return np.asarray(np.where(value > 0, np.maximum(ratio, 0.0), 0.0), dtype=np.float64)
