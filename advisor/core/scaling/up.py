"""Scale-up for what stays unresolved.

Scale-up works like the cluster-autoscaler's estimator: the unresolved Pending pods are
bin-packed with the scheduler core onto hypothetical empty nodes of each existing node
template (cards, allocatable, labels, taints: `scaling.templates`), the template needing the
fewest nodes wins, and the answer is then checked by scheduling the whole queue on the
cluster plus those nodes (nodes are added until every pod lands). A pod that no template
admits (a selector, affinity or taint excludes it, or the allocatable is too small) gets no
advice but the autoscaler's reason (`ScaleUpAdvice.not_triggered`); a pod short only of
cpu or memory gets what frees it (`scaling.relief`) instead of a GPU node.

Under Volcano's session a gang starts whole or not at all (docs/design.md §10.4): a gang
that could not reach min_member whatever nodes were added
(a member its queue or quota holds, an invalid one, one no template admits) gets no nodes:
its members are not triggered, with that reason.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import overload

from advisor.core.diagnosis import Diagnosis
from advisor.core.gang import judge
from advisor.core.mig_cycle import is_mig
from advisor.core.model import Cluster, Placement, Pod, gangs_of, queue_order
from advisor.core.profiles import profile_of
from advisor.core.profiles.base import ScaleUpActor
from advisor.core.remedy import Remedy, remedies
from advisor.core.scaling.actor import CCE_ADDON, CCE_NOT_TRIGGERED, pool_of, resize_text
from advisor.core.scaling.check import QueueCheck, put_back, take_out
from advisor.core.scaling.mig_up import estimate_with_mig, hosts, not_offered, without_mig
from advisor.core.scaling.relief import Relief, relief
from advisor.core.scaling.templates import NodeShape, NotTriggered, TemplateCheck, node_shapes
from advisor.core.state import CardState, IntArray, Shape

NEW_NODE_PREFIX = "scale-up"


@dataclass(frozen=True, slots=True)
class ScaleUp:
    shape: NodeShape
    nodes: int
    pods: tuple[str, ...]  # queue order
    new_shape: bool = False  # no existing node shape can host these pods
    verified: bool = True  # the whole queue, scheduled with these nodes added, lands them all
    packed_estimate: int = 0  # the estimator's count, before the check
    # Who adds the nodes (docs/design.md §8): on CCE a person, who resizes `pool` (the
    # shape's node pool, where its nodes name one) as `resize` says.
    actor: ScaleUpActor = "cluster-autoscaler"
    pool: str | None = None
    resize: str | None = None


@dataclass(frozen=True, slots=True)
class ScaleUpAdvice(Sequence[ScaleUp]):
    """The scale-up entries (the advice itself: iterating, indexing and `len` read them)
    and the pods no node group template admits, each with the autoscaler's reason."""

    steps: tuple[ScaleUp, ...]
    not_triggered: tuple[NotTriggered, ...] = ()
    relief: tuple[Relief, ...] = ()  # node-resources pods: what frees their cpu or memory
    note: str | None = None  # on CCE: why each step is a resize a person runs

    @overload
    def __getitem__(self, index: int) -> ScaleUp: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[ScaleUp, ...]: ...
    def __getitem__(self, index: int | slice) -> ScaleUp | tuple[ScaleUp, ...]:
        return self.steps[index]

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self) -> Iterator[ScaleUp]:
        return iter(self.steps)


def scale_up(
    cluster: Cluster,
    rescued: Collection[str] = frozenset(),
    diagnosis: Diagnosis | None = None,
    max_rounds: int = 20,
) -> tuple[ScaleUp, ...]:
    """Nodes to add for the Pending pods that stay unresolved (`scale_up_advice` also says
    which pods no node would help)."""
    return scale_up_advice(cluster, rescued, diagnosis, max_rounds).steps


