"""kube-scheduler's DefaultPreemption (k8s.io/kubernetes v1.35.3,
pkg/scheduler/framework/plugins/defaultpreemption/default_preemption.go and
pkg/scheduler/framework/preemption/preemption.go), for the `kube-scheduler` session (HAMi).

- PodEligibleToPreemptOthers: not with preemptionPolicy Never.
- findCandidates: only nodes whose filter status is Unschedulable: NodeResourcesFit's
  shortfalls and the extender's refusal (HAMi's Filter answers FailedNodes). NodeUnschedulable,
  NodeAffinity and TaintToleration answer UnschedulableAndUnresolvable: "Preemption is not
  helpful for scheduling"; so does NodeResourcesFit where the pod asks more cpu or memory
  than the node's whole allocatable.
- SelectVictimsOnNode: remove every pod of lower priority, re-run the in-tree filters, then
  reprieve the most important first, PDB-violating ones before the others; no pod of lower
  priority: "No preemption victims found for incoming pod"; a node that passes with every pod
  reprieved: DryRunPreemption's "expected at least one victim pod on node" error.
- pickOneNodeForPreemption: fewest PDB violations, lowest highest victim priority, smallest
  priority sum, fewest victims, latest start of the highest-priority victims (then the first
  node by name, where upstream takes the first of a map).

HAMi v2.10.0 runs as an extender with filterVerb and bindVerb only (no preemptVerb:
charts/hami/templates/scheduler/configmap.yaml) and its resources are ignoredByScheduler
(charts/hami/templates/_helpers.tpl), so the in-tree filters never see GPU: a pod short only
of GPU finds no victims, and where cpu, memory or pod slots also fail the victims are chosen
for those alone (the cards are not rechecked: `helps` says whether they then fit).

A MIG pod (docs/design.md §13: `nvidia.com/mig-<P>: N`, the device plugin's static
instances) asks an extended resource NodeResourcesFit counts (fit.go fitsRequest, v1.35.3
noderesources/fit.go:702-733): a node offering fewer than N instances of P in all (healthy,
held or free) is Unresolvable, "Preemption is not helpful for scheduling"; elsewhere the
victims are chosen as above with the node's free instances of P counted beside cpu, memory
and pod slots: a lower-priority MIG pod holding an instance of P frees it, a vGPU pod or a
MIG pod of another profile frees only its cpu, memory and slot. The nominated pod holds the
first free instances of P there for the pods after it.

Not modelled: the random offset and candidate cap of clusters over 100 nodes (every node is
dry-run), the node's pods without GPUs as victims (the advisor knows no priority of theirs),
nominated pods of other schedulers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from advisor.core.model import Cluster, Placement, Pod, budget_key, queue_order
from advisor.core.nodefilters import RESOURCE_REASONS, fit_error, lacks
from advisor.core.preemption.board import Board, MigBook, started_key
from advisor.core.preemption.verdict import Preemption
from advisor.core.state import BoolArray, Shape

# What victims free on a node: pod slots, cpu, memory, instances of the pod's MIG profile.
Freed = tuple[int, int, int, int]


NO_VICTIMS = "No preemption victims found for incoming pod"
NOT_HELPFUL = "Preemption is not helpful for scheduling"
# The offset pickOneNodeForPreemption adds to each priority before summing them.
PRIORITY_OFFSET = 2**31
GPU_BLIND = (
    "HAMi's GPU resources are ignoredByScheduler and its extender has no preempt verb, so "
    "priority never frees GPU memory, cores or slots under HAMi"
)


@dataclass(frozen=True, slots=True)
class _Mig:
    """A MIG pod's resource on the board as its PostFilter finds it: per node, its
    profile's instances by holder (None: free)."""

    profile: str
    want: int
    holders: list[Counter[str | None]]
    book: MigBook | None  # None: no MIG card, so no node offers the profile

    def free(self, node: int) -> int:
        return self.holders[node][None]

    def freed(self, victims: Sequence[Pod], node: int) -> int:
        return sum(self.holders[node][v.name] for v in victims)


