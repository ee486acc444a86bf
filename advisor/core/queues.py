"""Volcano's queues in the simulated cycle (docs/design.md §10.2): what the proportion and
overcommit plugins of the default tiers decide, read from Volcano v1.15.1.

- Resources as Volcano counts them (core.resource_info); a pod's are its
  containers' requests as written (the profile's `queue_request`) and one `pods`
  (api/pod_info.go GetPodResourceRequest), a node's its allocatable (cpu, memory and
  `pods`, `device_allocatable` for its cards out of MIG mode, and `nvidia.com/mig-<profile>`
  for the instances its device plugin advertises: a MIG pod asks those, docs/design.md
  §13). The session's total is the sum over the
  nodes (framework/session.go, openSession), so a queue's deserved, allocated and request
  count pods too: a small pod limit bounds deserved, and proportion's ReclaimableFn
  (allocated not LessEqual deserved) and OverusedFn read it.
- deserved (plugins/proportion/proportion.go, OnSessionOpen): rounds of the remaining total
  shared by weight among the queues not yet met, each capped by realCapability = (total −
  Σguarantee + guarantee) ∧ capability and by what the queue requests, never below its
  guarantee; a queue is met once its request fits, or its deserved stops growing.
- allocate (actions/allocate/allocate.go, allocateResources): queues by QueueOrderFn
  (spec.priority, then share = max allocated/deserved); an Overused queue (deserved ≤
  allocated) leaves the action; a task enters only while allocated + task ≤ deserved in
  what it asks, the queue Open (queueAllocatable).

The capacity plugin, which a configuration names in proportion's place
(`scheduler.queue_plugin: capacity`), is core.capacity's: its queueAttr is this one with its
own deserved, limit, order and reclaim rules; the load sums and realCapability are these
(enqueue: core.enqueue).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, TypeVar

from advisor.core.jobs import DEFAULT_QUEUE, Queue
from advisor.core.mig import mig_resource
from advisor.core.model import Cluster, Pod
from advisor.core.profiles import profile_of
from advisor.core.resource_info import (
    BASIC,
    MIN_RESOURCE,
    PODS,
    Res,
    add,
    cap,
    exceeded,
    is_empty,
    less_equal,
    resource_list,
    share,
    short_of,
    sub,
)


def pod_resources(cluster: Cluster, pod: Pod) -> Res:
    """A pod's request as Volcano counts it (TaskInfo.Resreq)."""
    profile = profile_of(cluster.scheduler)
    out: Res = {
        "cpu": float(pod.resources.cpu_milli),
        "memory": float(pod.resources.memory_bytes),
        PODS: 1.0,
    }
    for name, value in profile.queue_request(pod.request).items():
        out[name] = 1000.0 * value
    return out


def cluster_total(cluster: Cluster) -> Res:
    """The session's TotalResource: each node's allocatable, an unknown one without limit."""
    profile = profile_of(cluster.scheduler)
    total: Res = {"cpu": 0.0, "memory": 0.0, PODS: 0.0}
    for node in cluster.nodes:
        known = node.allocatable
        for dim, limit in (("cpu", known.cpu_milli), ("memory", known.memory_bytes)):
            total[dim] += math.inf if limit is None else limit
        total[PODS] += math.inf if known.pods is None else known.pods
        found = profile.device_allocatable(node.vgpu_cards(), cluster.max_vgpus_per_card)
        found.update((mig_resource(p), n) for p, n in node.mig_allocatable().items())
        for name, value in found.items():
            total[name] = total.get(name, 0.0) + 1000.0 * value
    return total


# -- a queue's state in the session ----------------------------------------------------------


@dataclass(slots=True)
class Pool:
    """The session's total and what all its queues hold."""

    total: Res = field(default_factory=dict)
    allocated: Res = field(default_factory=dict)


