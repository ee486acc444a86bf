"""Volcano's capacity plugin with hierarchical queues (docs/design.md §10.2): the
configuration's `enableHierarchy` on capacity (`scheduler.enable_hierarchy`), read from
Volcano v1.15.1 `pkg/scheduler/plugins/capacity/capacity.go` (buildHierarchicalQueueAttrs,
checkHierarchicalQueue, checkQueueAllocatableHierarchically,
checkJobEnqueueableHierarchically, the hierarchical QueueOrderFn and VictimQueueOrderFn).

- The tree: every queue is the child of its `spec.parent`, or of the root queue (`root`,
  which Volcano's cache creates) where it names none. A parent that is not a queue, a
  cycle, or a job in a queue with children leaves the plugin not ready to schedule: it
  refuses every task and group of the session (`unready`).
- Each queue sums its jobs' allocated, request, inqueue and elastic, and each ancestor its
  descendants' (the Allocate and Deallocate events move the ancestors' allocated too).
- Top down from the root (checkHierarchicalQueue): the root's capability is its own, or
  unlimited where it names none, and its realCapability that capability; a child's deserved
  is max(spec.deserved, guarantee), the root's deserved and guarantee its children's sums;
  a child's capability takes its parent's cpu and memory where it gives none (or ≤ 0) and
  its parent's other resources where it does not name them; its realCapability is
  (parent's realCapability − Σ its siblings' and its own guarantee + its guarantee) ∧
  capability. Nothing here is bounded by the cluster's total.
- AllocatableFn: the queue Open, then allocated + task ≤ realCapability in what the task
  asks, in the queue and in each ancestor up to the root. JobEnqueueable: minResources +
  allocated + inqueue − elastic ≤ realCapability in the queue and each ancestor; an admitted
  group is counted inqueue in all of them.
- QueueOrderFn: higher spec.priority; a leaf before a parent; two leaves by their ancestors
  just below the deepest one they share (compareShareWithDeserved: the lower share, then a
  queue with a deserved), equal: creation. A parent's share is the session's opening one
  (the events update only the leaf's). VictimQueueOrderFn: a victim whose queue shares a
  deeper ancestor with the reclaimer's first, then reverse QueueOrderFn.
- PreemptiveFn and ReclaimableFn read the leaf as flat (core.capacity), with the deserved
  above. With `ancestorReclaimLevel` L above 0 (`scheduler.ancestor_reclaim_level`):
  PreemptiveFn also lets a leaf at its deserved reclaim where an ancestor within L levels
  (not the root) has allocated + task ≤ deserved in some resource; ReclaimableFn keeps an
  immediate victim whose queue shares such an ancestor with the reclaimer's when the
  reclaimer's own deserved names nothing it asks, and checks each of the victim's
  ancestors within L (not the root, not the reclaimer's at the same depth): each must hold
  more than it deserves in a resource the victim asks, or deserve none of them.

`open_queues` is where the session and preemption open the configuration's queue plugin:
proportion's (core.queues), flat capacity's (core.capacity) or this.

Not modelled: the DRA quotas.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cmp_to_key
from typing import Any

from advisor.core.capacity import (
    CapacityAttr,
    below_deserved,
    beyond,
    immediate,
    open_capacity,
)
from advisor.core.jobs import ROOT_QUEUE, Queue
from advisor.core.model import Cluster
from advisor.core.queues import (
    JobLoad,
    Pool,
    QueueAttr,
    cluster_total,
    gather,
    open_session,
    queues_of,
)
from advisor.core.resource_info import (
    BASIC,
    IGNORED,
    Res,
    add,
    cap,
    exceeded,
    is_empty,
    less_equal,
    names_of,
    resource_list,
    share,
    sub,
)


@dataclass(slots=True)
class Tree:
    """What the queues of one session share: why the plugin refuses all, if it does, and
    its ancestorReclaimLevel."""

    unready: str | None = None
    level: int = 0


@dataclass(slots=True)
class HierAttr(CapacityAttr):
    """capacity.go's queueAttr with enableHierarchy: its place in the tree."""

    ancestors: list[HierAttr] = field(default_factory=list)  # root first, parent last
    children: list[HierAttr] = field(default_factory=list)
    capability: Res = field(default_factory=dict)
    tree: Tree = field(default_factory=Tree)
    opened_share: float = 0.0  # a parent's share: the session's opening one

    @property
    def leaf(self) -> bool:
        return not self.children

    @property
    def share(self) -> float:
        return self.live_share() if self.leaf else self.opened_share

    def live_share(self) -> float:
        """updateQueueAttrShare: 1 for a best-effort queue, else max allocated/deserved."""
        return 1.0 if self.best_effort else share(self.allocated, self.deserved)

    def chain(self) -> list[QueueAttr]:
        return [self, *reversed(self.ancestors)]

    def unready(self) -> str | None:
        return self.tree.unready

    def allocate(self, task: Mapping[str, float], placed: bool = True) -> None:
        """AllocateFunc and DeallocateFunc: the queue's and each ancestor's allocated."""
        CapacityAttr.allocate(self, task, placed)
        change = task if placed else {n: -v for n, v in task.items()}
        for ancestor in self.ancestors:
            ancestor.allocated = add(ancestor.allocated, change)

    def unpreemptive(self, task: Mapping[str, float]) -> str | None:
        """PreemptiveFn: the leaf's (core.capacity); with ancestorReclaimLevel, a leaf at
        its deserved may still reclaim where an ancestor within the level, not the root, is
        below its own in some resource the task asks."""
        if self.tree.unready is not None:
            return self.tree.unready
        why = CapacityAttr.unpreemptive(self, task)
        if why is None or not why.endswith("the pod asks"):  # realCapability refuses outright
            return why
        for depth in range(1, self.tree.level + 1):
            ancestor = self.at_depth(depth)
            if ancestor is None or not ancestor.ancestors:
                continue
            if below_deserved(add(ancestor.allocated, task), ancestor.deserved, task):
                return None
        return why

    def at_depth(self, depth: int) -> HierAttr | None:
        """queueAncestorAtDepth: the ancestor `depth` levels up (1: the parent)."""
        if depth <= 0 or len(self.ancestors) < depth:
            return None
        return self.ancestors[-depth]

    def victims(
        self,
        attrs: Mapping[str, QueueAttr],
        reclaimer: Mapping[str, float],
        reclaimees: Iterable[tuple[str, Mapping[str, float]]],
    ) -> list[int]:
        """ReclaimableFn for a reclaimer of this queue, each reclaimee judged on its queue as
        flat, then, with ancestorReclaimLevel, on each of its ancestors within the level
        that the reclaimer's queue does not share at that depth (not the root): a victim
        only where each such ancestor holds more than it deserves in a resource the victim
        asks (or deserves none of them); the ancestors' allocated less the victims before."""
        level = self.tree.level
        if self.tree.unready is not None or level == 0:
            return QueueAttr.victims(self, attrs, reclaimer, reclaimees)
        allocations: dict[str, Res] = {}
        out = []
        for i, (name, task) in enumerate(reclaimees):
            attr = attrs[name]
            if (
                not isinstance(attr, HierAttr)
                or not (set(names_of(task)) & set(names_of(reclaimer))) - IGNORED
            ):
                continue  # shouldSkipReclaimee
            allocated = allocations.setdefault(name, dict(attr.allocated))
            if not less_equal(attr.guarantee, sub(allocated, task)):
                continue  # checkGuaranteeConstraint
            if immediate(task, attr.deserved):
                if self.shares_within(attr) and immediate(reclaimer, self.deserved):
                    continue  # no real contention under an ancestor both share
            elif not beyond(allocated, attr.deserved, task):
                continue
            checked = []
            for depth in range(1, level + 1):  # getReclaimeeAncestorToCheck
                ancestor = attr.at_depth(depth)
                if ancestor is None or not ancestor.ancestors or ancestor is self.at_depth(depth):
                    continue
                held = allocations.setdefault(ancestor.queue.name, dict(ancestor.allocated))
                checked.append(ancestor.queue.name)
                if not immediate(task, ancestor.deserved) and not beyond(
                    held, ancestor.deserved, task
                ):
                    break
            else:
                for each in (name, *checked):
                    allocations[each] = sub(allocations[each], task)
                out.append(i)
        return out

    def shares_within(self, other: HierAttr) -> bool:
        """sharesAnyNonRootAncestorWithinLevel: an ancestor within the level, not the root,
        of both queues."""
        depths = range(1, self.tree.level + 1)
        mine = {id(a) for d in depths if (a := self.at_depth(d)) is not None and a.ancestors}
        return any(id(a) in mine for d in depths if (a := other.at_depth(d)) is not None)

    def reclaimable(
        self, task: Mapping[str, float], allocated: Res, reclaimer: Mapping[str, float]
    ) -> bool:
        if self.tree.unready is not None:
            return False  # ReclaimableFn rejects every reclaimee
        return CapacityAttr.reclaimable(self, task, allocated, reclaimer)

    def order_key(self) -> Any:
        return _ORDER(self)

    def victim_order(self, preemptor: QueueAttr) -> Any:
        """VictimQueueOrderFn: the deeper the ancestor shared with the reclaimer's queue,
        the sooner; then reverse QueueOrderFn."""
        level = _level(self, preemptor) if isinstance(preemptor, HierAttr) else 0
        return (-level, _REVERSE(self))