def scale_up_advice(
    cluster: Cluster,
    rescued: Collection[str] = frozenset(),
    diagnosis: Diagnosis | None = None,
    max_rounds: int = 20,
    held: Collection[str] = frozenset(),
    decided: Sequence[Remedy] | None = None,
) -> ScaleUpAdvice:
    """Nodes to add for the Pending pods that stay unresolved, and the pods no template admits.

    The pods are those `advisor.core.remedy.remedy` proposes a scale-up for, the function
    that also decides the advice their cause is worded with: unresolved (node-resources,
    fragmentation, capacity or unsatisfiable, never invalid), not in `rescued` (pods a
    rebalancing plan lets run; they are also left out of the check, since their plan places
    them), and, advised to consolidate, not in `held` (a plan held back by a cap would
    rescue them). A pod no template admits (the node filters
    but the GPU one, on an empty node of it) is not triggered. Pods some template admits and
    can host are covered greedily: the template hosting the most of them, then needing the
    fewest nodes, then the least memory in all. The others get a new shape per first
    template admitting them: its copy with the fewest and smallest cards hosting them all.
    `diagnosis` saves a run when the caller has one of `cluster`, and `decided` its pods'
    remedies when it has them (`scaling.advice.pod_remedies`: a `mig-geometry` pod whose
    re-partition is verified is left out of the check as a rescued one, since the
    re-partition places it); `max_rounds` bounds the check's node additions.
    """
    if diagnosis is None:
        diagnosis = judge(cluster, node_detail_limit=0)
    if decided is None:
        decided = remedies(diagnosis, rescued, held)
    by_pod = {r.pod: r for r in decided}
    rescued = {*rescued, *(r.pod for r in decided if r.repartition is not None)}
    short = [r.pod for r in decided if r.advice == "node-resources"]
    freed = relief(cluster, diagnosis, short)
    asked = [d.pod for d in diagnosis.pods if by_pod[d.pod.name].scale_up]
    targets = _with_gang_mates(cluster, asked, diagnosis, rescued)
    if not targets or cluster.max_vgpus_per_card < 1:  # with no vGPU allowed, no node helps
        return ScaleUpAdvice((), relief=freed)
    shapes = node_shapes(cluster)
    check = TemplateCheck(shapes, cluster)
    admitting = {p.name: check.admitting(Shape.of_pod(p)) for p in targets}
    refused = tuple(
        NotTriggered(p.name, check.not_triggered(Shape.of_pod(p)))
        for p in targets
        if shapes and not admitting[p.name]
    )
    remaining = [p for p in targets if admitting[p.name] or not shapes]
    stuck = _gangs_nodes_cannot_start(
        cluster, diagnosis, remaining, {r.pod for r in refused}, rescued
    )
    refused += tuple(NotTriggered(p.name, stuck[p.name]) for p in remaining if p.name in stuck)
    remaining = [p for p in remaining if p.name not in stuck]
    plan: list[ScaleUp] = []
    while True:
        options = []
        for shape in shapes:
            group = [p for p in remaining if hosts(shape, p) and shape in admitting[p.name]]
            if group:
                n = _estimate(shape, group, cluster)
                cost = n * shape.cards * shape.memory_mib
                options.append(((-len(group), n, cost, shape.sort_key()), shape, n, group))
        if not options:
            break
        _, shape, n, group = min(options, key=lambda o: o[0])
        plan.append(ScaleUp(shape, n, tuple(p.name for p in group), packed_estimate=n))
        taken = {p.name for p in group}
        remaining = [p for p in remaining if p.name not in taken]
    # a MIG layout is never invented: a MIG pod no shape offers enough of its profile to
    # gets the autoscaler's reason (`scaling.mig_up`)
    refused += tuple(
        NotTriggered(p.name, not_offered(p, admitting[p.name])) for p in remaining if is_mig(p)
    )
    remaining = [p for p in remaining if not is_mig(p)]
    for base, group in _by_first_template(remaining, admitting).items():
        requests = [Shape.of_pod(p) for p in group]
        shape = replace(
            without_mig(base),
            cards=max(s.gpus for s in requests),
            memory_mib=max(s.card_memory_mib for s in requests),
            model="",
        )
        n = estimate_nodes(shape, group, cluster)
        names = tuple(p.name for p in group)
        plan.append(ScaleUp(shape, n, names, new_shape=True, packed_estimate=n))
    return _by_whom(
        cluster, ScaleUpAdvice(_verify(cluster, rescued, plan, max_rounds), refused, freed)
    )


def _by_whom(cluster: Cluster, advice: ScaleUpAdvice) -> ScaleUpAdvice:
    """Where no autoscaler adds the nodes (CCE), each step as the resize a person runs and
    each pod not triggered with the add-on's part in it; elsewhere the advice as it is."""
    profile = profile_of(cluster.scheduler)
    if profile.scale_up_actor != "person" or not (advice.steps or advice.not_triggered):
        return advice
    steps = tuple(
        replace(
            s,
            actor="person",
            pool=None if s.new_shape else pool_of(s.shape, profile),
            resize=resize_text(s.shape, s.nodes, s.new_shape, profile),
        )
        for s in advice.steps
    )
    refused = tuple(replace(n, note=CCE_NOT_TRIGGERED) for n in advice.not_triggered)
    return replace(advice, steps=steps, not_triggered=refused, note=CCE_ADDON)