@dataclass(slots=True)
class QueueAttr:
    """proportion.go's queueAttr for one queue with jobs in the session."""

    queue: Queue
    order: int  # its place in the cluster's listing: QueueOrderFn's last tie-break
    allocated: Res = field(default_factory=dict)
    request: Res = field(default_factory=dict)
    inqueue: Res = field(default_factory=dict)
    elastic: Res = field(default_factory=dict)
    deserved: Res = field(default_factory=dict)
    real_capability: Res = field(default_factory=dict)
    guarantee: Res = field(default_factory=dict)
    pool: Pool = field(default_factory=lambda: Pool())  # the session's, shared by the queues

    # What queueAllocatable bounds a queue's allocated by, in Volcano's name for it.
    LIMIT: ClassVar[str] = "deserved"

    @property
    def open(self) -> bool:
        return self.queue.state == "Open"

    @property
    def share(self) -> float:
        return share(self.allocated, self.deserved)

    def key(self) -> tuple[int, float, int, int]:
        """QueueOrderFn: higher spec.priority first, then the lower share, then creation (the
        third place is capacity's, core.capacity; here always 0)."""
        return (-self.queue.priority, self.share, 0, self.order)

    def limit(self) -> Res:
        """What allocated + a task must stay within (queueAllocatable): deserved."""
        return self.deserved

    def claim(self) -> Claim:
        return Claim(self.queue.weight, self.request, self.real_capability, self.guarantee)

    def full(self) -> bool:
        """proportion's OverusedFn as upstream has it: deserved ≤ allocated in every
        resource (`overused` is the cycle's reading of it)."""
        return less_equal(self.deserved, self.allocated)

    def order_key(self) -> Any:
        """QueueOrderFn as a sort key, smallest first (capacity's hierarchy compares pairs)."""
        return self.key()

    def victim_order(self, preemptor: QueueAttr) -> Any:
        """BuildVictimsPriorityQueue's order of victims' queues for a reclaimer in `preemptor`,
        first evicted smallest: reverse QueueOrderFn (VictimQueueOrderFn's fallback)."""
        return tuple(-x for x in self.key())

    def chain(self) -> list[QueueAttr]:
        """The queues whose limit a task or a group must fit, its own first (capacity's
        hierarchy adds each ancestor up to the root)."""
        return [self]

    def unready(self) -> str | None:
        """Why the plugin refuses every task and group of the session (capacity's hierarchy
        when its structure is broken); None: it judges them."""
        return None

    def refusing(self, task: Mapping[str, float]) -> tuple[QueueAttr, list[str]] | None:
        """queueAllocatable over `chain`: None when the task may enter; else the queue that
        refuses and the resources in which its allocated + task exceeds its limit (empty:
        not Open, or the plugin `unready`)."""
        if not self.open or self.unready() is not None:
            return self, []
        for attr in self.chain():
            short = short_of(add(attr.allocated, task), attr.limit(), task)
            if short:
                return attr, short
        return None

    def short(self, task: Mapping[str, float]) -> list[str] | None:
        """queueAllocatable (AllocatableFn, PreemptiveFn): None when the task may enter; else
        the resources in which allocated + task exceeds deserved (empty: not Open)."""
        found = self.refusing(task)
        return None if found is None else found[1]

    def overused(self) -> bool:
        """OverusedFn (`full`) where the queue and not the cluster's size holds it:
        some resource its jobs still ask is deserved below the cluster's total (else the
        node cycle words it, as capacity)."""
        if not self.full():
            return False
        asked = [n for n in self.request if self.request[n] - self.allocated.get(n, 0.0) > 0]
        return bool(self.binding(asked, self.deserved))

    def binding(self, names: Iterable[str], limit: Mapping[str, float]) -> list[str]:
        """Of `names`, those where `limit` is below what the cluster leaves this queue (its
        total less the other queues' allocations): the queue's share, capability or
        guarantee decides, not the cluster being full (that the node cycle words)."""
        pool = self.pool
        return [
            n
            for n in names
            if limit.get(n, 0.0)
            < pool.total.get(n, 0.0)
            - pool.allocated.get(n, 0.0)
            + self.allocated.get(n, 0.0)
            - MIN_RESOURCE
        ]

    def allocate(self, task: Mapping[str, float], placed: bool = True) -> None:
        """The proportion plugin's Allocate (placed) and Deallocate (rolled back) events."""
        change = task if placed else {n: -v for n, v in task.items()}
        self.allocated = add(self.allocated, change)
        self.pool.allocated = add(self.pool.allocated, change)

    def refuses(self, task: Mapping[str, float]) -> list[str] | None:
        """queueAllocatable: None when the task may enter; else the resources short (empty
        when the queue is not Open). A shortage only the cluster's size explains is left to
        the node cycle."""
        found = self.refusing(task)
        if found is None or not found[1]:  # may enter, or not Open
            return None if found is None else found[1]
        attr, short = found
        return attr.binding(short, attr.limit()) or None

    def unpreemptive(self, task: Mapping[str, float]) -> str | None:
        """PreemptiveFn (reclaim: may the queue reclaim for the task?), proportion's:
        queueAllocatable. None: it may; else why not (the queue is Open: reclaim asks)."""
        if self.short(task) is None:
            return None
        return "its allocated plus the pod's request exceeds its deserved share"

    def reclaimable(
        self, task: Mapping[str, float], allocated: Res, reclaimer: Mapping[str, float]
    ) -> bool:
        """ReclaimableFn's test of one reclaimee of this queue, `allocated` the queue's less
        the victims chosen before it (proportion: allocated not within deserved)."""
        return not less_equal(allocated, self.deserved)

    def victims(
        self,
        attrs: Mapping[str, QueueAttr],
        reclaimer: Mapping[str, float],
        reclaimees: Iterable[tuple[str, Mapping[str, float]]],
    ) -> list[int]:
        """ReclaimableFn for a reclaimer of this queue (`reclaimed`; capacity's hierarchy
        with ancestorReclaimLevel weighs ancestors too)."""
        return reclaimed(attrs, reclaimer, reclaimees)