def _level(left: HierAttr, right: HierAttr) -> int:
    """getQueueLevel: the index of the last ancestor the two share, counted from the root."""
    level = 0
    for i, (a, b) in enumerate(zip(left.ancestors, right.ancestors, strict=False)):
        if a is not b:
            break
        level = i
    return level


def _by_share(left: HierAttr, right: HierAttr) -> int:
    """compareShareWithDeserved: the lower share first; equal, one with a deserved first."""
    if left.share != right.share:
        return -1 if left.share < right.share else 1
    return int(left.best_effort) - int(right.best_effort)


def _compare(left: HierAttr, right: HierAttr) -> int:
    """ssn.QueueOrderFn with capacity's hierarchical QueueOrderFn, then creation."""
    found = right.queue.priority - left.queue.priority
    if not found and left.leaf != right.leaf:
        found = -1 if left.leaf else 1
    if not found and not left.leaf:
        found = _by_share(left, right)
    elif not found:
        level = _level(left, right)
        lv = left.ancestors[level + 1] if level + 1 < len(left.ancestors) else left
        rv = right.ancestors[level + 1] if level + 1 < len(right.ancestors) else right
        found = _by_share(lv, rv)
    if not found:  # creation (the listing), then the name
        found = (left.order > right.order) - (left.order < right.order)
    if not found:
        found = (left.queue.name > right.queue.name) - (left.queue.name < right.queue.name)
    return found


