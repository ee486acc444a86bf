"""The orders Volcano's preempt and reclaim walk (volcano v1.15.1): each pod's job as the
session builds it (`jobs_of`), JobOrderFn's keys after the job priority (`standing`), and
BuildVictimsPriorityQueue's order of victims (`victim_order`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from advisor.core.jobs import DEFAULT_QUEUE, GroupState
from advisor.core.model import Cluster, Pod
from advisor.core.preemption.board import Board
from advisor.core.preemption.queues import QueueBook
from advisor.core.preemption.votes import Job, share
from advisor.core.task_order import task_order


def victim_order(
    board: Board, book: QueueBook, job_of: Mapping[str, Job], queue: str
) -> Callable[[Pod], tuple[Any, ...]]:
    """BuildVictimsPriorityQueue's order as a key, first evicted smallest: victims of
    different queues in reverse QueueOrderFn (VictimQueueOrderFn: the lowest spec.priority,
    then the highest share, taken as the node's attempt starts, then the queue listed last),
    then reverse JobOrderFn (the lowest job priority, the ready, the highest share, the
    youngest), then reverse TaskOrderFn (core.task_order: the lowest pod priority, then the
    highest index or the youngest). Under
    capacity's hierarchy a victim whose queue shares a deeper ancestor with the task's
    (`queue`) comes first (core.capacity_tree)."""

    rank: dict[str, int] = {}  # each pod's place in its job's TaskOrderFn order

    def key(pod: Pod) -> tuple[Any, ...]:
        job = job_of[pod.name]
        order = book.victim_order(job.queue, queue)
        waiting, job_share, created = standing(board, job)
        if pod.name not in rank:
            rank.update((p.name, i) for i, p in enumerate(task_order(job.members)))
        return (
            order,
            job.priority, -waiting, -job_share, -created,
            -rank[pod.name],
        )  # fmt: skip

    return key


def standing(board: Board, job: Job) -> tuple[int, float, int]:
    """What ssn.JobOrderFn reads after the priority plugin's job priority, as a key that
    sorts first the job to schedule first: gang's (not ready first: ReadyTaskNum below
    minAvailable), drf's (the lower dominant share first), then the older PodGroup (its
    first pod's place in the listing)."""
    gone = sum(m.name in board.evicted for m in job.members)
    waiting = int(job.ready - gone < job.min_member)
    return (
        -waiting,
        share(board.allocated(job.members), board.total),
        min(board.order[m.name] for m in job.members),
    )


def jobs_of(
    cluster: Cluster,
    unplaced: Sequence[Pod],
    placed: frozenset[str],
    outcomes: Mapping[str, GroupState],
) -> tuple[dict[str, Job], dict[str, Job]]:
    """Every pod's job (running pods too: victims' jobs are judged by gang and priority)."""
    groups = {g.name: g for g in cluster.jobs.groups}
    jobs: dict[str, Job] = {}
    job_of: dict[str, Job] = {}
    for pod in cluster.pods:
        group = groups.get(pod.group or "")
        key = group.name if group is not None else pod.name
        job = jobs.get(key)
        if job is None:
            job = Job(
                key,
                group.queue if group is not None else DEFAULT_QUEUE,
                group.min_member if group is not None else 1,
                group.priority if group is not None else pod.priority,
                0,
                outcome=outcomes.get(key),
                min_task_member=group.min_task_member if group is not None else {},
            )
            jobs[key] = job
        if pod.running or pod.name in placed:
            job.ready += 1
        job.members.append(pod)
        job_of[pod.name] = job
    waiting = {p.name for p in unplaced}
    for pod in cluster.pods:
        if pod.name in waiting:
            job_of[pod.name].pending.append(pod)
    for job in jobs.values():  # each job's tasks in TaskOrderFn's order
        job.pending = task_order(job.pending)
    return {k: j for k, j in jobs.items() if j.pending}, job_of
