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
from advisor.core.plan.memo import CardEntry, Victims
from advisor.core.state import Shape

MAX_OPTIONAL = 10  # pods per card considered as victims (the largest movable ones)


def card_victims(b: Board, k: int, level: Shape, most: int) -> Victims | None:
    """The cheapest set of movable pods to evict from card `k` so that it is eligible for
    `level` (then the fewest, lowest priority, least memory); None when no set of at most
    `most` pods is enough. Counted as one card checked (`Board.work`), kept or not."""
    table = b.memo.victims(most).table(level, card_question)
    return _kept_victims(b, table, k, (b.stamps[k], b.movable_mask(k)), level, most)


def _kept_victims(
    b: Board,
    table: dict[int, CardEntry],
    k: int,
    stamp: tuple[int, int],
    level: Shape,
    most: int,
) -> Victims | None:
    """`card_victims`, from its memo table and the card's stamp and movable pods."""
    b.card_checks += 1
    kept = table.get(k)
    if kept is not None and kept[0] == stamp[0] and kept[1] == stamp[1]:
        return kept[2]
    found = _card_victims(b, k, level, most)
    table[k] = (stamp[0], stamp[1], found)
    return found


def card_question(level: Shape) -> tuple[int, int, int, int]:
    """What a card's victims read of a level: its memory and core per card and its mode
    (not its cards, node filters or requests), so levels alike in them share answers."""
    return (level.card_memory_mib, level.memory_percent, level.card_core, level.mode)


def node_question(level: Shape) -> tuple[int, tuple[int, int, int, int]]:
    """What a node's cheapest cards read of a level: how many, and `card_question`."""
    return (level.gpus, card_question(level))


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


def node_stamps(b: Board, n: int) -> tuple[tuple[int, int], ...]:
    """Per card of node `n`, its stamp and movable pods: what `node_cards` answers by."""
    return tuple((b.stamps[k], b.movable_mask(k)) for k in b.state.node_positions(n))


def node_cards(
    b: Board, n: int, level: Shape, most: int, cards: tuple[tuple[int, int], ...]
) -> Victims | None:
    """The `level.gpus` cards of node `n` cheapest to free for `level` (the node's
    health and static filters passed), None when too few can be or none needs freeing;
    `cards`: the node's `node_stamps`. Counted as every card of the node checked
    (`Board.work`), kept or not."""
    positions = b.state.node_positions(n)
    table = b.memo.nodes(most).table(level, node_question)
    kept = table.get(n)
    if kept is not None and kept[0] == cards:
        b.card_checks += kept[1]
        return kept[2]
    before = b.card_checks
    found = _node_cards(b, positions, level, most, cards)
    table[n] = (cards, b.card_checks - before, found)
    return found


def _node_cards(
    b: Board, positions: range, level: Shape, most: int, cards: tuple[tuple[int, int], ...]
) -> Victims | None:
    """`node_cards`, worked out."""
    hopeful = [k for k in positions if room_on(b, k) >= b.need_on(level, k)]
    # Checks that would find no victims (`room_on`), or too few cards, are skipped but
    # counted: the work (and so where the budget ends) is that of checking every card.
    if len(hopeful) < level.gpus:
        b.card_checks += len(positions)
        return None
    b.card_checks += len(positions) - len(hopeful)
    table = b.memo.victims(most).table(level, card_question)
    costs = []
    for k in hopeful:
        found = _kept_victims(b, table, k, cards[k - positions.start], level, most)
        if found is not None:
            mem = sum(b.need_on(b.shape_of(p), k) for p in found)
            price = sum(b.costs[p].cost for p in found)
            costs.append((price, len(found), mem, k))
    if len(costs) < level.gpus:
        return None
    chosen = sorted(costs)[: level.gpus]
    if all(count == 0 for _, count, _, _ in chosen):
        return None
    return tuple(sorted(k for *_, k in chosen))


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