_ORDER = cmp_to_key(_compare)


def _reversed(left: HierAttr, right: HierAttr) -> int:
    return -_compare(left, right)


_REVERSE = cmp_to_key(_reversed)


def open_queues(cluster: Cluster, loads: Iterable[JobLoad]) -> dict[str, QueueAttr]:
    """The queue plugin's queueAttrs the session opens with: capacity's where the
    configuration names it (hierarchical with its enableHierarchy), else proportion's
    (core.queues)."""
    if cluster.scheduler.queue_plugin == "capacity":
        if cluster.scheduler.enable_hierarchy:
            return open_hierarchy(cluster, loads)
        return open_capacity(cluster, loads)
    return open_session(cluster, loads)


def open_hierarchy(cluster: Cluster, loads: Iterable[JobLoad]) -> dict[str, QueueAttr]:
    """capacity's queueAttr of every queue of the tree (buildHierarchicalQueueAttrs)."""
    queues = queues_of(cluster)
    queues.setdefault(ROOT_QUEUE, Queue(ROOT_QUEUE))
    total = cluster_total(cluster)
    tree = Tree(level=cluster.scheduler.ancestor_reclaim_level)
    attrs = {
        name: HierAttr(queue, i, tree=tree, guarantee=resource_list(queue.guarantee))
        for i, (name, queue) in enumerate(queues.items())
    }
    tree.unready = _link(attrs)
    loads = list(loads)
    # the jobs' sums in their own queues (gather: the same as the flat plugin's), the
    # allocated moved up by HierAttr.allocate, the rest added to the ancestors below
    found = gather(cluster, loads, lambda queue, _: attrs[queue.name], total)
    pool = next(iter(found.values())).pool if found else Pool(total)
    for attr in attrs.values():
        attr.pool = pool
    for name, attr in found.items():
        if not attr.leaf and tree.unready is None:
            tree.unready = (
                "Capacity plugin failed to check queue's hierarchical structure: "
                f"the Queue {name} of a job is not leaf queue"
            )
        for ancestor in attr.ancestors:
            ancestor.request = add(ancestor.request, attr.request)
            ancestor.inqueue = add(ancestor.inqueue, attr.inqueue)
            ancestor.elastic = add(ancestor.elastic, attr.elastic)
    root = attrs[ROOT_QUEUE]
    own = resource_list(root.queue.capability)
    if is_empty(own):
        own = dict.fromkeys((*BASIC, *total), math.inf)
    root.capability = {**dict.fromkeys(BASIC, 0.0), **own}
    root.real_capability = dict(root.capability)
    root.deserved = resource_list(root.queue.deserved)
    _check(root)
    for attr in attrs.values():
        attr.opened_share = attr.live_share()
    return dict(attrs)


