"""Volcano's queues in the simulated cycle (docs/design.md §10.2): what the proportion and
overcommit plugins of the default tiers decide, read from Volcano v1.15.1.

- Resources as Volcano counts them (pkg/scheduler/api/resource_info.go, NewResource): cpu
  in millicores, memory in bytes, every other resource in thousandths; a pod's are its
  containers' requests as written (the profile's `queue_request`), a node's its
  allocatable (cpu and memory, and `device_allocatable` for its cards). The session's total
  is the sum over the nodes (framework/session.go, openSession).
- deserved (plugins/proportion/proportion.go, OnSessionOpen): rounds of the remaining total
  shared by weight among the queues not yet met, each capped by realCapability = (total −
  Σguarantee + guarantee) ∧ capability and by what the queue requests, never below its
  guarantee; a queue is met once its request fits, or its deserved stops growing.
- JobEnqueueable: the queue Open, and minResources + allocated + inqueue − elastic ≤
  realCapability in each resource the group asks ("queue resource quota insufficient");
  overcommit (plugins/overcommit/overcommit.go): Σ inqueue + minResources ≤ factor · total
  − used ("resource in cluster is overused"). A group without minResources is admitted.
- allocate (actions/allocate/allocate.go, allocateResources): queues by QueueOrderFn
  (spec.priority, then share = max allocated/deserved); an Overused queue (deserved ≤
  allocated) leaves the action; a task enters only while allocated + task ≤ deserved in
  what it asks, the queue Open (queueAllocatable).

The capacity plugin (hierarchical queues) is not in the default tiers and is not modelled.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from advisor.core.jobs import DEFAULT_OVERCOMMIT, DEFAULT_QUEUE, Queue, ResourceList
from advisor.core.model import Cluster, Pod
from advisor.core.profiles import profile_of
from advisor.core.quantity import quantity_milli, quantity_units

Res = dict[str, float]
MIN_RESOURCE = 0.1  # resource_info.go minResource: below it a quantity counts as none
BASIC = ("cpu", "memory")


def resource_list(values: ResourceList) -> Res:
    """A resource list in Volcano's units (NewResource); `pods` and count quotas left out."""
    out: Res = {}
    for name, text in values.items():
        if name == "pods" or name.startswith("count/"):
            continue
        out[name] = float(quantity_units(text) if name == "memory" else quantity_milli(text))
    return out


def pod_resources(cluster: Cluster, pod: Pod) -> Res:
    """A pod's request as Volcano counts it (TaskInfo.Resreq)."""
    profile = profile_of(cluster.scheduler)
    out: Res = {"cpu": float(pod.resources.cpu_milli), "memory": float(pod.resources.memory_bytes)}
    for name, value in profile.queue_request(pod.request).items():
        out[name] = 1000.0 * value
    return out


def cluster_total(cluster: Cluster) -> Res:
    """The session's TotalResource: each node's allocatable, an unknown one without limit."""
    profile = profile_of(cluster.scheduler)
    total: Res = {"cpu": 0.0, "memory": 0.0}
    for node in cluster.nodes:
        cpu, memory = node.allocatable.cpu_milli, node.allocatable.memory_bytes
        total["cpu"] += math.inf if cpu is None else cpu
        total["memory"] += math.inf if memory is None else memory
        for name, value in profile.device_allocatable(
            node.cards, cluster.max_vgpus_per_card
        ).items():
            total[name] = total.get(name, 0.0) + 1000.0 * value
    return total


# -- resource_info.go's operations, on dicts ------------------------------------------------


def add(left: Mapping[str, float], right: Mapping[str, float]) -> Res:
    out = dict(left)
    for name, value in right.items():
        out[name] = out.get(name, 0.0) + value
    return out


def sub(left: Mapping[str, float], right: Mapping[str, float]) -> Res:
    return add(left, {name: -value for name, value in right.items()})


def exceeded(left: Mapping[str, float], right: Mapping[str, float]) -> Res:
    """ExceededPart: what `left` has beyond `right`, per resource (missing: zero). A scalar
    not beyond is left out, not zero (resource_info.go Diff): so a realCapability whose
    scalar the guarantees use up does not limit it (MinDimensionResource, Infinity)."""
    names = set(left) | set(right) | set(BASIC)
    diff = {n: left.get(n, 0.0) - right.get(n, 0.0) for n in sorted(names)}
    return {n: max(d, 0.0) for n, d in diff.items() if n in BASIC or d > 0}