def judge_kube(
    board: Board, cluster: Cluster, unplaced: Sequence[Pod], placed: Mapping[str, Placement]
) -> dict[str, Preemption]:
    """Each unplaced pod at its turn in the queue (PrioritySort: priority, then creation):
    its PostFilter runs in its own scheduling cycle, before the pods after it are placed, so
    the board holds only the cycle's placements of the pods before it, put back one by one."""
    st = board.state
    instances: dict[str, tuple[tuple[int, int], ...]] = {}  # the MIG pods the cycle placed
    for pod in cluster.pending:
        if pod.name not in placed:
            continue
        if pod.request.mig_profile:
            if board.mig is not None:
                instances[pod.name] = board.mig.held_by(pod.name)
                board.mig.release(pod, placed[pod.name])  # its cpu and memory too
        else:
            st.release(st.positions(placed[pod.name]), Shape.of_pod(pod))
    waiting = {p.name for p in unplaced}
    out: dict[str, Preemption] = {}
    for pod in queue_order(cluster.pending):
        if pod.name in instances and board.mig is not None:
            board.mig.hold(pod, placed[pod.name].node, instances[pod.name])
        elif pod.name in placed and not pod.request.mig_profile:
            board.state.apply(board.state.positions(placed[pod.name]), Shape.of_pod(pod))
        elif pod.name in waiting:
            out[pod.name] = preempt(board, pod)
    return out


def preempt(board: Board, pod: Pod) -> Preemption:
    """The verdict for one Pending pod, on the board as earlier preemptions left it."""
    if pod.preemption_policy == "Never":
        # PostFilter prefixes its status "preemption: " (default_preemption.go PostFilter)
        return Preemption("not-eligible", "preemption: not eligible due to preemptionPolicy=Never.")
    st = board.state
    shape = Shape.of_pod(pod)
    mig = None
    if pod.request.mig_profile:
        profile = pod.request.mig_profile
        mig = _Mig(profile, pod.request.gpus, board.mig_holders(profile), board.mig)
        static_ok = st.static_ok(shape.constraints)
        free = np.array([mig.free(i) for i in range(len(st.node_names))], dtype=np.int64)
        # NodeResourcesFit counts the instances beside cpu, memory and pod slots
        short: BoolArray = np.asarray(
            st.resource_shortfalls(shape).any(axis=1) | (free < mig.want), dtype=np.bool_
        )
        nodes = np.flatnonzero(static_ok & ~short)
    else:
        verdicts = st.verdicts(shape)
        static_ok, nodes = verdicts.static_ok, verdicts.nodes
        short = np.asarray(verdicts.short.any(axis=1), dtype=np.bool_)
    if nodes.size:
        fits = st.node_names[int(nodes[0])]
        return Preemption(
            "no-victims",
            f"it fits on {fits} once the victims of earlier preemptions are gone, evicting "
            "nobody for itself",
        )
    potential = [
        int(i) for i in np.flatnonzero(static_ok) if not _beyond_node(board, mig, shape, int(i))
    ]
    gpu_only = [] if mig else [i for i in potential if not short[i]]
    histogram: dict[str, int] = {}
    if len(potential) < len(st.node_names):
        histogram[NOT_HELPFUL] = len(st.node_names) - len(potential)
    candidates: list[tuple[int, list[Pod], int]] = []
    passing: list[int] = []  # every pod reprieved: DryRunPreemption's error
    for i in potential:
        victims, violations, reasons = _select_victims(board, pod, shape, i, mig)
        if victims:
            candidates.append((i, victims, violations))
        elif not reasons:
            passing.append(i)
        for reason in reasons:
            histogram[reason] = histogram.get(reason, 0) + 1
    if candidates:
        node, victims, violations = min(candidates, key=lambda c: _node_rank(board, *c))
        helps = board.nominate(pod, node, victims)
        name = st.node_names[node]
        message = (
            f"kube-scheduler nominates {name} and evicts {len(victims)} pod"
            f"{'s' if len(victims) != 1 else ''} of lower priority"
        )
        if violations:
            message += f", {violations} against its disruption budget"
        if not helps:
            message += (
                f"; the victims were chosen for cpu, memory or pod slots alone and the pod "
                f"still does not fit its cards there ({GPU_BLIND})"
            )
        return Preemption("evicts", message, name, tuple(v.name for v in victims), helps)
    if passing:
        names = ", ".join(st.node_names[i] for i in passing[:3])
        return Preemption(
            "no-victims",
            f"kube-scheduler's in-tree filters already pass on {names}, so evicting pods "
            "of lower priority frees nothing they count (DryRunPreemption: expected at "
            f"least one victim pod on node {st.node_names[passing[0]]!r}); {GPU_BLIND}",
        )
    message = "preemption: " + fit_error(len(st.node_names), histogram.items())
    if gpu_only:
        message += f" {GPU_BLIND}."
    return Preemption("no-victims", message)