def _link(attrs: Mapping[str, HierAttr]) -> str | None:
    """updateAncestors: each queue's ancestors and children; why the tree is unusable (a
    parent that is no queue, a cycle), or None."""
    broken = "Capacity plugin failed to check queue's hierarchical structure: "
    parent_of: dict[str, str] = {}
    for name, attr in attrs.items():
        if name == ROOT_QUEUE:
            continue
        parent = attr.queue.parent or ROOT_QUEUE
        if parent not in attrs:
            return broken + f"the queue {name} has invalid parent queue {parent}"
        parent_of[name] = parent
    for name, attr in attrs.items():
        chain: list[str] = []
        at = name
        while at in parent_of:
            at = parent_of[at]
            if at == name or at in chain:
                return broken + f"cycle detected in queue hierarchy for queue {name}"
            chain.append(at)
        attr.ancestors = [attrs[a] for a in reversed(chain)]
        if name in parent_of:
            attrs[parent_of[name]].children.append(attr)
    return None


def _check(attr: HierAttr) -> None:
    """checkHierarchicalQueue: each child's deserved, capability and realCapability from
    its parent's, top down."""
    guarantees: Res = {}
    deserved: Res = {}
    for child in attr.children:
        child.deserved = _max(resource_list(child.queue.deserved), child.guarantee)
        deserved = add(deserved, child.deserved)
        guarantees = add(guarantees, child.guarantee)
        child.capability = _inherit(resource_list(child.queue.capability), attr.capability)
    if not attr.ancestors:  # the root
        attr.guarantee = guarantees
        attr.deserved = deserved
    for child in attr.children:
        real = add(exceeded(attr.real_capability, guarantees), child.guarantee)
        child.real_capability = cap(real, child.capability, missing_unlimited=True)
    for child in attr.children:
        _check(child)


def _max(left: Mapping[str, float], right: Mapping[str, float]) -> Res:
    """helpers.Max: each resource's larger, over both."""
    return {n: max(left.get(n, 0.0), right.get(n, 0.0)) for n in sorted({*left, *right, *BASIC})}


def _inherit(own: Res, parent: Mapping[str, float]) -> Res:
    """A child's capability: its parent's cpu and memory where it gives none or ≤ 0, and its
    parent's other resources where it does not name them."""
    out = dict(own)
    for name in BASIC:
        if out.get(name, 0.0) <= 0:
            out[name] = parent.get(name, 0.0)
    for name, value in parent.items():
        out.setdefault(name, value)
    return out