A = TypeVar("A", bound=QueueAttr)


def reclaimed(
    attrs: Mapping[str, QueueAttr],
    reclaimer: Mapping[str, float],
    reclaimees: Iterable[tuple[str, Mapping[str, float]]],
) -> list[int]:
    """The queue plugin's ReclaimableFn: the places in `reclaimees` (each its queue and its
    request, in victim order) of those it gives up, each judged on its queue's allocated less
    the victims before it (proportion.go and capacity.go both keep these `allocations`)."""
    allocations: dict[str, Res] = {}
    out = []
    for i, (queue, task) in enumerate(reclaimees):
        attr = attrs[queue]
        allocated = allocations.setdefault(queue, dict(attr.allocated))
        if attr.reclaimable(task, allocated, reclaimer):
            allocations[queue] = sub(allocated, task)
            out.append(i)
    return out


def queues_of(cluster: Cluster) -> dict[str, Queue]:
    """The cluster's queues; `default` Open with weight 1 when not listed (Volcano creates
    it; a scenario without `queues` has it alone)."""
    found = {q.name: q for q in cluster.jobs.queues}
    found.setdefault(DEFAULT_QUEUE, Queue(DEFAULT_QUEUE))
    return found


@dataclass(frozen=True, slots=True)
class Claim:
    """What OnSessionOpen's loop reads of one queue."""

    weight: int
    request: Mapping[str, float]
    real_capability: Mapping[str, float]
    guarantee: Mapping[str, float]


def deserved(total: Mapping[str, float], claims: Mapping[str, Claim]) -> dict[str, Res]:
    """OnSessionOpen's loop: each queue's deserved, in rounds of the remaining total shared
    by weight among the queues not yet met (queues by name: upstream's map order is random)."""
    out: dict[str, Res] = {name: {} for name in claims}
    remaining = dict(total)
    met: set[str] = set()
    while True:
        weight = sum(c.weight for n, c in claims.items() if n not in met)
        if weight == 0:
            return out
        before = dict(remaining)
        increased: Res = {}
        decreased: Res = {}
        for name in sorted(claims):
            claim = claims[name]
            if name in met:
                continue
            old = out[name]
            grown = add(old, {n: v * claim.weight / weight for n, v in remaining.items()})
            grown = cap(grown, claim.real_capability, missing_unlimited=True)
            grown = cap(grown, claim.request, missing_unlimited=False)
            new = {
                n: max(grown.get(n, 0.0), claim.guarantee.get(n, 0.0))
                for n in set(grown) | set(claim.guarantee)
            }
            if less_equal(claim.request, new) or new == old:
                met.add(name)
            up, down = exceeded(new, old), exceeded(old, new)
            increased, decreased = add(increased, up), add(decreased, down)
            out[name] = new
        remaining = exceeded(add(remaining, decreased), increased)
        if is_empty(remaining) or remaining == before:
            return out