def _with_gang_mates(
    cluster: Cluster, targets: list[Pod], diagnosis: Diagnosis, rescued: Collection[str] = ()
) -> list[Pod]:
    """The targets and, under Volcano's session, the Pending mates of their gangs whose cause
    is `gang` (placed then rolled back, or never tried once a needed member failed: they need
    room beside the others) and that no plan rescues (a plan places them), in queue order."""
    mins = gangs_of(cluster, profile_of(cluster.scheduler).session.volcano)
    if not mins:
        return targets
    wanted = {p.group for p in targets if p.group in mins}
    named = {p.name for p in targets}
    return [
        d.pod
        for d in diagnosis.pods
        if d.pod.name in named
        or (d.cause == "gang" and d.pod.group in wanted and d.pod.name not in rescued)
    ]


def _gangs_nodes_cannot_start(
    cluster: Cluster,
    diagnosis: Diagnosis,
    targets: Sequence[Pod],
    refused: Collection[str],
    rescued: Collection[str] = (),
) -> dict[str, str]:
    """The targets whose gang could not start however many nodes were added, with why: fewer
    than min_member of its pods could run (running, placed or fitting now, placed by a plan
    (`rescued`), or a target some template admits); the others are held by something no node
    changes."""
    mins = gangs_of(cluster, profile_of(cluster.scheduler).session.volcano)
    if not mins:
        return {}
    hopeful = {p.name for p in targets if p.name not in refused}
    hopeful |= {d.pod.name for d in diagnosis.pods if d.cause == "schedulable"} | set(rescued)
    able: dict[str, int] = {}
    held: dict[str, list[str]] = {}
    for pod in cluster.pods:
        if pod.group not in mins:
            continue
        if pod.running or pod.name in hopeful:
            able[pod.group] = able.get(pod.group, 0) + 1
        else:
            held.setdefault(pod.group, []).append(pod.name)
    return {
        p.name: (
            f"its gang {p.group} cannot start: {able.get(p.group, 0)} of min_member "
            f"{mins[p.group]} pods could run with nodes added (no node helps "
            f"{', '.join(held.get(p.group, []))})"
        )
        for p in targets
        if p.group in mins and able.get(p.group, 0) < mins[p.group]
    }


def _by_first_template(
    pods: Sequence[Pod], admitting: dict[str, tuple[NodeShape, ...]]
) -> dict[NodeShape, list[Pod]]:
    """Pods by the first template admitting them (templates come in `sort_key` order), the
    one a new shape for them copies; with no template at all, a bare card shape."""
    groups: dict[NodeShape, list[Pod]] = {}
    for pod in pods:
        base = admitting[pod.name][0] if admitting[pod.name] else NodeShape(0, 0)
        groups.setdefault(base, []).append(pod)
    return groups


def estimate_nodes(shape: NodeShape, pods: Sequence[Pod], cluster: Cluster) -> int:
    """Empty `shape` nodes the scheduler core needs for `pods` in queue order: each pod goes
    where the policy puts it among the nodes opened so far, or on a newly opened one.

    The nodes not opened yet are there but taken out (no pod lands on them: as good as
    absent, `scaling.check`), so opening one is putting it back; room for twice as many is
    made (the pods so far bound again) when all are open."""
    opened = 0
    bound: list[tuple[Placement, Shape]] = []
    state, allocatable = _state(shape, 1, bound, cluster)
    for pod in queue_order(tuple(pods)):
        need = Shape.of_pod(pod)
        positions = state.place(need, cluster.policy.node, cluster.policy.card) if opened else None
        if positions is None:
            if opened == len(state.node_names):
                state, allocatable = _state(shape, 2 * opened, bound, cluster)
            put_back(state, opened, allocatable[opened])
            opened += 1
            positions = state.place(need, cluster.policy.node, cluster.policy.card)
            if positions is None:  # cannot happen for a shape that hosts the pod
                raise ValueError(f"{pod.name} does not fit an empty {shape} node")
        state.apply(positions, need)
        bound.append((state.placement_of(positions), need))
    return opened


def _estimate(shape: NodeShape, pods: Sequence[Pod], cluster: Cluster) -> int:
    """`estimate_nodes`, or its MIG form where MIG pods are among `pods`."""
    if any(is_mig(p) for p in pods):
        return estimate_with_mig(shape, pods, cluster)
    return estimate_nodes(shape, pods, cluster)


def _state(
    shape: NodeShape, room: int, bound: list[tuple[Placement, Shape]], cluster: Cluster
) -> tuple[CardState, IntArray]:
    """`room` empty `shape` nodes with the pods `bound` on them, those with none taken out,
    and every node's allocatable (to put one back)."""
    nodes = tuple(shape.template(_new_name(0, i)) for i in range(room))
    state = CardState(dataclasses.replace(cluster, nodes=nodes, pods=()))
    allocatable = state.allocatable.copy()
    for placement, need in bound:
        state.apply(state.positions(placement), need)
    used = {placement.node for placement, _ in bound}
    for i, node in enumerate(nodes):
        if node.name not in used:
            take_out(state, i)
    return state, allocatable