def _beyond_node(board: Board, mig: _Mig | None, shape: Shape, node: int) -> bool:
    """NodeResourcesFit's Unresolvable (fit.go fitsRequest): the pod asks more cpu, memory
    or MIG instances of its profile than the node's whole allocatable, so no eviction helps
    and the node is no candidate."""
    _, cpu, memory = (int(v) for v in board.state.allocatable[node])
    _, want_cpu, want_memory = shape.demand
    if lacks(want_cpu, cpu) or lacks(want_memory, memory):
        return True
    return mig is not None and mig.want > mig.holders[node].total()


def _fits(board: Board, mig: _Mig | None, shape: Shape, node: int, removed: Freed) -> bool:
    """The in-tree filters' resource check on `node` once pods freeing `removed` are gone."""
    if mig is not None and mig.free(node) + removed[3] < mig.want:
        return False
    return board.state.resources_fit(node, shape, removed[:3])


def _freed(board: Board, mig: _Mig | None, victims: list[Pod], node: int) -> Freed:
    slots, cpu, memory = board.freed(victims)
    return (slots, cpu, memory, 0 if mig is None else mig.freed(victims, node))


def _select_victims(
    board: Board, pod: Pod, shape: Shape, node: int, mig: _Mig | None
) -> tuple[list[Pod], int, tuple[str, ...]]:
    """SelectVictimsOnNode: (victims most important first, PDB violations, the reasons
    the node stays unschedulable where it finds none)."""
    lower = [p for p in board.residents(node) if p.priority < pod.priority]
    if not lower:
        return [], 0, (NO_VICTIMS,)
    removed = _freed(board, mig, lower, node)
    if not _fits(board, mig, shape, node, removed):
        return [], 0, _resource_reasons(board, mig, shape, node, removed)
    lower.sort(key=lambda p: _importance(board, p))
    allowed: dict[tuple[str, str], int] = {}
    violating: list[Pod] = []
    others: list[Pod] = []
    for victim in lower:  # filterPodsWithPDBViolation, most important first
        budget = budget_key(victim.namespace, victim.annotations)
        if budget is None:
            others.append(victim)
            continue
        key, allows = budget
        allowed[key] = allowed.get(key, allows) - 1
        (violating if allowed[key] < 0 else others).append(victim)
    victims: list[Pod] = []
    violations = 0
    for victim in (*violating, *others):  # reprieve: put it back if the pod still fits
        back = _freed(board, mig, [victim], node)
        trial = (
            removed[0] - back[0], removed[1] - back[1], removed[2] - back[2], removed[3] - back[3]
        )  # fmt: skip
        if _fits(board, mig, shape, node, trial):
            removed = trial
            continue
        victims.append(victim)
        violations += victim in violating
    if violating and others:
        victims.sort(key=lambda p: _importance(board, p))
    return victims, violations, ()


def _resource_reasons(
    board: Board, mig: _Mig | None, shape: Shape, node: int, removed: Freed
) -> tuple[str, ...]:
    """NodeResourcesFit's reasons on `node` with every lower-priority pod removed: pod
    slots, cpu, memory, then the MIG resource (fitsRequest's order)."""
    st = board.state
    used = st.node_requested(node)
    found = tuple(
        reason
        for reason, want, have, gone, total in zip(
            RESOURCE_REASONS, shape.demand, used, removed[:3], st.allocatable[node], strict=True
        )
        if lacks(want, int(total) - (have - gone))
    )
    if mig is not None and mig.book is not None and mig.free(node) + removed[3] < mig.want:
        found += (f"Insufficient {mig.book.resource(node, mig.profile)}",)
    return found


def _importance(board: Board, pod: Pod) -> tuple[float, float, int]:
    """MoreImportantPod as a sort key: higher priority, then earlier start, first."""
    return (-pod.priority, started_key(pod), board.order.get(pod.name, 0))


def _node_rank(
    board: Board, node: int, victims: list[Pod], violations: int
) -> tuple[int, int, int, int, float, int]:
    """pickOneNodeForPreemption's order as a key, smallest best."""
    top = max(v.priority for v in victims)
    earliest = min(started_key(v) for v in victims if v.priority == top)
    total = sum(v.priority + PRIORITY_OFFSET for v in victims)
    rank = int(board.state.name_rank[node])
    return (violations, top, total, len(victims), -earliest, rank)
