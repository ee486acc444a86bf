"""A card's victims: the cheapest movable pods to evict from one card so that it takes a
Pending shape, and the most memory evictions could free on it. Both read only the card
(its pods, free memory, core and vGPU slots) and which of its pods may move (the Pending
shapes decide), so their answers are kept per card in the board's memo (`plan.memo`) until
one of those changes.
"""

from __future__ import annotations

from itertools import combinations

from advisor.core.model import Mode
from advisor.core.plan.board import Board
from advisor.core.state import Shape

MAX_OPTIONAL = 10  # pods per card considered as victims (the largest movable ones)
Victims = tuple[int, ...]


def card_victims(b: Board, k: int, level: Shape, most: int) -> Victims | None:
    """The cheapest set of movable pods to evict from card `k` so that it is eligible for
    `level` (then the fewest, lowest priority, least memory); None when no set of at most
    `most` pods is enough. Counted as one card checked (`Board.work`), kept or not."""
    b.card_checks += 1
    table = b.memo.victims(most).table(level)
    stamp, movable = b.stamps[k], b.movable_mask(k)
    kept = table.get(k)
    if kept is not None and kept[0] == stamp and kept[1] == movable:
        return kept[2]
    found = _card_victims(b, k, level, most)
    table[k] = (stamp, movable, found)
    return found


def room_on(b: Board, k: int) -> int:
    """The most memory evictions could free on card `k` (its free memory and what every
    movable pod on it holds), -1 when it is unhealthy: where a level needs more,
    `card_victims` finds none for it."""
    table = b.memo.room.table(None)
    stamp, movable = b.stamps[k], b.movable_mask(k)
    kept = table.get(k)
    if kept is not None and kept[0] == stamp and kept[1] == movable:
        return kept[2]
    if not b.state.healthy[k]:
        room = -1
    else:
        held = sum(b.need_on(b.shape_of(p), k) for p in b.on_card[k] if b.movable(p))
        room = int(b.state.free_memory[k]) + held
    table[k] = (stamp, movable, room)
    return room


def _card_victims(b: Board, k: int, level: Shape, most: int) -> Victims | None:
    """`card_victims`, worked out."""
    st = b.state
    if not st.healthy[k]:
        return None
    forced: list[int] = []
    optional: list[int] = []
    for pod in b.on_card[k]:
        shape = b.shape_of(pod)
        movable = b.movable(pod)
        if b.conflicts(shape, level):  # a CCE card hosts one mode: the other must go
            if not movable:
                return None
            forced.append(pod)
        elif movable:
            optional.append(pod)
    held = {p: b.need_on(b.shape_of(p), k) for p in forced + optional}
    forced_mem = sum(held[p] for p in forced)
    forced_core = sum(b.shape_of(p).card_core for p in forced)
    need_mem = b.need_on(level, k) - int(st.free_memory[k]) - forced_mem
    need_core = (
        level.card_core - int(st.free_core[k]) - forced_core
        if level.mode == int(Mode.MEMORY_CORE)
        else 0
    )
    need_slots = int(st.vgpus[k]) - len(forced) - (int(st.slots[k]) - 1)
    if need_mem <= 0 and need_core <= 0 and need_slots <= 0:
        return tuple(forced)
    optional.sort(key=lambda p: (-held[p], p))
    optional = optional[:MAX_OPTIONAL]
    if sum(held[p] for p in optional) < need_mem:
        return None
    # Fewest pods first; where pods cost differently (`Board.uniform_costs`), the
    # cheapest set of any size up to the limit: larger sets are tried while their
    # cheapest members alone could still cost less.
    cheapest = sorted(b.costs[p].cost for p in optional)
    best: tuple[tuple[float, int, int, int, Victims], Victims] | None = None
    for count in range(max(1, need_slots), most + 1):
        if best is not None and (b.uniform_costs or best[0][0] <= sum(cheapest[:count])):
            break
        for combo in combinations(optional, count):
            mem = sum(held[p] for p in combo)
            if mem < need_mem:
                continue
            if need_core > 0 and sum(b.shape_of(p).card_core for p in combo) < need_core:
                continue
            cost = sum(b.costs[p].cost for p in combo)
            rank = (cost, count, max(b.priority[p] for p in combo), mem, combo)
            if best is None or rank < best[0]:
                best = (rank, combo)
    return None if best is None else tuple(forced) + best[1]