def less_equal(left: Mapping[str, float], right: Mapping[str, float]) -> bool:
    """LessEqual(rr, Zero): every resource of `left` within `right` (missing: zero)."""
    names = set(left) | set(BASIC)
    return all(_within(left.get(n, 0.0), right.get(n, 0.0)) for n in names)


def _within(left: float, right: float) -> bool:
    return left <= right or abs(left - right) < MIN_RESOURCE


def short_of(
    left: Mapping[str, float], right: Mapping[str, float], req: Mapping[str, float]
) -> list[str]:
    """LessEqualWithDimensionAndResourcesName: the resources `req` asks (above zero) in
    which `left` exceeds `right` (missing: zero), cpu and memory first, then by name."""
    names = [n for n in BASIC if req.get(n, 0.0) > 0]
    names += sorted(n for n in req if n not in BASIC and req[n] > 0)
    return [n for n in names if left.get(n, 0.0) > right.get(n, 0.0)]


def cap(value: Mapping[str, float], limit: Mapping[str, float], missing_unlimited: bool) -> Res:
    """MinDimensionResource: each resource of `value` at most `limit`'s; a resource `limit`
    lacks is kept (Infinity) or zeroed (Zero)."""
    out: Res = {}
    for name, amount in value.items():
        if name in limit:
            out[name] = min(amount, limit[name])
        elif name in BASIC:
            out[name] = min(amount, 0.0)
        else:
            out[name] = amount if missing_unlimited else 0.0
    return out


def names_of(value: Mapping[str, float]) -> list[str]:
    return [n for n in sorted(value) if value[n] >= MIN_RESOURCE]


def share(allocated: Mapping[str, float], deserved: Mapping[str, float]) -> float:
    """updateQueueAttrShare: the largest allocated/deserved over deserved's resources."""
    out = 0.0
    for name in names_of(deserved):
        d, a = deserved[name], allocated.get(name, 0.0)
        out = max(out, (0.0 if a == 0 else 1.0) if d == 0 else a / d)
    return out


def words(names: Iterable[str]) -> str:
    """A resource as Volcano's messages name it (util.FormatResourceNames)."""
    return ", ".join(names)


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

    @property
    def open(self) -> bool:
        return self.queue.state == "Open"

    @property
    def share(self) -> float:
        return share(self.allocated, self.deserved)

    def key(self) -> tuple[int, float, int]:
        """QueueOrderFn: higher spec.priority first, then the lower share, then creation."""
        return (-self.queue.priority, self.share, self.order)

    def overused(self) -> bool:
        """proportion's OverusedFn (deserved ≤ allocated in every resource), where the queue
        and not the cluster's size holds it: some resource its jobs still ask is deserved
        below the cluster's total (else the node cycle words it, as capacity)."""
        if not less_equal(self.deserved, self.allocated):
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
        if not self.open:
            return []
        short = short_of(add(self.allocated, task), self.deserved, task)
        return self.binding(short, self.deserved) or None


def queues_of(cluster: Cluster) -> dict[str, Queue]:
    """The cluster's queues; `default` Open with weight 1 when not listed (Volcano creates
    it; a scenario without `queues` has it alone)."""
    found = {q.name: q for q in cluster.jobs.queues}
    found.setdefault(DEFAULT_QUEUE, Queue(DEFAULT_QUEUE))
    return found


def deserve(attrs: Mapping[str, QueueAttr], total: Mapping[str, float]) -> None:
    """OnSessionOpen's loop: each queue's deserved, in rounds."""
    remaining = dict(total)
    met: set[str] = set()
    while True:
        weight = sum(a.queue.weight for n, a in attrs.items() if n not in met)
        if weight == 0:
            return
        before = dict(remaining)
        increased: Res = {}
        decreased: Res = {}
        for name in sorted(attrs):
            attr = attrs[name]
            if name in met:
                continue
            old = dict(attr.deserved)
            grown = add(
                attr.deserved, {n: v * attr.queue.weight / weight for n, v in remaining.items()}
            )
            grown = cap(grown, attr.real_capability, missing_unlimited=True)
            grown = cap(grown, attr.request, missing_unlimited=False)
            attr.deserved = {
                n: max(grown.get(n, 0.0), attr.guarantee.get(n, 0.0))
                for n in set(grown) | set(attr.guarantee)
            }
            if less_equal(attr.request, attr.deserved) or attr.deserved == old:
                met.add(name)
            up, down = exceeded(attr.deserved, old), exceeded(old, attr.deserved)
            increased, decreased = add(increased, up), add(decreased, down)
        remaining = exceeded(add(remaining, decreased), increased)
        if not names_of(remaining) or remaining == before:
            return


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
    phase: str  # Pending (nothing running yet), Inqueue, Running (min_member running)


