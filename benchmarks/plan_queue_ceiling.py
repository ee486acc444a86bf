"""`python -m benchmarks.plan_queue_ceiling [--max-evictions 3/gpu]`: the most Pending GPU
memory ANY sequence of §8 plans could rescue on the openb end states with the queue order
counted, within an eviction budget for the whole advice (`plan_limits.EvictionBudget`, as
`--max-evictions` takes it; the goal's is 3 per rescued GPU). An upper bound, proved as
follows.

**Two queue lemmas.** In a §8 simulation every Pending pod is queued before every evicted
pod of equal priority (the openb pods all have one priority; checked), and Pending pods in
the cluster's order. Say a pod `x` lands on cards `c`, and a Pending pod `p` was queued
before it. At `p`'s turn each card of `c` still had at least the memory and the vGPU slot
`x` later took: between the two turns only placements happen. So if `p` fits in that room
alone, `p` lands, somewhere, in the same plan. It does when `p` is a single-card pod
needing no more than `x` per card (any single-card pod when `x` takes whole cards), or a
multi-card pod of no more cards than a multi-card `x` (every multi-card pod takes whole
cards, checked, and `x`'s are on one node); openb pods have no node constraints, checked.
It does *not* when `p` is a multi-card pod and `x` a single-card one, however little `p`
asks per card: `p` needs its N cards on one node, and `x`'s one card is not N of them. A
pod that lands never becomes Pending again (every evicted pod must land). Hence:

1. *Evictions.* If `s` is the smallest per-card need among the single-card pods still
   Pending after the last plan, no plan ever evicted a pod needing `s` or more per card
   (multi-card pods, on whole cards, included). Only a single-card `p` is used: a
   multi-card pod left Pending says nothing of which pods moved.
2. *Rescues.* A rescued pod implies every Pending pod ahead of it in the queue that fits
   where it lands, in the sense above, rescued too.

**The bound.** For each case `s` (each single-card Pending size, and "none remain") the
pods needing `s` or more stay on their cards, every Pending single-card pod below `s` is
rescued, and the rest is an integer program (scipy's HiGHS): per card, which of its movable
pods stay, or whether it is emptied for multi-card pods; the evicted and the rescued
single-card pods are packed into the room left (maximal patterns, as in `plan_ceiling`);
the rescued set closed under lemma 2; evictions within the budget, each moved pod counted
once (a sequence that moves a pod twice pays more). A rescued k-card Pending pod takes k
whole cards of one node, each emptied: neither part of a running multi-card pod nor
holding a pod that stays; per node, the k-card pods it hosts take no more cards than it
empties. The node may have more cards than k: on a 2-card and a 4-card node, a 2-card pod
may land on half of the 4-card one (tests/benchmarks/test_plan_queue_ceiling.py has the
cluster on which an earlier form of this program, which emptied whole nodes of exactly k
cards, bounded below what a §8 plan reaches).
Destinations, plan sizes and plan order are the program's to choose, so each case is a
relaxation of every §8 sequence in it, and the best case bounds them all. In the "none
remain" case every pod may have moved; where a multi-card pod runs, which the program keeps
in place, that case is bounded instead by the full-repack optimum with every single-card
Pending pod forced in (`plan_ceiling`, unlimited evictions), when that is feasible at all.

Scope (`ValueError` otherwise): `plan_ceiling`'s, plus one priority, CCE's rules with
memory requests only (one isolation mode: pods compare by memory and a vGPU slot), and
multi-card pods on whole cards (a card's whole memory on each of their cards).
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_array

from advisor.core.model import Cluster
from advisor.core.plan.limits import EvictionBudget
from benchmarks.openb_states import NODES_CSV, end_state, openb_dir
from benchmarks.plan_ceiling import (
    full_repack_optimum,
    maximal_patterns,
    one_card_memory,
    scoped_pods,
)

GOAL_BUDGET = EvictionBudget(3.0, "gpu")
MAX_KEPT_SUBSETS = 4096  # per card class; the openb cards hold at most a handful of pods
TIME_LIMIT_S = 120.0  # per case; HiGHS's status says when it stopped short of optimal


@dataclass(frozen=True, slots=True)
class CaseBound:
    case: str  # "s < 0.59 GPU rescued", or "every single-card pod rescued"
    rescued_mib: int | None  # None: no sequence of plans ends in this case
    status: str


@dataclass(frozen=True, slots=True)
class QueueCeiling:
    pending_mib: int
    cases: tuple[CaseBound, ...]

    @property
    def rescued_mib(self) -> int:
        return max((c.rescued_mib or 0 for c in self.cases), default=0)

    @property
    def share(self) -> float:
        return self.rescued_mib / self.pending_mib if self.pending_mib else 0.0

    @property
    def exact(self) -> bool:
        return all(c.status in ("optimal", "infeasible") for c in self.cases)


@dataclass(frozen=True, slots=True)
class _Cards:
    card_mib: int
    slots: int
    content: list[tuple[int, ...]]  # per card: single-card pods' memory, largest first
    multi: list[bool]  # per card: part of a running multi-card pod
    node_cards: list[list[int]]  # per node: its card ids
    pending_single: Counter[int]
    pending_multi: Counter[int]  # cards per pod -> pods
    queue: list[tuple[int, int]]  # the Pending pods in queue order: (cards, memory per card)


def queue_ceiling(
    cluster: Cluster, budget: EvictionBudget = GOAL_BUDGET, evictions_lemma: bool = True
) -> QueueCeiling:
    """The bound of the module's docstring for `cluster`; without `evictions_lemma`, the
    weaker bound of lemma 2 alone (one program, nothing kept in place), to show the gap."""
    cards = _read(cluster)
    pending_mib = sum(s * n for s, n in cards.pending_single.items()) + sum(
        k * cards.card_mib * n for k, n in cards.pending_multi.items()
    )
    if not evictions_lemma:
        alone = _case(cards, 0, budget, "rescues lemma alone", evictions_lemma=False)
        return QueueCeiling(pending_mib, (alone,))
    cases: list[CaseBound] = []
    for s in sorted(cards.pending_single):
        name = f"singles below {s / cards.card_mib:.2f} GPU rescued, {s / cards.card_mib:.2f} left"
        cases.append(_case(cards, s, budget, name))
    everyone = "every single-card Pending pod rescued"
    if not any(cards.multi):
        cases.append(_case(cards, cards.card_mib + 1, budget, everyone))
    else:  # a running multi-card pod may move in this case: the program keeps them
        forced = full_repack_optimum(cluster, rescue_all_single=True)
        everyone += " (full repack, no eviction limit)"
        rescued = None if forced.status == "infeasible" else forced.rescued_mib
        cases.append(CaseBound(everyone, rescued, forced.status))
    return QueueCeiling(pending_mib, tuple(cases))


def _read(cluster: Cluster) -> _Cards:
    card_mib = one_card_memory(cluster)
    if any(c.max_vgpus is not None or not c.healthy for n in cluster.nodes for c in n.cards):
        raise ValueError("per-card vGPU counts and unhealthy cards are out of scope")
    if len({p.priority for p in cluster.pods}) > 1:
        raise ValueError("one priority is in scope: the queue lemma compares equals")
    # The lemmas compare pods by memory and a vGPU slot alone: CCE's rules, one isolation
    # mode (no core requests), no whole-card or share requests.
    if cluster.scheduler.profile != "cce":
        raise ValueError("the cce scheduler profile is in scope")
    if any(p.request.core_percent or p.request.memory_percent for p in cluster.pods):
        raise ValueError("core or memory-share requests are out of scope")
    ids: dict[tuple[str, int], int] = {}
    node_cards: list[list[int]] = []
    for node in cluster.nodes:
        node_cards.append([])
        for k in range(len(node.cards)):
            ids[(node.name, k)] = len(ids)
            node_cards[-1].append(ids[(node.name, k)])
    content: list[list[int]] = [[] for _ in ids]
    multi = [False] * len(ids)
    pending_single: Counter[int] = Counter()
    pending_multi: Counter[int] = Counter()
    queue: list[tuple[int, int]] = []
    for pod, where in scoped_pods(cluster):
        per_card = pod.request.memory_mib // pod.request.gpus
        if pod.request.gpus > 1 and per_card != card_mib:
            # the lemmas and the program give a multi-card pod its cards whole
            raise ValueError(f"{pod.name}: only whole-card multi-card pods are in scope")
        if where is None:
            queue.append((pod.request.gpus, per_card))  # cluster order: one priority
            if pod.request.gpus == 1:
                pending_single[per_card] += 1
            else:
                pending_multi[pod.request.gpus] += 1
            continue
        for k in where.cards:
            card = ids[(where.node, k)]
            if pod.request.gpus == 1:
                content[card].append(per_card)
            else:
                multi[card] = True
    return _Cards(
        card_mib,
        cluster.max_vgpus_per_card,
        [tuple(sorted(c, reverse=True)) for c in content],
        multi,
        node_cards,
        pending_single,
        pending_multi,
        queue,
    )


def _case(
    cards: _Cards, s: int, budget: EvictionBudget, name: str, evictions_lemma: bool = True
) -> CaseBound:
    """The program for the case where `s` is the smallest single-card size left Pending
    (above a card: none left). Without `evictions_lemma` (to show what it adds) nothing is
    kept in place or forced in: `s` is ignored."""
    if not evictions_lemma:
        s = cards.card_mib + 1
        forced = 0
    else:
        forced = s
    cap, slots = cards.card_mib, cards.slots
    movable = [tuple(m for m in c if m < s) for c in cards.content]
    fixed = [tuple(m for m in c if m >= s) for c in cards.content]
    classes = Counter(
        (fixed[c], movable[c]) for c in range(len(cards.content)) if not cards.multi[c]
    )
    sizes = sorted({m for c in movable for m in c} | set(cards.pending_single), reverse=True)
    # Where a k-card Pending pod may land: k whole cards of one node, none part of a running
    # multi-card pod or holding a pod that stays. Per such node, how many cards of each class
    # it empties, z[h, t], and how many k-card pods it then hosts, w[h, k].
    multi_sizes = sorted(cards.pending_multi)
    hosts: list[Counter[tuple[tuple[int, ...], tuple[int, ...]]]] = []
    for ids in cards.node_cards:
        can = Counter((fixed[c], movable[c]) for c in ids if not cards.multi[c] and not fixed[c])
        if multi_sizes and can.total() >= multi_sizes[0]:
            hosts.append(can)
    z_cols = [(h, t) for h, can in enumerate(hosts) for t in sorted(can)]
    w_cols = [(h, k) for h, can in enumerate(hosts) for k in multi_sizes if k <= can.total()]
    # Columns: kept subsets x[t, K], emptied cards z[h, t], hosted multi-card pods w[h, k],
    # patterns y[r, P], and per Pending pod (queue order) whether it is rescued, r[q].
    keeps: list[tuple[tuple[tuple[int, ...], tuple[int, ...]], Counter[int], tuple[int, int]]] = []
    for (f, m), _ in sorted(classes.items()):
        for kept in _sub_multisets(m):
            room = cap - sum(f) - sum(kept.elements())
            left = slots - len(f) - sum(kept.values())
            keeps.append(((f, m), kept, (room, max(left, 0))))
    residuals = sorted({r for *_, r in keeps})
    patterns: list[tuple[tuple[int, int], Counter[int]]] = []
    for room, left in residuals:
        fits = [size for size in sizes if size <= room]
        if not fits or left == 0:
            continue
        patterns += [((room, left), p) for p in maximal_patterns(fits, room, left)]
    nx, nz, nw, ny = len(keeps), len(z_cols), len(w_cols), len(patterns)
    first_z, first_w, first_y = nx, nx + nz, nx + nz + nw
    first_q = first_y + ny
    width = first_q + len(cards.queue)
    entries: list[tuple[int, int, float]] = []  # (row, column, value)
    lower: list[float] = []
    upper: list[float] = []

    def constrain(cells: list[tuple[int, float]], low: float, high: float) -> None:
        row = len(lower)
        entries.extend((row, col, val) for col, val in cells)
        lower.append(low)
        upper.append(high)

    def rescue_cells(kind: tuple[int, int] | int) -> list[tuple[int, float]]:
        """-1 per Pending pod of `kind`: (1, size) a single-card pod, k a k-card one."""
        return [
            (first_q + q, -1.0)
            for q, (gpus, need) in enumerate(cards.queue)
            if (gpus, need) == kind or (gpus > 1 and gpus == kind)
        ]

    class_cols: dict[tuple[tuple[int, ...], tuple[int, ...]], list[int]] = {}
    for j, (t, _, _) in enumerate(keeps):
        class_cols.setdefault(t, []).append(j)
    for t, count in classes.items():  # every card keeps a subset or is emptied
        cells = [(j, 1.0) for j in class_cols[t]]
        cells += [(first_z + i, 1.0) for i, (_, tt) in enumerate(z_cols) if tt == t]
        constrain(cells, count, count)
    for h in range(len(hosts)):  # a node's k-card pods take no more cards than it empties
        cells = [(first_w + i, float(k)) for i, (hh, k) in enumerate(w_cols) if hh == h]
        cells += [(first_z + i, -1.0) for i, (hh, _) in enumerate(z_cols) if hh == h]
        constrain(cells, -np.inf, 0.0)
    for r in residuals:
        cells = [(j, -1.0) for j, (*_, rr) in enumerate(keeps) if rr == r]
        cells += [(first_y + i, 1.0) for i, (rr, _) in enumerate(patterns) if rr == r]
        constrain(cells, -np.inf, 0.0)
    evicted_per_keep = [Counter(m) - kept for (_, m), kept, _ in keeps]
    for size in sizes:  # every evicted and every rescued pod of a size has a slot
        cells = [(first_y + i, float(p[size])) for i, (_, p) in enumerate(patterns) if p[size]]
        cells += [(j, -float(ev[size])) for j, ev in enumerate(evicted_per_keep) if ev[size]]
        cells += [
            (first_z + i, -float(t[1].count(size)))
            for i, (_, t) in enumerate(z_cols)
            if size in t[1]
        ]
        constrain(cells + rescue_cells((1, size)), 0.0, np.inf)
    for k in multi_sizes:  # every rescued k-card pod has k emptied cards of one node
        cells = [(first_w + i, 1.0) for i, (_, kk) in enumerate(w_cols) if kk == k]
        constrain(cells + rescue_cells(k), 0.0, 0.0)
    _queue_closure(cards.queue, first_q, constrain)
    # Evictions within the budget: a count, or a rate per rescued card or GPU of memory.
    gpus = [need / cap if n == 1 else float(n) for n, need in cards.queue]
    weight = [
        g if budget.per == "gpu" else float(n) for g, (n, _) in zip(gpus, cards.queue, strict=True)
    ]
    rate = 0.0 if budget.per == "advice" else budget.amount
    cells = [(j, float(sum(ev.values()))) for j, ev in enumerate(evicted_per_keep) if ev]
    cells += [(first_z + i, float(len(t[1]))) for i, (_, t) in enumerate(z_cols) if t[1]]
    cells += [(first_q + q, -rate * w) for q, w in enumerate(weight)]
    constrain(cells, -np.inf, budget.amount if budget.per == "advice" else 0.0)
    value = np.zeros(width)
    value[first_q:] = gpus
    low = np.zeros(width)
    high = np.full(width, np.inf)
    high[first_z:first_w] = [hosts[h][t] for h, t in z_cols]
    high[first_w:first_y] = [hosts[h].total() // k for h, k in w_cols]
    high[first_q:] = 1.0
    low[first_q:] = [1.0 if n == 1 and need < forced else 0.0 for n, need in cards.queue]
    rows, cols, vals = zip(*entries, strict=True)
    matrix = coo_array((vals, (rows, cols)), shape=(len(lower), width)).tocsr()
    result = milp(
        -value,
        constraints=LinearConstraint(matrix, lower, upper),
        integrality=np.ones(width, dtype=np.int64),
        bounds=Bounds(low, high),
        options={"time_limit": TIME_LIMIT_S},
    )
    if result.status == 2:
        return CaseBound(name, None, "infeasible")
    if result.x is None:
        return CaseBound(name, None, str(result.message))
    # Not optimal (time limit): the bound is the dual bound, still an upper bound.
    bound = -result.mip_dual_bound if result.status != 0 else -result.fun
    rescued = int(np.floor(bound * cap + 1e-6))
    return CaseBound(name, rescued, "optimal" if result.status == 0 else "time limit")


def _queue_closure(
    queue: Sequence[tuple[int, int]],
    first: int,
    constrain: Callable[[list[tuple[int, float]], float, float], None],
) -> None:
    """The queue lemma for rescues: a plan that rescues Pending pod `p` also places every
    Pending pod ahead of it in the queue that fits wherever `p` landed (a single-card pod
    needing no more per card, or fitting `p`'s whole cards; a multi-card pod of no more
    cards), so a rescued `p` implies each of those rescued. Per kind of pod ahead, the last
    one stands for them all (the earlier ones of its kind are implied in turn)."""
    last: dict[tuple[int, int], int] = {}
    for q, (gpus, need) in enumerate(queue):
        for (k_gpus, k_need), ahead in last.items():
            fits = (k_gpus == 1 and (gpus > 1 or k_need <= need)) or (k_gpus > 1 and gpus >= k_gpus)
            if fits:
                constrain([(first + q, 1.0), (first + ahead, -1.0)], -np.inf, 0.0)
        last[(gpus, need)] = q


def _sub_multisets(items: Sequence[int]) -> list[Counter[int]]:
    """Every sub-multiset of `items` (what a card may keep of its movable pods)."""
    counts = Counter(items)
    sizes = sorted(counts)
    ranges = [range(counts[s] + 1) for s in sizes]
    found = []
    for combo in itertools.product(*ranges):
        found.append(Counter({s: n for s, n in zip(sizes, combo, strict=True) if n}))
        if len(found) > MAX_KEPT_SUBSETS:
            raise ValueError("a card holds too many movable pods for this program")
    return found


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.plan_queue_ceiling")
    parser.add_argument("--only", choices=("binpack", "spread"))
    parser.add_argument(
        "--max-evictions", type=EvictionBudget.parse, default=GOAL_BUDGET, help="N, N/card, N/gpu"
    )
    args = parser.parse_args(argv)
    if not (openb_dir() / NODES_CSV).is_file():
        print(f"no openb trace in {openb_dir()} (set XGPU_OPENB_DIR)", file=sys.stderr)
        return 2
    for node in [args.only] if args.only else ["binpack", "spread"]:
        ceiling = queue_ceiling(end_state(node), args.max_evictions)
        print(f"node {node}: queue-order ceiling {ceiling.share:.2%}")
        for case in ceiling.cases:
            got = "impossible" if case.rescued_mib is None else f"{case.rescued_mib} MiB"
            print(f"  {case.case}: {got} ({case.status})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