def _new_name(entry: int, i: int) -> str:
    return f"{NEW_NODE_PREFIX}-{entry}-{i:04d}"


def with_new_nodes(
    cluster: Cluster, plan: Sequence[ScaleUp], rescued: Collection[str] = ()
) -> Cluster:
    """The cluster with the plan's nodes added (named scale-up-ENTRY-NNNN) and the rescued
    pods left out: what the check schedules, and what a test can schedule independently."""
    added = tuple(
        entry.shape.template(_new_name(k, i))
        for k, entry in enumerate(plan)
        for i in range(entry.nodes)
    )
    pods = tuple(p for p in cluster.pods if p.name not in rescued)
    return dataclasses.replace(cluster, nodes=cluster.nodes + added, pods=pods)


def _trim(
    counts: list[int],
    failed: list[int],
    missing: Callable[[list[int]], dict[int, list[Pod]]],
    needed: Callable[[list[int]], list[int]] = list,
) -> list[int]:
    """Bisect every entry's count between its last failing count and its passing one, all
    entries at once (one check per step, not one per entry and step: a check schedules the
    whole queue). An entry short at its middle keeps it as its new low; where an entry left
    whole falls short, the cuts of that step all count as failing. Only counts a check
    passed are returned, each cut to what that check needed (`needed(counts)`, asked right
    after `counts` passed: `QueueCheck.needed`)."""
    low, high = list(failed), needed(counts)
    passed = list(high)
    while True:
        cut = [k for k in range(len(counts)) if low[k] and high[k] - low[k] > 1]
        if not cut:
            break
        trial = list(high)
        for k in cut:
            trial[k] = (low[k] + high[k]) // 2
        short = missing(trial)
        if not short:
            passed = needed(trial)
            high = [min(h, p) for h, p in zip(high, passed, strict=True)]
            continue
        blamed = cut if any(k not in cut for k in short) else [k for k in cut if k in short]
        for k in cut:
            if k in blamed:
                low[k] = trial[k]
            else:
                high[k] = trial[k]
    # entries cut in a step where others fell short were checked beside those others' cuts
    if high != passed and not missing(high):
        return needed(high)
    return passed


def _verify(
    cluster: Cluster, rescued: Collection[str], plan: list[ScaleUp], max_rounds: int
) -> tuple[ScaleUp, ...]:
    """Schedule the whole queue with the plan's nodes added; while some of an entry's pods do
    not land, add the nodes the estimator wants for those pods, or more each round (under
    node spread every extra empty node draws a small pod first); then trim back toward the
    last count that failed (bisection, keeping only counts that pass)."""
    pods = {p.name: p for p in cluster.pending}
    entry_of = {name: k for k, entry in enumerate(plan) for name in entry.pods}

    def with_counts(counts: Sequence[int]) -> Cluster:
        trial = [replace(e, nodes=n) for e, n in zip(plan, counts, strict=True)]
        return with_new_nodes(cluster, trial, rescued)

    check = QueueCheck(with_counts, _new_name, len(plan))

    def missing(counts: list[int]) -> dict[int, list[Pod]]:
        # Where pods land is all that matters: the pass without diagnose's reasons.
        short: dict[int, list[Pod]] = {}
        for pod, where in zip(check.queue, check.landed(counts), strict=True):
            if where is None and pod.name in entry_of:
                short.setdefault(entry_of[pod.name], []).append(pods[pod.name])
        return short

    counts = [e.nodes for e in plan]
    failed = [0] * len(plan)  # the largest count seen to fall short, per entry
    step = [1] * len(plan)  # doubles while an entry stays short: node spread may need many
    # Each queued pod takes at most one node, so with one node per queued pod every pod of
    # an entry finds one of its nodes empty: more never helps, and a pod still short there
    # fails for a reason no node changes (the doubling would otherwise run to 2^rounds).
    ceiling = max(len(pods), 1)
    verified = False
    for _ in range(max_rounds):
        short = missing(counts)
        if not short:
            verified = True
            break
        if all(counts[k] >= ceiling for k in short):
            break
        for k, left in short.items():
            failed[k] = counts[k]
            grown = counts[k] + max(step[k], _estimate(plan[k].shape, left, cluster))
            counts[k] = min(grown, max(ceiling, counts[k]))
            step[k] *= 2
    if verified:
        counts = _trim(counts, failed, missing, check.needed)
    return tuple(replace(e, nodes=n, verified=verified) for e, n in zip(plan, counts, strict=True))