def open_session(cluster: Cluster, loads: Iterable[JobLoad]) -> dict[str, QueueAttr]:
    """The queueAttr of each queue with jobs, deserved computed."""
    queues = queues_of(cluster)
    order = {name: i for i, name in enumerate(queues)}
    total = cluster_total(cluster)
    guarantees: Res = {}
    for listed in queues.values():
        guarantees = add(guarantees, resource_list(listed.guarantee))
    attrs: dict[str, QueueAttr] = {}
    pool = Pool(total)
    for load in loads:
        found = queues.get(load.queue)
        if found is None:
            continue
        queue = found
        attr = attrs.get(queue.name)
        if attr is None:
            attr = QueueAttr(queue, order[queue.name])
            attr.real_capability = real_capability(queue, total, guarantees)
            attr.guarantee = resource_list(queue.guarantee)
            attr.pool = pool
            attrs[queue.name] = attr
        attr.allocate(load.allocated)
        attr.request = add(attr.request, load.request)
        if load.min_resources is not None and load.phase in ("Inqueue", "Running"):
            # util.GetInqueueResource: minResources less what the job holds, per resource
            held = {
                n: max(v - load.allocated.get(n, 0.0), 0.0) for n, v in load.min_resources.items()
            }
            attr.inqueue = add(attr.inqueue, held)
        attr.elastic = add(attr.elastic, exceeded(load.allocated, load.min_resources or {}))
    deserve(attrs, total)
    return attrs


@dataclass(slots=True)
class Overcommit:
    """The overcommit plugin: idle = factor · total − used, and what is inqueue."""

    idle: Res
    inqueue: Res

    def refuses(self, min_resources: Mapping[str, float]) -> list[str]:
        """The resources short; those the group alone exceeds (no other group inqueue in
        them) are the cluster's size, left to the node cycle."""
        short = short_of(add(self.inqueue, min_resources), self.idle, min_resources)
        return [n for n in short if self.inqueue.get(n, 0.0) > 0]


def overcommit(cluster: Cluster, loads: Iterable[JobLoad], used: Mapping[str, float]) -> Overcommit:
    factor = cluster.scheduler.overcommit_factor or DEFAULT_OVERCOMMIT
    factor = factor if factor >= 1.0 else DEFAULT_OVERCOMMIT
    idle = sub({n: v * factor for n, v in cluster_total(cluster).items()}, used)
    inqueue: Res = {}
    for load in loads:
        if load.min_resources is None:
            continue
        if load.phase == "Inqueue":  # the whole minResources, not less what it holds
            inqueue = add(inqueue, load.min_resources)
        elif load.phase == "Running":
            held = {
                n: max(v - load.allocated.get(n, 0.0), 0.0) for n, v in load.min_resources.items()
            }
            inqueue = add(inqueue, held)
    return Overcommit(idle, inqueue)


def enqueue_refusal(attr: QueueAttr, commit: Overcommit, min_resources: Res | None) -> str | None:
    """JobEnqueueable of the tier [overcommit, …, proportion] for a Pending group, in
    Volcano's event words; None: admitted (and its minResources counted inqueue)."""
    if min_resources is None:  # enqueue.go admits it without asking the plugins
        return None
    short = commit.refuses(min_resources)
    if short:
        return f"resource in cluster is overused: overused {words(short)}"
    if not attr.open:
        return f"queue {attr.queue.name} is {attr.queue.state}: it admits no job"
    need = sub(add(add(min_resources, attr.allocated), attr.inqueue), attr.elastic)
    short = attr.binding(short_of(need, attr.real_capability, min_resources), attr.real_capability)
    if short:
        return f"queue resource quota insufficient: insufficient {words(short)}"
    attr.inqueue = add(attr.inqueue, min_resources)
    commit.inqueue = add(commit.inqueue, min_resources)
    return None
