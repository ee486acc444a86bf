"""The order Volcano's session gives jobs across its queues (docs/design.md §10.2), for the
gang cycle (core.gang) to place them in: enqueue, then allocate's loop over queues.

Read from Volcano v1.15.1:

- enqueue (actions/enqueue/enqueue.go, Execute): queues by QueueOrderFn, in each the Pending
  groups by JobOrderFn, one at a time; a group with minResources is admitted only if every
  JobEnqueueable plugin agrees (core.enqueue.enqueue_refusal). A refused group stays Pending
  and allocate never tries its pods. Without the action, allocate's buildAllocateContext
  moves every Pending group to Inqueue.
- allocate (actions/allocate/allocate.go, allocateResources): pop the first queue; if it is
  Overused it leaves the action with its jobs; else its first job is tried, and the queue
  goes back with its new share. Each task first passes the queue's Allocatable.
- The queue plugin is the configuration's (`scheduler.queue_plugin`): proportion's rules
  (core.queues) or capacity's (core.capacity: its own deserved and order, Allocatable within
  realCapability, never Overused); enqueue's are the same for both.

A group's phase is its `phase` where the scenario gives one (the PodGroup's status.phase);
else it is inferred: one with min_member running is Running, one with fewer but some running
Inqueue, one with none Pending. Only a Pending group goes through enqueue when the action
runs (api/job_info.go IsPending); an Inqueue one was admitted by an earlier session.
Under a profile without Volcano's session every job is in one queue and nothing is checked.
The refusals are worded here, in Volcano's log and event words (`allocate_refusal`,
`overused_words`); the rules themselves are core.queues'.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from advisor.core.capacity_tree import open_queues
from advisor.core.enqueue import Overcommit, admit, enqueue_refusal, overcommit
from advisor.core.jobs import DEFAULT_QUEUE
from advisor.core.model import Cluster, Pod
from advisor.core.profiles import profile_of
from advisor.core.queues import JobLoad, QueueAttr, pod_resources, queues_of
from advisor.core.resource_info import (
    MIN_RESOURCE,
    PODS,
    Res,
    accumulate,
    add,
    names_of,
    resource_list,
    short_of,
    sub,
    words,
)
from advisor.errors import known


class JobLike(Protocol):
    name: str | None  # its PodGroup; None: a pod's own (automatic) group
    queue: str
    min_member: int
    ready: int
    tasks: list[Pod]

    def key(self) -> tuple[int, bool, int]: ...


class QueueSession:
    """Which job allocate tries next, and whether a task's queue lets it in."""

    def __init__(self, cluster: Cluster, jobs: Sequence[JobLike]) -> None:
        self.cluster = cluster
        self.jobs = jobs
        self.volcano = profile_of(cluster.scheduler).session.volcano
        # job index -> why its pods are never tried (not admitted, no such queue, overused)
        self.held: dict[int, str] = {}
        self.not_admitted: set[int] = set()
        # job index -> Volcano's enqueue words for a group it refuses that the advisor leaves
        # to the node cycle (the cluster's size alone refuses it, docs/design.md §10.2)
        self.left_to_nodes: dict[int, str] = {}
        self.attrs: dict[str, QueueAttr] = {}
        # Pending pods whose queue Volcano's Allocatable refuses for the cluster's size
        # alone, which `refusal` leaves to the node cycle (docs/design.md §10.2)
        self.sized: set[str] = set()
        self._resreq: dict[str, Res] = {}  # each pod's pod_resources, counted once
        if self.volcano:
            self._open()
        self._by_queue: dict[str, list[tuple[tuple[int, bool, int], int]]] = {}
        for i, job in enumerate(jobs):
            if i not in self.held:
                self._by_queue.setdefault(self._queue(job), []).append((job.key(), i))
        for heap in self._by_queue.values():
            heapq.heapify(heap)
        self._queues = [(self._queue_key(q), q) for q in self._by_queue]
        heapq.heapify(self._queues)
        self._current: str | None = None

    def _queue(self, job: JobLike) -> str:
        return job.queue if self.volcano else DEFAULT_QUEUE

    def _queue_key(self, name: str) -> tuple[Any, str]:
        attr = self.attrs.get(name)
        return ((), name) if attr is None else (attr.order_key(), name)

    def _open(self) -> None:
        cluster = self.cluster
        self._resreq = {p.name: pod_resources(cluster, p) for p in cluster.pods}
        loads = _loads(cluster, self.jobs, self._resreq)
        self.attrs = open_queues(cluster, loads.values())
        known = queues_of(cluster)
        for i, job in enumerate(self.jobs):
            if job.queue not in known:
                self.held[i] = f"queue {job.queue} not found: Volcano skips the job"
        actions = cluster.scheduler.actions
        if actions is None:
            actions = profile_of(cluster.scheduler).session.default_actions
        if "enqueue" in actions:
            self._enqueue(cluster, loads)

    def _enqueue(self, cluster: Cluster, loads: dict[str, JobLoad]) -> None:
        commit = overcommit(cluster, loads.values(), cluster_used(cluster, self._resreq))
        dialect = profile_of(cluster.scheduler).dialect
        share = {dialect.memory_percentage} if dialect and dialect.memory_percentage else set()
        waiting: dict[str, list[tuple[tuple[int, bool, int], int]]] = {}
        for i, job in enumerate(self.jobs):
            if i not in self.held and loads[_load_name(job)].phase == "Pending":
                waiting.setdefault(job.queue, []).append((job.key(), i))
        for heap in waiting.values():
            heapq.heapify(heap)
        # the queue plugin's share does not move during enqueue: the queues' order holds
        for _, queue in sorted((self._queue_key(q), q) for q in waiting):
            while waiting[queue]:
                _, i = heapq.heappop(waiting[queue])
                attr, wanted = self.attrs[queue], loads[_load_name(self.jobs[i])].min_resources
                beyond = _volcano_refusal(attr, commit, wanted, share)
                why = enqueue_refusal(attr, commit, wanted)
                if why is not None:
                    self.held[i] = why
                    self.not_admitted.add(i)
                elif beyond is not None and wanted is not None:
                    # Left to the node cycle (the cluster's size alone refuses it), but
                    # Volcano enqueued nothing: its minResources hold no room for later
                    # groups (proportion's JobEnqueuedFn, capacity's JobEnqueueableFn add it
                    # only when they admit).
                    admit(attr, commit, wanted, admitted=False)
                    self.left_to_nodes[i] = beyond

    def pop(self) -> int | None:
        """The next job allocate tries (its queue is then current until `done`)."""
        while self._queues:
            _, name = heapq.heappop(self._queues)
            jobs = self._by_queue[name]
            attr = self.attrs.get(name)
            if attr is not None and jobs and attr.overused():
                why = overused_words(attr)
                for _, i in jobs:
                    self.held[i] = why
                jobs.clear()
                continue
            if not jobs:
                continue
            self._current = name
            return heapq.heappop(jobs)[1]
        return None

    def again(self, i: int) -> None:
        """A ready job with tasks left goes back to its queue."""
        heapq.heappush(self._by_queue[self._queue(self.jobs[i])], (self.jobs[i].key(), i))

    def done(self) -> None:
        """The current queue goes back, ordered by its share now."""
        if self._current is not None:
            heapq.heappush(self._queues, (self._queue_key(self._current), self._current))
            self._current = None

    def refusal(self, job: JobLike, pod: Pod) -> str | None:
        attr = self.attrs.get(job.queue) if self.volcano else None
        if attr is None:
            return None
        why = allocate_refusal(attr, self._resreq[pod.name])
        if why is None and attr.short(self._resreq[pod.name]):
            self.sized.add(pod.name)  # refused upstream, for the cluster's size alone
        return why

    def unsized(self, job: JobLike, pod: Pod) -> str | None:
        """A refusal `refusal` left to the node cycle (`sized`) where the nodes take the pod
        after all: the cluster's size does not explain it, so it is the queue's (its limit
        a rounding below what the cluster leaves, as proportion's deserved converges on
        it), in allocate's words; the pod is no longer `sized`. None where it is short
        only of what no node advertises (a share of each card: no limit, §10.2)."""
        attr = self.attrs[job.queue]
        task = self._resreq[pod.name]
        short = attr.short(task) or []
        if all(attr.pool.total.get(n, 0.0) < MIN_RESOURCE for n in short):
            return None
        self.sized.discard(pod.name)
        return known(allocate_refusal(attr, task, sized=False), "queueAllocatable's refusal")

    def placed(self, job: JobLike, pod: Pod, placed: bool = True) -> None:
        """The queue plugin's Allocate (placed) and Deallocate (rolled back) events."""
        attr = self.attrs.get(job.queue) if self.volcano else None
        if attr is not None:
            attr.allocate(self._resreq[pod.name], placed)