def deserve(attrs: Mapping[str, QueueAttr], total: Mapping[str, float]) -> None:
    """Each queue's `deserved` (`deserved`, from its attr's request, capability, guarantee)."""
    found = deserved(total, {name: attr.claim() for name, attr in attrs.items()})
    for name, attr in attrs.items():
        attr.deserved = found[name]


def real_capability(queue: Queue, total: Res, guarantees: Res) -> Res:
    """(total − Σguarantee + guarantee) ∧ capability; a capability's cpu or memory of zero
    or none is unlimited, a resource it does not name is the total's."""
    guarantee = resource_list(queue.guarantee)
    real = add(exceeded(total, guarantees), guarantee)
    if not queue.capability:
        return real
    capability = resource_list(queue.capability)
    for name in BASIC:
        if capability.get(name, 0.0) <= 0:
            capability[name] = math.inf
    return cap(real, capability, missing_unlimited=True)


@dataclass(frozen=True, slots=True)
class JobLoad:
    """What a job brings to its queue at the session's opening."""

    queue: str
    allocated: Res  # its running members
    request: Res  # running and Pending members
    min_resources: Res | None  # None: the PodGroup gives none
    phase: str  # its PodGroup's (jobs.GROUP_PHASES), given or inferred (core.session)
    # min_member running (util.CalculateAllocatedTaskNum ≥ minMember): only then does a
    # Running job's minResources less what it holds count inqueue
    full: bool = True

    def reserves(self) -> bool:
        """Whether proportion, capacity and overcommit count its minResources less what it
        holds inqueue (v1.15.1 proportion.go OnSessionOpen: Inqueue, or Running with
        min_member allocated: "a Spark job ... completed while the podgroup keeps running")."""
        return self.min_resources is not None and (
            self.phase == "Inqueue" or (self.phase == "Running" and self.full)
        )


def open_session(cluster: Cluster, loads: Iterable[JobLoad]) -> dict[str, QueueAttr]:
    """proportion's queueAttr of each queue with jobs, deserved computed."""
    total = cluster_total(cluster)
    attrs = gather(cluster, loads, QueueAttr, total)
    deserve(attrs, total)
    return attrs


def gather(
    cluster: Cluster, loads: Iterable[JobLoad], make: Callable[[Queue, int], A], total: Res
) -> dict[str, A]:
    """Each queue with jobs (`make`: its attr, from the queue and its listing place), its
    realCapability and guarantee set and its jobs' loads summed (buildQueueAttrs in capacity,
    OnSessionOpen in proportion: the same sums); deserved is the plugin's, left unset."""
    queues = queues_of(cluster)
    order = {name: i for i, name in enumerate(queues)}
    guarantees: Res = {}
    for listed in queues.values():
        guarantees = add(guarantees, resource_list(listed.guarantee))
    attrs: dict[str, A] = {}
    pool = Pool(total)
    for load in loads:
        found = queues.get(load.queue)
        if found is None:
            continue
        queue = found
        attr = attrs.get(queue.name)
        if attr is None:
            attr = make(queue, order[queue.name])
            attr.real_capability = real_capability(queue, total, guarantees)
            attr.guarantee = resource_list(queue.guarantee)
            attr.pool = pool
            attrs[queue.name] = attr
        attr.allocate(load.allocated)
        attr.request = add(attr.request, load.request)
        if load.min_resources is not None and load.reserves():
            # util.GetInqueueResource: minResources less what the job holds, per resource
            held = {
                n: max(v - load.allocated.get(n, 0.0), 0.0) for n, v in load.min_resources.items()
            }
            attr.inqueue = add(attr.inqueue, held)
        attr.elastic = add(attr.elastic, exceeded(load.allocated, load.min_resources or {}))
    return attrs
