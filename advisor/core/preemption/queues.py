"""The queue plugin's state as Volcano's preempt and reclaim read it, after allocate in the
same session: the queueAttr of each queue with jobs (proportion's, core.queues, or
capacity's, core.capacity; deserved computed at the session's opening, from every pod's
request), its allocated moved by the cycle's placements, then by the evictions and
pipelines here (the plugin's event handlers).

Queue sums are Volcano's resource lists (core.queues: each pod's Resreq by resource name),
not the node sums of `board`: the two are compared with different things (a queue's
deserved, a node's FutureIdle) and each stays in its own form.

A job whose queue is not listed is not in Volcano's session (the cache's snapshot skips
it): it preempts nothing and is no victim.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from advisor.core.capacity_tree import open_queues
from advisor.core.model import Cluster, Pod
from advisor.core.queues import JobLoad, QueueAttr, pod_resources, reclaimed
from advisor.core.resource_info import Res, add

# A book's checkpoint: each queue's allocated, and all the queues' together.
Saved = tuple[dict[str, Res], Res]


class QueueBook:
    """Every queue with a job in the session, private to one `judge` call."""

    def __init__(
        self, cluster: Cluster, jobs: Iterable[tuple[str, list[Pod]]], allocated: set[str]
    ) -> None:
        """`jobs`: each job's queue and pods; `allocated`: the pods that hold their request
        (running, or placed by the cycle)."""
        self._resreq = {p.name: pod_resources(cluster, p) for p in cluster.pods}
        loads: list[JobLoad] = []
        for queue, pods in jobs:
            held: Res = {}
            asked: Res = {}
            for pod in pods:
                asked = add(asked, self._resreq[pod.name])
                if pod.name in allocated:
                    held = add(held, self._resreq[pod.name])
            loads.append(JobLoad(queue, held, asked, None, "Running"))
        self.attrs: dict[str, QueueAttr] = open_queues(cluster, loads)

    def knows(self, queue: str) -> bool:
        return queue in self.attrs

    def state(self, queue: str) -> str:
        return self.attrs[queue].queue.state

    def reclaimable(self, queue: str) -> bool:
        attr = self.attrs.get(queue)
        return attr is not None and attr.queue.reclaimable

    def overused(self, queue: str) -> bool:
        """OverusedFn (proportion: deserved ≤ allocated; capacity has none)."""
        return self.attrs[queue].full()

    def allocatable(self, queue: str, pod: Pod) -> bool:
        """AllocatableFn (queueAllocatable): Open, and allocated + the pod's request within
        the plugin's limit (proportion: deserved; capacity: realCapability) where it asks."""
        return self.attrs[queue].short(self._resreq[pod.name]) is None

    def unpreemptive(self, queue: str, pod: Pod) -> str | None:
        """PreemptiveFn: None where the queue may reclaim for the pod, else why not."""
        return self.attrs[queue].unpreemptive(self._resreq[pod.name])

    def queue_order(self, queue: str) -> Any:
        """QueueOrderFn's key of a queue (smallest first), its share as it stands now."""
        return self.attrs[queue].order_key()

    def victim_order(self, queue: str, reclaimer: str) -> Any:
        """BuildVictimsPriorityQueue's key of a victim's queue for a task of `reclaimer`'s
        (first evicted smallest)."""
        return self.attrs[queue].victim_order(self.attrs[reclaimer])

    def victims(
        self, reclaimer: Pod, queue: str, reclaimees: Sequence[tuple[str, Pod]]
    ) -> list[Pod]:
        """The queue plugin's ReclaimableFn (core.queues `reclaimed`) for `reclaimer` of
        `queue`: of `reclaimees` (queue, pod), in victim order, those it gives up."""
        asked = [(q, self._resreq[pod.name]) for q, pod in reclaimees]
        task = self._resreq[reclaimer.name]
        attr = self.attrs.get(queue)
        chosen = (
            reclaimed(self.attrs, task, asked)
            if attr is None
            else attr.victims(self.attrs, task, asked)
        )
        return [reclaimees[i][1] for i in chosen]

    def move(self, queue: str, pod: Pod, *, evicted: bool) -> None:
        """A pipeline (the Allocate event) or an eviction (Deallocate) in `queue`."""
        self.attrs[queue].allocate(self._resreq[pod.name], placed=not evicted)

    def snapshot(self) -> Saved:
        pool = next(iter(self.attrs.values())).pool.allocated if self.attrs else {}
        return ({q: dict(a.allocated) for q, a in self.attrs.items()}, dict(pool))

    def restore(self, saved: Saved) -> None:
        for queue, allocated in saved[0].items():
            attr = self.attrs[queue]
            attr.allocated = dict(allocated)
            attr.pool.allocated = dict(saved[1])