def _volcano_refusal(
    attr: QueueAttr, commit: Overcommit, wanted: Res | None, share: set[str]
) -> str | None:
    """Why Volcano's JobEnqueueable refuses the group, in its event words, before
    `enqueue_refusal` leaves a shortage the cluster's size alone explains to the node
    cycle: overcommit's Σ inqueue + minResources ≤ idle, then proportion's minResources +
    allocated + inqueue − elastic ≤ realCapability (v1.14.1 plugins/overcommit/
    overcommit.go:124, proportion.go:403-405; v1.15.1 capacity.go jobEnqueueable, the same
    test); None: it admits the group. A share of each card (`share`), which no node
    advertises and the advisor reads whatever the device configuration
    (docs/conformance.md), is no limit here."""
    if wanted is None:
        return None
    wanted = {n: v for n, v in wanted.items() if n not in share}
    short = short_of(add(commit.inqueue, wanted), commit.idle, wanted)
    if short:
        return f"resource in cluster is overused: overused {words(short)}"
    if attr.unready() is not None:
        return attr.unready()
    for each in attr.chain():  # the queue, then its ancestors (capacity's hierarchy)
        need = sub(add(add(wanted, each.allocated), each.inqueue), each.elastic)
        short = short_of(need, each.real_capability, wanted)
        if short:
            return f"queue resource quota insufficient: insufficient {words(short)}"
    return None


