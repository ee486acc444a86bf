"""Scale-down advice: which idle nodes could go, like the cluster-autoscaler's removal check.

A node below the utilisation threshold goes when all its GPU pods re-fit elsewhere, re-queued
after the Pending pods of equal priority, and no Pending pod that would be scheduled now stops
being scheduled. Nodes go greedily, least utilised first, each removal seen by the next.

The GPU pods re-fit through the scheduler core, so every filter applies to them (cpu,
memory and pod slots too). The node's other pods (`Node.other_pods`, when known) are judged
as the autoscaler's drain would judge them: one that blocks eviction keeps the node; the
others must find room for their cpu, memory and pod slot on the remaining nodes that admit
them (`scaling.others`), and are listed as also moving.

Every node below the threshold that is kept gets one reason, the first check it failed, as
the autoscaler gives each unremovable node one (NotUnderutilized, BlockedByPod,
NoPlaceToMovePods...): see `HELD_REASONS`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from heapq import merge
from types import MappingProxyType

import numpy as np

from advisor.core.fragmentation import valid_shape
from advisor.core.mig_cycle import MigBook, is_mig
from advisor.core.model import (
    BudgetKey,
    Cluster,
    OtherPod,
    Placement,
    Pod,
    budget_key,
    budgets_overrun,
    disruption_blocker,
    gang_members,
    queue_order,
)
from advisor.core.nodefilters import bytes_text, cpu_text
from advisor.core.occupancy import build_state
from advisor.core.placer import QueuePlacer
from advisor.core.scaling.check import take_out
from advisor.core.scaling.others import Leaving, OtherPods
from advisor.core.state import CardState, Shape
from advisor.core.whatif import place_queue
from advisor.errors import known

SAFE_TO_EVICT = "cluster-autoscaler.kubernetes.io/safe-to-evict"

# Why an idle node is kept, in the order the checks run (the first failed one is given):
UTILISATION_ROSE = "utilisation-rose"  # earlier removals moved pods onto it
GPU_POD_NOT_MOVABLE = "gpu-pod-not-movable"  # a GPU pod `movable` refuses, or a budget overspent
BLOCKED_BY_POD = "blocked-by-pod"  # an other pod that blocks eviction
PODS_DO_NOT_FIT = "pods-do-not-fit"  # a GPU or other pod finds no place once the node is gone
PENDING_WOULD_STOP_FITTING = "pending-would-stop-fitting"  # a Pending pod would lose its place
HELD_REASONS = (
    UTILISATION_ROSE,
    GPU_POD_NOT_MOVABLE,
    BLOCKED_BY_POD,
    PODS_DO_NOT_FIT,
    PENDING_WOULD_STOP_FITTING,
)


@dataclass(frozen=True, slots=True)
class ScaleDown:
    node: str
    utilisation: float  # allotted / card memory when it was chosen
    moves: Mapping[str, Placement]
    # The node's other pods, which would move too (checked to fit on cpu, memory and
    # pod slots: `scaling.others`); None: not known.
    also_moves: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class HeldNode:
    """A node below the threshold that scale-down keeps, and why (one of `HELD_REASONS`)."""

    node: str
    utilisation: float  # allotted / card memory as the cluster stands, before any removal
    reason: str
    detail: str  # names the pod or node behind the reason


@dataclass(frozen=True, slots=True)
class ScaleDownAdvice:
    """The removals, in order (what `scale_down` returns), and the nodes below the threshold
    that are kept, least utilised first (ties by name)."""

    steps: tuple[ScaleDown, ...]
    held: tuple[HeldNode, ...] = ()


def unmovable_reason(pod: Pod) -> str | None:
    """Why scale-down may not move this GPU pod, in the Kubernetes source's words; None: it
    may. What keeps any pod from eviction (`model.disruption_blocker`: kube-system,
    do-not-disrupt "true", a disruption budget allowing none), then the autoscaler's own
    safe-to-evict "false" (plans do not read it)."""
    blocker = disruption_blocker(pod)
    if blocker is not None:
        return blocker
    if pod.annotations.get(SAFE_TO_EVICT, "").strip().lower() == "false":
        return f"{SAFE_TO_EVICT}: false"
    return None


def movable(pod: Pod) -> bool:
    """Whether scale-down may move this GPU pod (`unmovable_reason` gives none)."""
    return unmovable_reason(pod) is None


def _budget_key(pod: Pod) -> tuple[BudgetKey, int] | None:
    return budget_key(pod.namespace, pod.annotations)


def _over_budget(pods: Sequence[Pod], spent: Mapping[BudgetKey, int]) -> list[tuple[str, str]]:
    """(pod, reason) for the pods of one node under a disruption budget that allows fewer
    evictions than the node holds pods under it, with those the removals before it already
    evict (`spent`): the drain would stop at the one over (the autoscaler's NotEnoughPdb,
    counted across its whole removal loop, as here)."""
    over = budgets_overrun((_budget_key(p) for p in pods), spent)
    found = []
    for pod in pods:
        budget = _budget_key(pod)
        if budget is not None and budget[0] in over:
            (_, name), allows = budget
            count, earlier = over[budget[0]], spent.get(budget[0], 0)
            found.append(
                (
                    pod.name,
                    f"disruption budget {name} allows {allows}, {count} pod"
                    + ("" if count == 1 else "s")
                    + " on the node"
                    + (f" and {earlier} moved by earlier removals" if earlier else ""),
                )
            )
    return sorted(found)


def node_utilisation(cluster: Cluster) -> dict[str, float]:
    """Allotted memory over card memory, per node (all cards; an empty node is 0). A MIG
    card counts the slices its held instances take (`MigBook.occupancy`)."""
    state = build_state(cluster)
    return _utilisation_by_node(state, MigBook(cluster, state))


def _utilisation_by_node(state: CardState, book: MigBook) -> dict[str, float]:
    n = len(state.node_names)
    allotted = np.bincount(state.node_of, weights=state.capacity - state.free_memory, minlength=n)
    total = np.bincount(state.node_of, weights=state.capacity, minlength=n)
    for node, (used, size) in book.occupancy().items():
        allotted[node] += used
        total[node] += size
    return {
        name: float(allotted[i] / total[i]) if total[i] else 0.0
        for i, name in enumerate(state.node_names)
    }


def scale_down(cluster: Cluster, threshold: float = 0.3) -> tuple[ScaleDown, ...]:
    """Nodes that can go, in the order to remove them, each with where its GPU pods would
    move and which other pods would move too (`scale_down_advice` also says why the other
    idle nodes stay)."""
    return scale_down_advice(cluster, threshold).steps


def scale_down_advice(cluster: Cluster, threshold: float = 0.3) -> ScaleDownAdvice:
    """The nodes that can go, in the order to remove them, and every other node below
    `threshold` with the first check it failed.

    Candidates: utilisation below `threshold`, every GPU pod `movable`, and no other pod
    that blocks eviction (kube-system, bare, annotated, local storage: see the sources).
    """
    queue = queue_order(cluster.pending)
    base = build_state(cluster)
    profile = base.profile.name
    # each queued pod's shape, taken once for the queue's many passes
    queued = [(pod, valid_shape(pod, profile)) for pod in queue]
    book = MigBook(cluster, base)  # MIG pods move to free instances of their profile
    # each shape's verdicts on `base`, where each trial's placer starts (judging again only
    # the node its trial took out): kept as `base` goes from step to step
    placer = QueuePlacer(base)
    first = base.copy()
    before = place_queue(
        first,
        queue,
        cluster.policy,
        book.copy(first),
        shapes=[s for _, s in queued],
        placer=placer.fork(first, ()),
    )
    # where the queue lands with every node there: each trial's queue has no more room, so
    # the pods that found none here are not looked for again while the trial keeps to it
    reference = {pod.name: where for pod, where in zip(queue, before, strict=True)}
    must_land = {name for name, where in reference.items() if where is not None}
    utilisation = _utilisation_by_node(base, book)
    candidates = sorted((u, name) for name, u in utilisation.items() if u < threshold)
    others = OtherPods(cluster.nodes)
    gangs = gang_members(cluster, base.profile.session.volcano)  # never split (§10.4)
    # Running pods per node, in the cluster's order (moved pods go last).
    by_node: dict[str, dict[str, Pod]] = {}
    for pod in cluster.running:
        if pod.placement is not None:
            by_node.setdefault(pod.placement.node, {})[pod.name] = pod
    received: dict[str, list[str]] = {}  # node -> the removed nodes whose pods moved onto it
    spent: Counter[BudgetKey] = Counter()  # budget -> pods the removals so far evict
    steps: list[ScaleDown] = []
    held: list[HeldNode] = []
    for position, (given, name) in enumerate(candidates):
        on_node = list(by_node.get(name, {}).values())
        now = _utilisation_of(base, book, name)
        kept = _kept_before_simulating(
            on_node, others.own(name), now, threshold, received.get(name, []), spent, gangs
        )
        if kept is not None:
            held.append(HeldNode(name, given, *kept))
            continue
        trial = base.copy()
        trial_book = book.copy(trial)
        for pod in on_node:
            placement = known(pod.placement, f"the placement of running pod {pod.name}")
            if is_mig(pod):
                trial_book.release(pod, placement)
            else:
                trial.release(trial.positions(placement), Shape.of_pod(pod))
        gone = trial.node_index[name]
        take_out(trial, gone)  # nothing lands on it, not even a pod asking no GPU
        moved = tuple(replace(p, placement=None) for p in on_node)
        # as queue_order(pending + moved): each moved pod after the Pending pods of its
        # priority and above (merge is stable, the queue first)
        requeued = [(pod, valid_shape(pod, profile)) for pod in queue_order(moved)]
        merged = list(merge(queued, requeued, key=lambda ps: -ps[0].priority))
        order = tuple(pod for pod, _ in merged)
        after_state = trial.copy()
        after_book = trial_book.copy(after_state)
        shapes = [s for _, s in merged]
        after = place_queue(
            after_state,
            order,
            cluster.policy,
            after_book,
            shapes=shapes,
            reference=reference,
            placer=placer.fork(after_state, [gone]),  # the trial changed that node alone
        )
        landed = {pod.name: where for pod, where in zip(order, after, strict=True) if where}
        leaving = others.leaving(name)
        upcoming = {n for _, n in candidates[position + 1 :]}
        homes = others.place(after_state, leaving, upcoming)
        kept = _kept_by_simulation(order, moved, must_land, landed, leaving, homes)
        if kept is not None:
            held.append(HeldNode(name, given, *kept))
            continue
        for pod in moved:  # commit: the moved pods run where they landed
            placement = landed[pod.name]
            instances = after_book.held_by(pod.name) if is_mig(pod) else ()
            if is_mig(pod):
                trial_book.hold(pod, placement.node, instances)
            else:
                trial.apply(trial.positions(placement), Shape.of_pod(pod))
            # Recreated pods are the newest: a later drain queues them after the older pods
            # of equal priority, as creation order does.
            by_node.setdefault(placement.node, {})[pod.name] = replace(
                pod, placement=placement, mig_instances=instances
            )
            received.setdefault(placement.node, []).append(name)
        also = others.names(name)
        others.commit(trial, name, leaving, homes)  # and the other pods take their room
        spent.update(b[0] for p in moved if (b := _budget_key(p)) is not None)
        by_node.pop(name, None)
        base, book = trial, trial_book
        # the step changed the node gone, the nodes its pods went to and its other pods' homes
        went = [trial.node_index[landed[p.name].node] for p in moved]
        placer.moved_to(base, [gone, *went, *homes.values()])
        moves = MappingProxyType({p.name: landed[p.name] for p in moved})
        steps.append(ScaleDown(name, now, moves, also))
    return ScaleDownAdvice(tuple(steps), tuple(held))


def _kept_before_simulating(
    on_node: Sequence[Pod],
    other: Sequence[OtherPod] | None,
    now: float,
    threshold: float,
    sources: Sequence[str],
    spent: Mapping[BudgetKey, int],
    gangs: Mapping[str, str] | None = None,
) -> tuple[str, str] | None:
    """(reason, detail) when the node stays whatever the simulation would say; None if not.
    `gangs`: the gang members no removal moves, with why (`model.gang_members`)."""
    if now >= threshold:
        came_from = ", ".join(dict.fromkeys(sources)) or "an earlier node"
        return UTILISATION_ROSE, (
            f"removing {came_from} moves pods onto it: {_pct(now)} then, not below the "
            f"{_pct(threshold)} threshold"
        )
    gangs = gangs or {}
    pinned = sorted(
        (p.name, why)
        for p in on_node
        if (why := unmovable_reason(p) or gangs.get(p.name)) is not None
    )
    pinned = pinned or _over_budget(on_node, spent)
    if pinned:
        return GPU_POD_NOT_MOVABLE, f"{pinned[0][0]}: {pinned[0][1]}" + _more(pinned, "GPU pod")
    blocking = [(p.name, p.blocks) for p in other or () if p.blocks]
    if blocking:
        return BLOCKED_BY_POD, f"{blocking[0][0]}: {blocking[0][1]}" + _more(blocking, "pod")
    return None


def _kept_by_simulation(
    order: Sequence[Pod],
    moved: Sequence[Pod],
    must_land: set[str],
    landed: Mapping[str, Placement],
    leaving: Sequence[Leaving] = (),
    homes: Mapping[str, int] | None = None,
) -> tuple[str, str] | None:
    """(reason, detail) when the re-queued pods, the node's other pods (`homes`: where each
    found room) or a Pending pod that lands now find no place with the node gone; names the
    first such pod. None: it can go."""
    moving = {p.name for p in moved}
    homeless = [p for p in order if p.name in moving and p.name not in landed]
    if homeless:
        first = homeless[0]
        shape = Shape.of_pod(first)
        what = f"{shape.gpus} × " + (
            f"MIG {first.request.mig_profile}" if is_mig(first) else f"{shape.card_memory_mib} MiB"
        )
        where = "free instance of its profile" if is_mig(first) else "place"
        return PODS_DO_NOT_FIT, (
            f"{first.name} ({what}) finds no {where} on the other nodes"
            + _more(homeless, "GPU pod")
        )
    stranded = [p.pod for p in leaving if homes is not None and p.pod.name not in homes]
    if stranded:
        r = stranded[0].resources
        return PODS_DO_NOT_FIT, (
            f"{stranded[0].name} (cpu {cpu_text(r.cpu_milli)}, memory "
            f"{bytes_text(r.memory_bytes)}) finds no node with room that admits it"
            + _more(stranded, "other pod")
        )
    lost = [p for p in order if p.name in must_land and p.name not in landed]
    if lost:
        return PENDING_WOULD_STOP_FITTING, (
            f"Pending {lost[0].name} would no longer be scheduled" + _more(lost, "Pending pod")
        )
    return None


def _more(items: Sequence[object], what: str) -> str:
    rest = len(items) - 1
    return f" (and {rest} more {what}{'s' if rest > 1 else ''})" if rest else ""


def _pct(share: float) -> str:
    return f"{share * 100:.1f}".removesuffix(".0") + "%"


def _utilisation_of(state: CardState, book: MigBook, node: str) -> float:
    index = state.node_index[node]
    positions = state.node_positions(index)
    used, size = book.occupancy(index).get(index, (0.0, 0))
    total = sum(int(state.capacity[k]) for k in positions) + size
    allotted = sum(int(state.capacity[k] - state.free_memory[k]) for k in positions) + used
    return allotted / total if total else 0.0
