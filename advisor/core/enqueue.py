"""Volcano's enqueue action in the simulated cycle (docs/design.md §10.2): whether a Pending
PodGroup is admitted, read from Volcano v1.15.1.

JobEnqueueable: the queue Open, and minResources + allocated + inqueue − elastic ≤
realCapability in each resource the group asks ("queue resource quota insufficient");
overcommit (plugins/overcommit/overcommit.go): Σ inqueue + minResources ≤ factor · total
− used ("resource in cluster is overused"). A group without minResources is admitted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from advisor.core.jobs import DEFAULT_OVERCOMMIT
from advisor.core.model import Cluster
from advisor.core.queues import JobLoad, QueueAttr, cluster_total
from advisor.core.resource_info import Res, add, short_of, sub, words


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
        elif load.reserves():
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
    unready = attr.unready()
    if unready is not None:
        return unready
    if not attr.open:
        return f"queue {attr.queue.name} is {attr.queue.state}: it admits no job"
    for each in attr.chain():  # the queue, then its ancestors (capacity's hierarchy)
        need = sub(add(add(min_resources, each.allocated), each.inqueue), each.elastic)
        limit = each.real_capability
        short = each.binding(short_of(need, limit, min_resources), limit)
        if short:
            return f"queue resource quota insufficient: insufficient {words(short)}"
    admit(attr, commit, min_resources)
    return None


def admit(attr: QueueAttr, commit: Overcommit, min_resources: Res, admitted: bool = True) -> None:
    """An admitted group's minResources counted inqueue in its queue and, under capacity's
    hierarchy, each ancestor (JobEnqueueableFn), and by overcommit; `admitted` False takes
    them back."""
    change = min_resources if admitted else {n: -v for n, v in min_resources.items()}
    for each in attr.chain():
        each.inqueue = add(each.inqueue, change)
    commit.inqueue = add(commit.inqueue, change)
