"""Chain options for the plan search: cards where evicting one or two smaller movable pods
makes room for an evicted pod that found none (the KAI-scheduler's consolidation step),
computed for the whole board at once with numpy, on nodes whose static filters (cordon,
selector and affinity, taints) admit the pod."""

from __future__ import annotations

from itertools import combinations

import numpy as np

from advisor.core.model import Mode
from advisor.core.plan_board import FODDER, NO_POD, Board
from advisor.core.state import IntArray, Shape

PAIRS = tuple(combinations(range(FODDER), 2))
MAX_CHAIN_OPTIONS = 256  # per board and shape; a simulation rules out only a few of them

ChainOption = tuple[int, int, int, tuple[int, ...]]  # card, memory moved, core moved, pods


def chain_options(b: Board, shape: Shape, limit: int) -> list[ChainOption]:
    """Cards where evicting one or two smaller movable pods (below `limit`) makes room for
    `shape`, best first: fewer evictions, a room no Pending pod takes first (safe), less
    memory moved, the tightest fit."""
    st, sizes, cores, pods = b.state, b.fodder_size, b.fodder_core, b.fodder_pod
    size = shape.card_memory_mib
    deficit = size - st.free_memory
    core_short = (
        shape.card_core - st.free_core
        if shape.mode == int(Mode.MEMORY_CORE)
        else np.full_like(deficit, -1)
    )
    usable = (pods != NO_POD) & (sizes < size) & (sizes < limit)
    base = st.healthy & (deficit > 0) & ((st.mode == int(Mode.UNUSED)) | (st.mode == shape.mode))
    # Only nodes the real scheduler would let the pod on (static filters: they never
    # change; cpu, memory and pod slots are checked per simulation, `Search._chain_card`).
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
        order = np.lexsort((card, room - size, mem, unsafe, count))
        first = np.concatenate([a for a, _ in picks])
        second = np.concatenate(
            [b_ if b_ is not None else np.full(a.size, NO_POD) for a, b_ in picks]
        )
        core_all = np.concatenate(core_moved)
        for o in order[:MAX_CHAIN_OPTIONS].tolist():
            chosen = (int(first[o]),) if second[o] == NO_POD else (int(first[o]), int(second[o]))
            options.append((int(card[o]), int(mem[o]), int(core_all[o]), chosen))
    return options
