"""The planner's last look on a small board (docs/design.md §8): every set of up to a few
evictions, simulated.

The greedy builds plans from targets: a card to free for a Pending shape, its fewest
victims, chains for evicted pods with no room. Some plans are not of that form: two
higher-priority pods on different cards, evicted together, come back first and land in a
better arrangement, leaving room no single card's victims would make. When the greedy has
nothing left, a board with few movable pods (every pair within `MAX_SIMULATIONS`) is
searched whole: every set of one, two, ... evictions, in each re-queue order the queue
tells apart (within a priority, the order they are evicted in), smallest sets first, while
the simulations stay within `MAX_SIMULATIONS`. So on such a board, whenever a plan within
the caps exists, one is found. The best of the smallest size is taken by the search's own
key; the greedy then commits it as any other (the literal simulation must agree) and goes
on.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from math import perm

from advisor.core.plan.board import Board
from advisor.core.plan.search import Proposal, Search, Target

MAX_SIMULATIONS = 2048  # per look: up to 45 movable pods in pairs, 12 in threes
MAX_SIZE = 4  # the default per-plan cap; no look goes further


def smallest_plan(
    board: Board,
    search: Search,
    allows: Callable[[Proposal], bool],
    stop: Callable[[], str | None],
) -> Proposal | None:
    """The best plan of the fewest evictions within the caps (`allows`: the advice's
    budget; the per-plan cap is `search.limits`), or None when there is none that small
    or the board is too large to search whole."""
    b = board
    # a gang's members only where it has surplus: whole gangs are the greedy's targets
    movable = [
        p for p in range(len(b.pods)) if b.where[p] is not None and b.evictable[p] and b.loose(p)
    ]
    largest = min(search.limits.max_evictions, MAX_SIZE)
    if perm(len(movable), 1) + perm(len(movable), min(2, largest)) > MAX_SIMULATIONS:
        return None  # not even every pair: the greedy's targets cover single evictions
    spent = 0
    for size in range(1, largest + 1):
        spent += perm(len(movable), size)
        if spent > MAX_SIMULATIONS:
            return None
        best: Proposal | None = None
        for evict in itertools.permutations(movable, size):
            # The queue sorts evicted pods by priority: one order per priority arrangement.
            if any(b.priority[x] < b.priority[y] for x, y in itertools.pairwise(evict)):
                continue
            if b.splits_gang(evict):
                continue  # a gang's surplus, or all of it (`Board.whole_gangs`)
            found = _try(b, search, evict)
            if found is not None and allows(found) and (best is None or found.key < best.key):
                best = found
            if stop() is not None:
                return best
        if best is not None:
            return best
    return None


def _try(b: Board, search: Search, evict: tuple[int, ...]) -> Proposal | None:
    search.evaluations += 1
    outcome = b.simulate(evict, quick=True)
    if outcome.stranded or outcome.intruders or not outcome.rescued:
        return None
    if not b.within_budgets(evict):
        return None
    first = outcome.rescued[0]
    cards = outcome.landed[first]
    level = b.shape_of(first)
    target = Target(b.node_of_card(cards[0]), tuple(cards), level, search.level_ids.get(level, 0))
    gpus = sum(search.gpus(p) for p in outcome.rescued)
    key = search.key(target, evict, gpus, outcome)
    return Proposal(target, evict, outcome.landed, tuple(outcome.rescued), key)