def _load_name(job: JobLike) -> str:
    return job.name if job.name is not None else f"pod:{job.tasks[0].name}"


def _loads(
    cluster: Cluster, jobs: Sequence[JobLike], resreq: Mapping[str, Res]
) -> dict[str, JobLoad]:
    """What each job, Pending members or not, brings to its queue (`resreq`: each pod's
    `pod_resources`)."""
    groups = {g.name: g for g in cluster.jobs.groups}
    pending = {_load_name(job): job for job in jobs}
    members: dict[str, list[Pod]] = {}
    for pod in cluster.pods:
        name = pod.group if pod.group in groups else None
        members.setdefault(name or f"pod:{pod.name}", []).append(pod)
    out: dict[str, JobLoad] = {}
    for name, pods in members.items():
        group = groups.get(name)
        queue = group.queue if group is not None else DEFAULT_QUEUE
        if name in pending:
            queue = pending[name].queue
        allocated: dict[str, float] = {}
        request: dict[str, float] = {}
        for pod in pods:
            res = resreq[pod.name]
            accumulate(request, res)
            if pod.running:
                accumulate(allocated, res)
        running = sum(1 for p in pods if p.running)
        minimum = 1 if group is None else group.min_member
        # an automatic group's minResources: its pod's requests (controllers/podgroup,
        # buildPodGroupFromPod: util.CalTaskRequests)
        if group is None:
            min_resources: dict[str, float] | None = dict(resreq[pods[0].name])
        else:
            min_resources = resource_list(group.min_resources) if group.min_resources else None
        phase = "Running" if running >= minimum else "Inqueue" if running else "Pending"
        if group is not None and group.phase is not None:
            phase = group.phase
        out[name] = JobLoad(queue, allocated, request, min_resources, phase, running >= minimum)
    return out


def allocate_refusal(attr: QueueAttr, task: Mapping[str, float], sized: bool = True) -> str | None:
    """Why allocate's queueAllocatable refuses the task, in words; None: it may enter (and,
    with `sized`, where the cluster's size alone explains the refusal)."""
    short = attr.refuses(task) if sized else attr.short(task)
    found = attr.refusing(task)
    if short is None or found is None:
        return None
    name = attr.queue.name
    if not short:
        if attr.open and attr.unready() is not None:
            return attr.unready()
        return f"Queue {name} is {attr.queue.state}, not Open: it takes no task"
    by = found[0]  # the queue, or (capacity's hierarchy) the ancestor whose limit refuses
    limit = by.limit()
    detail = ", ".join(
        f"{n}: {_show(n, by.allocated.get(n, 0.0))} allocated + {_show(n, task.get(n, 0.0))} "
        f"> {_show(n, limit.get(n, 0.0))} {by.LIMIT}"
        for n in short
    )
    where = "" if by is attr else f"in its ancestor queue {by.queue.name}: "
    return (
        f"Queue {name} is overused when considering this task: insufficient {words(short)} "
        f"({where}{detail})"
    )


def overused_words(attr: QueueAttr) -> str:
    """Why allocate leaves an Overused queue with all its jobs."""
    detail = ", ".join(
        f"{n}: {_show(n, attr.allocated.get(n, 0.0))} allocated >= "
        f"{_show(n, attr.deserved[n])} deserved"
        for n in names_of(attr.deserved)
    )
    return f"Queue {attr.queue.name} is overused, ignore it ({detail or 'it deserves nothing'})"


def cluster_used(cluster: Cluster, resreq: Mapping[str, Res]) -> Res:
    """Σ node.Used: every pod bound to a node, GPU pods and the node's other pods alike."""
    used: Res = {}
    for pod in cluster.running:
        accumulate(used, resreq[pod.name])
    for node in cluster.nodes:
        for other in (*(node.other_pods or ()), *node.resident_pods):
            accumulate(
                used,
                {"cpu": other.resources.cpu_milli, "memory": other.resources.memory_bytes, PODS: 1},
            )
    return used


def _show(name: str, value: float) -> str:
    """A quantity back in the pod spec's units."""
    if math.isinf(value):
        return "unlimited"
    if name == "memory":
        return f"{value / 2**30:.4g}Gi"
    if name == "cpu":
        return f"{value / 1000:.4g}"
    if name == PODS:
        return f"{value:g}"
    return f"{value / 1000:.6g}"
