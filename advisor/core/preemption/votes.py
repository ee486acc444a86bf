"""The votes on Volcano's victims, tier by tier, for `volcano`'s preempt and reclaim: the
first tier's priority, gang and conformance plugins (PreemptableFn, ReclaimableFn), then the
second's drf (preempt) or proportion (reclaim) where the first leaves none."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Set
from dataclasses import dataclass, field

import numpy as np

from advisor.core.jobs import GroupState
from advisor.core.model import PROTECTED_NAMESPACES, Pod
from advisor.core.preemption.board import Board, FloatArray
from advisor.core.preemption.queues import QueueBook

# conformance skips system-cluster-critical and system-node-critical pods; the advisor knows
# a pod's priority, not its class: these classes' values start here.
CRITICAL_PRIORITY = 2_000_000_000


@dataclass(slots=True)
class Job:
    key: str  # its PodGroup, or the pod itself for a pod without one
    queue: str
    min_member: int
    priority: int
    ready: int  # running before the cycle, and placed by it
    pending: list[Pod] = field(default_factory=list)  # not placed by the cycle, task order
    members: list[Pod] = field(default_factory=list)  # all its pods
    outcome: GroupState | None = None
    waiting: int = 0  # pipelined by preempt or reclaim
    min_task_member: Mapping[str, int] = field(default_factory=dict)  # its roles' minimums

    def starving(self, gang_starving: bool) -> bool:
        # priority's test is always true while a task is pending; gang's counts minAvailable
        return not gang_starving or self.ready + self.waiting < self.min_member


def preemptable(
    board: Board, pod: Pod, job: Job, pool: list[Pod], job_of: Mapping[str, Job], gang_on: bool
) -> list[Pod]:
    """ssn.Preemptable over Volcano's default tiers: the first (priority, gang where its
    `preemptable` is on, conformance) decides unless it leaves no victim; then the second's
    drf."""
    first = [lambda ps: [p for p in ps if job_of[p.name].priority < job.priority]]
    if gang_on:
        first.append(lambda ps: _gang(ps, job_of, board.evicted))
    first.append(_conformance)
    return _tiers(pool, first, [lambda ps: _drf(board, pod, job, ps, job_of)])


def reclaimable(
    board: Board, reclaimer: Pod, pool: list[Pod], job_of: Mapping[str, Job], book: QueueBook
) -> list[Pod]:
    """ssn.Reclaimable: gang and conformance first; then the queue plugin's (proportion's
    or capacity's: `QueueBook.victims`, on `pool` in victim order)."""
    first = [lambda ps: _gang(ps, job_of, board.evicted), _conformance]
    second: list[Vote] = [
        lambda ps: book.victims(
            reclaimer, job_of[reclaimer.name].queue, [(job_of[p.name].queue, p) for p in ps]
        )
    ]
    return _tiers(pool, first, second)


Vote = Callable[[list[Pod]], list[Pod]]


def _tiers(pool: list[Pod], *tiers: list[Vote]) -> list[Pod]:
    """framework session_plugins.go Preemptable / Reclaimable: in a tier, the first plugin's
    list, then its intersection with each next one's; a plugin with none ends the tier
    undecided, and so does an empty intersection, except that the tier's next plugin then
    starts the list afresh (`victims = nil`, then `if victims == nil { victims =
    candidates }`). The first tier with a list decides."""
    for tier in tiers:
        victims: list[Pod] | None = None
        for vote in tier:
            candidates = vote(pool)
            if not candidates:
                victims = None
                break
            if victims is None:
                victims = candidates
            else:
                names = {p.name for p in candidates}
                victims = [p for p in victims if p.name in names] or None
        if victims is not None:
            return victims
    return []


def _drf(board: Board, pod: Pod, job: Job, pool: list[Pod], job_of: Mapping[str, Job]) -> list[Pod]:
    """drf's preemptableFn: a victim whose job's dominant share, less the victim (and the
    victims of its job before it), stays at or above the preemptor's job's with the
    preemptor (within drf's shareDelta)."""
    total = board.total
    mine = share(board.allocated(job.members) + board.request(pod), total)
    left: dict[str, FloatArray] = {}
    out = []
    for victim in pool:
        key = job_of[victim.name].key
        if key not in left:
            left[key] = board.allocated(job_of[victim.name].members)
        left[key] = left[key] - board.request(victim)
        theirs = share(left[key], total)
        if mine < theirs or abs(mine - theirs) <= SHARE_DELTA:
            out.append(victim)
    return out


SHARE_DELTA = 0.000001  # drf.go shareDelta


def share(allocated: FloatArray, total: FloatArray) -> float:
    """drf calculateShare: the largest allocated / total over the cluster's resources
    (those it has at least 0.1 of); an unlimited one is no share."""
    named = total >= 0.1
    shares = np.divide(
        allocated[named],
        total[named],
        out=np.zeros(int(named.sum())),
        where=np.isfinite(total[named]),
    )
    return float(shares.max(initial=0.0))


def _conformance(pods: list[Pod]) -> list[Pod]:
    return [
        p
        for p in pods
        if p.namespace not in PROTECTED_NAMESPACES and p.priority < CRITICAL_PRIORITY
    ]


def _gang(pods: list[Pod], job_of: Mapping[str, Job], evicted: Set[str]) -> list[Pod]:
    """gang's preemptableFn: a victim's job keeps more than minAvailable ready
    (ReadyTaskNum, which no longer counts its tasks the session evicted: Releasing)."""
    gone = Counter(job_of[name].key for name in evicted)
    occupied: dict[str, int] = {}
    out = []
    for pod in pods:
        job = job_of[pod.name]
        occupied.setdefault(job.key, job.ready - gone[job.key])
        if occupied[job.key] > job.min_member:
            occupied[job.key] -= 1
            out.append(pod)
    return out
