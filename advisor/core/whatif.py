"""Policy what-if: the same cluster under each node × card policy (binpack, spread), and
under each scheduler profile (`profile_outcome`, on clusters the caller has re-targeted).

Two questions per combination, so a team can choose its scheduler policy on evidence:

- *Pending*: with the running pods where they are, how many Pending pods would the policy
  place (and how much GPU memory), and how fragmented is the cluster afterwards?
- *Repack*: placing every pod again from empty, running pods first (priority desc, then
  list order) and then the Pending queue, how many pods land, and at what fragmentation?

Where the job layer decides (a gang rolled back or refused, a queue or a quota holding a pod:
docs/design.md §10), the Pending question is answered by the job cycle itself (`gang.judge`
under each policy), so the what-if never places a pod its diagnosis keeps Pending; there
random ties are not counted. The repack places pods one by one, jobs not re-judged.

A pod placed on a card reported unhealthy is counted as such: only volcano-vgpu does it
(Volcano's vGPU filter, checkNodeGPUSharingPredicateAndScore, reads no health), and the
outputs say so, since the device plugin may then refuse the pod.

Fragmentation uses the same typical shapes (all pods' requests valid under the profile)
everywhere, so the figures compare; stranded memory is judged against the pods each scenario
leaves unplaced.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from itertools import product

import numpy as np

from advisor.core.diagnosis import JOB_CAUSES, Diagnosis
from advisor.core.fragmentation import (
    Fragmentation,
    WeightedShape,
    measure,
    typical_shapes,
    valid_shape,
)
from advisor.core.gang import judge
from advisor.core.jobs import NO_JOBS
from advisor.core.mig_cycle import MigBook, is_mig
from advisor.core.model import (
    CCE,
    POLICIES,
    Cluster,
    Placement,
    Pod,
    Policy,
    Request,
    Scheduler,
    queue_order,
)
from advisor.core.occupancy import build_state
from advisor.core.placer import QueuePlacer
from advisor.core.profiles import Profile, profile_of
from advisor.core.shape import Failures
from advisor.core.state import CardState, Shape

ALL_POLICIES: tuple[Policy, ...] = tuple(Policy(n, c) for n, c in product(POLICIES, POLICIES))


def place_queue(
    state: CardState,
    pods: Sequence[Pod],
    policy: Policy,
    mig: MigBook | None = None,
    shapes: Sequence[Shape | None] | None = None,
    reference: Mapping[str, Placement | None] | None = None,
    placer: QueuePlacer | None = None,
) -> tuple[Placement | None, ...]:
    """Place `pods` one by one in the order given, each seeing the ones before it.

    Mutates `state` (callers pass a private one). Invalid requests and misfits get None.
    A pod that needs at least what a pod that found no place needed is not looked for: the
    same answer without scanning the cluster, exact because placing only fills cards (less
    free memory and core, more vGPUs, a mode set), so a card that cannot take a shape now
    never can later in the same queue, and a pod of the same mode needing as many cards or
    more, and as much per card or more, has no more cards to choose from. Queues re-placed
    again and again (scale-down's removals) are mostly such repeats.

    A MIG pod takes free instances of its profile from `mig` (the book over `state`, as the
    cycle places it: `core.mig_cycle`); with none it lands nowhere, never on a vGPU card.

    `shapes`: each pod's `valid_shape` under the state's profile, where the caller places
    the same pods again and again (taken as given, not checked).

    `reference`: where an earlier pass placed these pods (None: nowhere), on a state with
    no less room anywhere than `state` (scale-down's queue before any removal). As long as
    every pod it names that is placed here lands where it landed there, this pass's state
    has no more room than that pass's at the same point (the pods it does not name only
    take room), so a pod that found no place there finds none here: not looked for. The
    first pod landing elsewhere ends that; the pass goes on by its own failures.

    `placer`: one over `state` (`core.placer`; a fork of one kept on the state `state`
    copies, where the caller places on many copies of one state), else a new one.
    """
    placed = landings(state, pods, policy, mig, shapes, reference, placer)
    return tuple(landing.placement for landing in placed)


@dataclass(frozen=True, slots=True)
class Landing:
    """Where one pod of a queue landed (None: nowhere), what memory it took there (a share
    or a whole card takes what the profile gives it of those cards), and whether the node
    was one of several tied ones the real scheduler picks among at random."""

    placement: Placement | None
    mib: int = 0
    random_tie: bool = False
    unhealthy: bool = False  # on a card reported unhealthy (volcano-vgpu has no health check)


def landings(
    state: CardState,
    pods: Sequence[Pod],
    policy: Policy,
    mig: MigBook | None = None,
    shapes: Sequence[Shape | None] | None = None,
    reference: Mapping[str, Placement | None] | None = None,
    placer: QueuePlacer | None = None,
) -> tuple[Landing, ...]:
    """`place_queue` with the memory each pod took and its random ties."""
    if shapes is None:
        profile = state.profile.name
        shapes = [None if is_mig(pod) else valid_shape(pod, profile) for pod in pods]
    elif len(shapes) != len(pods):
        raise ValueError(f"{len(shapes)} shapes for {len(pods)} pods")
    failures = Failures()
    if placer is None:
        placer = QueuePlacer(state)
    elif placer.state is not state:
        raise ValueError("the placer is over another state")
    placed: list[Landing] = []
    for pod, shape in zip(pods, shapes, strict=True):
        if is_mig(pod):  # its instances are the book's; its shape no vGPU shape to skip by
            where = mig.place(pod, policy.node) if mig is not None and pod.invalid is None else None
            placed.append(NOWHERE if where is None else Landing(where))
            if where is not None:  # its cpu, memory and pod slot count on the node
                placer.bound(state.node_index[where.node])
            if reference is not None and reference.get(pod.name, where) != where:
                reference = None  # its cpu, memory and slot went elsewhere
            continue
        if shape is None:
            placed.append(NOWHERE)
            continue
        earlier = reference.get(pod.name, MISSING) if reference is not None else MISSING
        if earlier is None or failures.known(shape):
            placed.append(NOWHERE)
            continue
        positions = placer.place(shape, policy.node, policy.card)
        if positions is None:
            failures.add(shape)
            placed.append(NOWHERE)
            reference = None if earlier is not MISSING else reference
            continue
        tied = state.tied > 1
        at = np.array(positions, dtype=np.int64)
        mib = int(state.card_need(shape, at).sum())
        sick = not bool(state.healthy[at].all())
        state.apply(positions, shape)
        placer.bound(int(state.node_of[positions[0]]))
        where = state.placement_of(positions)
        if earlier is not MISSING and where != earlier:
            reference = None  # landed elsewhere: that pass's room no longer bounds this one
        placed.append(Landing(where, mib, tied, sick))
    return tuple(placed)


NOWHERE = Landing(None)
MISSING = Placement("", ())  # a pod the reference pass does not name


def _jobs_decide(diagnosis: Diagnosis) -> bool:
    """Whether the job layer changed what the cycle placed: a pod with a job cause, or a
    gang whose placements were rolled back (its members may keep their own causes)."""
    return any(d.cause in JOB_CAUSES for d in diagnosis.pods) or any(
        g.state == "rolled-back" for g in diagnosis.groups
    )


def _cycle_landings(
    base: CardState, queue: Sequence[Pod], diagnosis: Diagnosis
) -> tuple[CardState, tuple[Landing, ...]]:
    """The job cycle's placements as landings of `queue`, bound in the cycle's order on a
    copy of `base`: what it leaves placed, with the memory each took (no random ties: the
    cycle does not report them)."""
    state = base.copy()
    where: dict[str, Landing] = {}
    for verdict in diagnosis.pods:
        if verdict.placement is None:
            continue
        shape = Shape.of_pod(verdict.pod)
        positions = state.positions(verdict.placement)
        at = np.array(positions, dtype=np.int64)
        mib = int(state.card_need(shape, at).sum())
        sick = not bool(state.healthy[at].all())
        state.apply(positions, shape)
        where[verdict.pod.name] = Landing(verdict.placement, mib, False, sick)
    return state, tuple(where.get(pod.name, NOWHERE) for pod in queue)


def repack_order(cluster: Cluster) -> tuple[Pod, ...]:
    """Running pods by priority desc then list order, then the Pending queue."""
    return queue_order(cluster.running) + queue_order(cluster.pending)


@dataclass(frozen=True, slots=True)
class Repack:
    pods: int
    placed: int
    placed_mib: int
    running_placed: int
    running_lost: int  # running today, unplaced in the repack
    pending_placed: int
    fragmentation: Fragmentation
    on_unhealthy: int = 0  # pods placed on cards reported unhealthy


@dataclass(frozen=True, slots=True)
class PolicyOutcome:
    policy: Policy
    pending_placed: int
    pending_placed_mib: int
    fragmentation: Fragmentation  # after placing the Pending queue
    repack: Repack
    pending_on_unhealthy: int = 0  # Pending pods placed on cards reported unhealthy


@dataclass(frozen=True, slots=True)
class WhatIf:
    cluster_policy: Policy
    running: int
    pending: int
    pending_mib: int
    fragmentation: Fragmentation  # as it runs now
    outcomes: tuple[PolicyOutcome, ...]
    scheduler: Scheduler = CCE  # the profile that judged every outcome
    # Pending pods asking a share or a whole card: `pending_mib` cannot count them, as
    # what they take depends on the cards they get (hami, volcano-vgpu).
    pending_relative: int = 0


def what_if(cluster: Cluster, policies: Sequence[Policy] = ALL_POLICIES) -> WhatIf:
    profile = cluster.scheduler.profile
    shapes = typical_shapes(cluster.pods, profile=profile)
    base = build_state(cluster)
    queue = queue_order(cluster.pending)
    outcomes = tuple(_outcome(cluster, base, queue, shapes, policy) for policy in policies)
    return WhatIf(
        cluster_policy=cluster.policy,
        running=len(cluster.running),
        pending=len(queue),
        pending_mib=sum(p.request.memory_mib for p in queue),
        fragmentation=measure(base, shapes, queue),
        outcomes=outcomes,
        scheduler=cluster.scheduler,
        pending_relative=sum(
            1 for p in queue if p.request.memory_percent or p.request.memory_mib == 0
        ),
    )


def _outcome(
    cluster: Cluster,
    base: CardState,
    queue: tuple[Pod, ...],
    shapes: tuple[WeightedShape, ...],
    policy: Policy,
) -> PolicyOutcome:
    state = base.copy()
    placed = landings(state, queue, policy)
    if cluster.jobs != NO_JOBS or base.profile.session.volcano:  # a job layer may decide
        diagnosis = judge(dataclasses.replace(cluster, policy=policy), node_detail_limit=0)
        if _jobs_decide(diagnosis):
            state, placed = _cycle_landings(base, queue, diagnosis)
    left = [pod for pod, where in zip(queue, placed, strict=True) if where.placement is None]
    return PolicyOutcome(
        policy=policy,
        pending_placed=len(queue) - len(left),
        pending_placed_mib=sum(where.mib for where in placed),
        fragmentation=measure(state, shapes, left),
        repack=_repack(cluster, shapes, policy),
        pending_on_unhealthy=sum(1 for where in placed if where.unhealthy),
    )


def _repack(cluster: Cluster, shapes: tuple[WeightedShape, ...], policy: Policy) -> Repack:
    empty = dataclasses.replace(cluster, pods=(), policy=policy)
    state = build_state(empty)
    order = repack_order(cluster)
    placed = landings(state, order, policy)
    landed = [pod for pod, where in zip(order, placed, strict=True) if where.placement]
    left = [pod for pod, where in zip(order, placed, strict=True) if where.placement is None]
    running_placed = sum(1 for pod in landed if pod.running)
    return Repack(
        pods=len(order),
        placed=len(landed),
        placed_mib=sum(where.mib for where in placed),
        running_placed=running_placed,
        running_lost=len(cluster.running) - running_placed,
        pending_placed=len(landed) - running_placed,
        fragmentation=measure(state, shapes, left),
        on_unhealthy=sum(1 for where in placed if where.unhealthy),
    )


# -- the same cluster under each scheduler profile --------------------------------------------


@dataclass(frozen=True, slots=True)
class ProfileOutcome:
    """One profile's verdict on the cluster and its Pending queue (docs/design.md §9.2)."""

    scheduler: Scheduler
    policy: Policy
    max_vgpus_per_card: int
    pending_by_cause: dict[str, int]  # the diagnosis summary, "pending" included
    placements: tuple[tuple[str, Landing], ...]  # the Pending queue in queue order
    causes: tuple[tuple[str, str], ...]  # each Pending pod's cause, queue order
    running_invalid: int  # running pods whose request breaks this profile's rules
    fragmentation_now: Fragmentation
    fragmentation: Fragmentation  # after the cycle placed what it could

    @property
    def placed(self) -> int:
        return sum(1 for _, where in self.placements if where.placement is not None)

    @property
    def placed_mib(self) -> int:
        return sum(where.mib for _, where in self.placements)

    @property
    def random_ties(self) -> int:
        return sum(1 for _, where in self.placements if where.random_tie)

    @property
    def on_unhealthy(self) -> tuple[str, ...]:
        """The Pending pods placed on a card reported unhealthy, queue order."""
        return tuple(name for name, where in self.placements if where.unhealthy)


def held_mib(profile: Profile, pod: Pod, capacities: Sequence[int]) -> int:
    """Memory per card `pod` holds on cards of these sizes: its memory per card, or for a
    share or a whole card (hami, volcano-vgpu) what the profile gives it, the least over the
    cards (a request is the same on each of its cards)."""
    request = pod.request
    if (request.memory_percent == 0 and request.memory_mib > 0) or not capacities:
        return request.card_memory_mib
    need = profile.card_need(np.array(capacities, dtype=np.int64), Shape.of_pod(pod))
    return int(need.min())


def as_held(cluster: Cluster) -> Cluster:
    """The cluster with each running pod that asks a share or a whole card asking instead the
    memory it holds, so that another profile, which would read that request its own way (or
    not at all: cce), sees the cards as full as they are. Pending pods keep their requests:
    what the queue asks is the question."""
    profile = profile_of(cluster.scheduler)
    sizes = {(n.name, c.index): c.memory_mib for n in cluster.nodes for c in n.cards}
    pods = []
    for pod in cluster.pods:
        r = pod.request
        if pod.placement is None or (r.memory_percent == 0 and r.memory_mib > 0):
            pods.append(pod)
            continue
        keys = [(pod.placement.node, i) for i in pod.placement.cards]
        cards = [sizes[key] for key in keys if key in sizes]
        held = held_mib(profile, pod, cards)
        pods.append(
            dataclasses.replace(pod, request=Request(r.gpus, held * r.gpus, r.core_percent))
        )
    return dataclasses.replace(cluster, pods=tuple(pods))


def profile_outcome(cluster: Cluster) -> ProfileOutcome:
    """The cluster as its own profile judges it: the diagnosis's causes, and one scheduling
    cycle over the queue (the same greedy cycle the diagnosis runs, so the pods placed are
    the ones it calls schedulable), with fragmentation before and after. Typical shapes are
    those valid under the profile: a whole-card request has no shape under cce."""
    profile = cluster.scheduler.profile
    shapes = typical_shapes(cluster.pods, profile=profile)
    base = build_state(cluster)
    queue = queue_order(cluster.pending)
    diagnosis = judge(cluster, node_detail_limit=0)
    if _jobs_decide(diagnosis):
        state, placed = _cycle_landings(base, queue, diagnosis)
    else:
        state = base.copy()
        placed = landings(state, queue, cluster.policy)
    left = [pod for pod, where in zip(queue, placed, strict=True) if where.placement is None]
    return ProfileOutcome(
        scheduler=cluster.scheduler,
        policy=cluster.policy,
        max_vgpus_per_card=cluster.max_vgpus_per_card,
        pending_by_cause=diagnosis.summary,
        placements=tuple((pod.name, where) for pod, where in zip(queue, placed, strict=True)),
        causes=tuple((d.pod.name, d.cause) for d in diagnosis.pods),
        running_invalid=sum(
            1 for pod in cluster.running if base.profile.request_problem(pod.request) is not None
        ),
        fragmentation_now=measure(base, shapes, queue),
        fragmentation=measure(state, shapes, left),
    )
