"""Volcano's capacity plugin as the session's queue plugin (docs/design.md §10.2), where the
configuration names it in proportion's place (`scheduler.queue_plugin: capacity`), read from
Volcano v1.15.1 `pkg/scheduler/plugins/capacity/capacity.go`, flat (enableHierarchy off).

What it shares with proportion is core.queues': the session's total, the jobs' sums
(allocated, request, inqueue, elastic), realCapability = (total − Σguarantee + guarantee) ∧
capability, and JobEnqueueable (minResources + allocated + inqueue − elastic ≤
realCapability, "queue resource quota insufficient", queue Open). What differs is here:

- deserved (buildQueueAttrs): the queue's own `spec.deserved`, capped by realCapability in
  the resources both name (MinDimensionResource, Infinity), never below its guarantee
  (helpers.Max); no sharing by weight.
- share (updateQueueAttrShare): max allocated/deserved over deserved's resources; a queue
  that deserves nothing is best-effort, share 1.
- QueueOrderFn: higher spec.priority, then the lower share, then, on equal shares, a queue
  with a deserved before a best-effort one (compareShareWithDeserved); then creation.
- AllocatableFn (queueAllocatableWithReserved): the queue Open, and allocated + task ≤
  realCapability (not deserved) in what the task asks.
- No OverusedFn: allocate and reclaim never skip a queue as overused.
- PreemptiveFn (reclaim): the queue Open; allocated + task ≤ realCapability in what the task
  asks; and in some resource the task asks, allocated + task ≤ deserved
  (LessEqualPartlyWithDimensionZeroFiltered: a resource neither uses is left out).
- ReclaimableFn, each reclaimee in victim order (BuildVictimsPriorityQueue), its queue's
  allocated less the victims taken before it: skipped if it asks none of the reclaimer's
  resources, or if taking it leaves its queue below its guarantee; a victim if it asks none
  of its queue's deserved resources (an immediate victim), else if its queue's allocated
  exceeds deserved in some resource it asks that deserved names
  (GreaterPartlyWithRelevantDimensions).

With enableHierarchy (`scheduler.enable_hierarchy`) the queues form a tree: core.capacity_tree.

Not modelled: the DRA quotas, the scheduling-gate reservations (SchedulingGatesQueueAdmission).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import ClassVar

from advisor.core.jobs import Queue
from advisor.core.model import Cluster
from advisor.core.queues import (
    JobLoad,
    QueueAttr,
    cluster_total,
    gather,
)
from advisor.core.resource_info import (
    BASIC,
    IGNORED,
    MIN_RESOURCE,
    Res,
    add,
    cap,
    is_empty,
    less_equal,
    names_of,
    resource_list,
    short_of,
    sub,
)


class CapacityAttr(QueueAttr):
    """capacity.go's queueAttr (flat): core.queues' with capacity's rules."""

    LIMIT: ClassVar[str] = "realCapability"

    @property
    def best_effort(self) -> bool:
        """No deserved (Resource.IsEmpty): the queue's share is 1 whatever it holds."""
        return is_empty(self.deserved)

    @property
    def share(self) -> float:
        return 1.0 if self.best_effort else super().share

    def key(self) -> tuple[int, float, int, int]:
        """QueueOrderFn: spec.priority, share, a deserved before none, then creation."""
        return (-self.queue.priority, self.share, int(self.best_effort), self.order)

    def limit(self) -> Res:
        return self.real_capability

    def full(self) -> bool:
        return False  # capacity registers no OverusedFn

    def overused(self) -> bool:
        return False

    def unpreemptive(self, task: Mapping[str, float]) -> str | None:
        future = add(self.allocated, task)
        if short_of(future, self.real_capability, task):
            return "its allocated plus the pod's request exceeds its realCapability"
        if not below_deserved(future, self.deserved, task):
            return (
                "its allocated plus the pod's request exceeds its deserved in every resource "
                "the pod asks"
            )
        return None

    def reclaimable(
        self, task: Mapping[str, float], allocated: Res, reclaimer: Mapping[str, float]
    ) -> bool:
        if not (set(names_of(task)) & set(names_of(reclaimer))) - IGNORED:
            return False  # shouldSkipReclaimee: no resource but `pods` in common
        if not less_equal(self.guarantee, sub(allocated, task)):
            return False  # checkGuaranteeConstraint
        if immediate(task, self.deserved):
            return True
        return bool(self.beyond(allocated, task))

    def beyond(self, allocated: Mapping[str, float], task: Mapping[str, float]) -> list[str]:
        return beyond(allocated, self.deserved, task)


def below_deserved(
    future: Mapping[str, float], deserved: Mapping[str, float], task: Mapping[str, float]
) -> bool:
    """LessEqualPartlyWithDimensionZeroFiltered(deserved, task): some resource the task
    asks, used by `future` or named by deserved, has future ≤ deserved."""
    for name, asked in task.items():
        used, limit = future.get(name, 0.0), deserved.get(name, 0.0)
        if asked <= 0 or name in IGNORED or (used < MIN_RESOURCE and limit < MIN_RESOURCE):
            continue
        if used <= limit or abs(used - limit) < MIN_RESOURCE:
            return True
    return False


def immediate(task: Mapping[str, float], deserved: Mapping[str, float]) -> bool:
    """isImmediateVictim: the task asks none of deserved's resources (hasRelevantDeserved
    false)."""
    return not set(names_of(task)) & set(names_of(deserved))


def beyond(
    allocated: Mapping[str, float], deserved: Mapping[str, float], task: Mapping[str, float]
) -> list[str]:
    """GreaterPartlyWithRelevantDimensions(deserved, task): the resources the task asks in
    which `allocated` exceeds deserved, among cpu and memory that deserved holds (at least
    the smallest quantity) and the other resources it names."""
    names = [
        n
        for n, asked in task.items()
        if asked > 0
        and n not in IGNORED
        and (deserved.get(n, 0.0) >= MIN_RESOURCE if n in BASIC else n in deserved)
    ]
    return [n for n in names if allocated.get(n, 0.0) > deserved.get(n, 0.0)]


def capacity_deserved(queue: Queue, real_capability: Res, guarantee: Res) -> Res:
    """buildQueueAttrs: spec.deserved capped by realCapability where both name a resource
    (cpu and memory always), then helpers.Max with the guarantee."""
    capped = cap(resource_list(queue.deserved), real_capability, missing_unlimited=True)
    names = sorted(set(capped) | set(guarantee))
    return {n: max(capped.get(n, 0.0), guarantee.get(n, 0.0)) for n in names}


def open_capacity(cluster: Cluster, loads: Iterable[JobLoad]) -> dict[str, QueueAttr]:
    """capacity's queueAttr of each queue with jobs, deserved computed."""
    attrs = gather(cluster, loads, CapacityAttr, cluster_total(cluster))
    for attr in attrs.values():
        attr.deserved = capacity_deserved(attr.queue, attr.real_capability, attr.guarantee)
    return dict(attrs)
