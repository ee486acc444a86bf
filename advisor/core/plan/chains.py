"""Chain options for the plan search: cards where evicting one or two smaller movable pods
makes room for an evicted pod that found none (the KAI-scheduler's consolidation step),
computed for the whole board at once with numpy, on nodes whose static filters (cordon,
selector and affinity, taints) admit the pod."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations

import numpy as np

from advisor.core.plan.board import FODDER, NO_POD, Board, Outcome
from advisor.core.profiles.base import mode_conflict
from advisor.core.state import BoolArray, IntArray, Shape

PAIRS = tuple(combinations(range(FODDER), 2))
MAX_CHAIN_OPTIONS = 256  # per board and shape; a simulation rules out only a few of them

ChainOption = tuple[int, int, int, tuple[int, ...]]  # card, memory moved, core moved, pods


def chain_options(b: Board, shape: Shape, limit: int) -> list[ChainOption]:
    """Cards where evicting one or two smaller movable pods (below `limit`) makes room for
    `shape`, best first: fewer evictions, a room no Pending pod takes first (safe), less
    memory moved, the tightest fit."""
    st, sizes, cores, pods = b.state, b.fodder_size, b.fodder_core, b.fodder_pod
    need = st.card_need(shape)
    deficit = need - st.free_memory
    core_short = (
        shape.card_core - st.free_core if shape.card_core > 0 else np.full_like(deficit, -1)
    )
    usable = (pods != NO_POD) & (sizes < need[:, None]) & (sizes < limit)
    base = st.counted & (deficit > 0)
    base &= ~st.profile.mode_conflicts(st.mode, shape.mode)
    # Only nodes the real scheduler would let the pod on (static filters: they never
    # change; cpu, memory and pod slots are checked per simulation, `Chains.card`).
    base &= st.static_ok(shape.constraints)[st.node_of]
    rows: list[IntArray] = []
    moved: list[IntArray] = []
    core_moved: list[IntArray] = []
    picks: list[tuple[IntArray, IntArray | None]] = []
    counts: list[IntArray] = []
    # one eviction: per card the smallest pod that is enough (columns sorted ascending)
    ok1 = usable & base[:, None] & (sizes >= deficit[:, None]) & (cores >= core_short[:, None])
    hit = np.flatnonzero(ok1.any(axis=1))
    if hit.size:
        column = np.argmax(ok1[hit], axis=1)
        rows.append(hit)
        moved.append(sizes[hit, column])
        core_moved.append(cores[hit, column])
        picks.append((pods[hit, column], None))
        counts.append(np.ones(hit.size, dtype=np.int64))
    single = np.zeros(len(deficit), dtype=np.bool_)
    single[hit] = True
    for i, j in PAIRS:
        total = sizes[:, i] + sizes[:, j]
        core = cores[:, i] + cores[:, j]
        ok = usable[:, i] & usable[:, j] & base & ~single & (total >= deficit)
        ok &= core >= core_short
        hit = np.flatnonzero(ok)
        if hit.size:
            rows.append(hit)
            moved.append(total[hit])
            core_moved.append(core[hit])
            picks.append((pods[hit, i], pods[hit, j]))
            counts.append(np.full(hit.size, 2, dtype=np.int64))
    options: list[tuple[int, int, int, tuple[int, ...]]] = []
    if rows:
        card = np.concatenate(rows)
        mem = np.concatenate(moved)
        count = np.concatenate(counts)
        room = st.free_memory[card] + mem
        unsafe = room >= limit
        order = np.lexsort((card, room - need[card], mem, unsafe, count))
        first = np.concatenate([a for a, _ in picks])
        second = np.concatenate(
            [b_ if b_ is not None else np.full(a.size, NO_POD) for a, b_ in picks]
        )
        core_all = np.concatenate(core_moved)
        for o in order[:MAX_CHAIN_OPTIONS].tolist():
            chosen = (int(first[o]),) if second[o] == NO_POD else (int(first[o]), int(second[o]))
            options.append((int(card[o]), int(mem[o]), int(core_all[o]), chosen))
    return options


class Chains:
    """Chain steps for one planning board: the options cached per board state and shape,
    each checked against the simulated state it is used in."""

    def __init__(self, board: Board) -> None:
        self.board = board
        self._options: dict[tuple[int, Shape, int], list[ChainOption]] = {}

    def extra_evictions(
        self,
        outcome: Outcome,
        homeless: Sequence[int],
        evict: Sequence[int],
        target_cards: Sequence[int],
    ) -> list[int] | None:
        """For each homeless evicted pod, one card elsewhere where evicting one or two
        smaller pods makes room for it; None when one has none. Cards the plan already
        frees are tried last: on one of them a swap can make room (CCE's example: the
        evicted 12 GiB pod takes the card the rescued pod shares with an 8 GiB pod, which
        moves to the room the 12 GiB pod left)."""
        b, st = self.board, outcome.state
        elsewhere = np.zeros(len(st.capacity), dtype=np.bool_)
        elsewhere[list(target_cards)] = True
        for pod in evict:
            elsewhere[b.where[pod] or []] = True
        chosen = np.zeros(len(st.capacity), dtype=np.bool_)
        limit = b.movable_limit()
        extra: list[int] = []
        for pod in sorted(homeless, key=lambda p: (-b.card_mib[p], p)):
            shape = b.shape_of(pod)
            if shape.gpus != 1:
                return None
            pick = self.card(outcome, shape, elsewhere | chosen, limit)
            if pick is None:
                taken = {*evict, *extra}
                pick = self.card(outcome, shape, chosen, limit, taken)
            if pick is None:
                return None
            card, pods = pick
            chosen[card] = True
            extra.extend(pods)
        return extra

    def card(
        self,
        outcome: Outcome,
        shape: Shape,
        excluded: BoolArray,
        limit: int,
        taken: set[int] | frozenset[int] = frozenset(),
    ) -> tuple[int, list[int]] | None:
        """The best chain option of the board that still holds in the simulated state: the
        card has room once its pods go (none of them `taken` already), and its node then
        passes every non-GPU filter (`chain_options` kept only nodes the static filters
        admit)."""
        st = outcome.state
        for card, moved, core, pods in self.options(shape, limit):
            count = len(pods)
            if (
                excluded[card]
                or not taken.isdisjoint(pods)
                or st.free_memory[card] + moved < self.board.need_on(shape, card)
                or st.vgpus[card] - count + 1 > st.slots[card]
                or mode_conflict(st.profile, int(st.mode[card]), shape.mode)
            ):
                continue
            if shape.card_core > 0 and st.free_core[card] + core < shape.card_core:
                continue
            if not st.resources_fit(int(st.node_of[card]), shape, self.board.demand(pods)):
                continue
            return card, list(pods)
        return None

    def options(self, shape: Shape, limit: int) -> list[ChainOption]:
        """`chain_options`, computed once per board state and shape."""
        key = (self.board.epoch, shape, limit)
        cached = self._options.get(key)
        if cached is not None:
            return cached
        if len(self._options) > 64:
            self._options.clear()
        options = chain_options(self.board, shape, limit)
        self._options[key] = options
        return options
