"""Volcano's preempt and reclaim actions (volcano v1.15.1, pkg/scheduler/actions/preempt/
preempt.go and actions/reclaim/reclaim.go), after allocate in the same session.

- Preemptors: Pending tasks of jobs that are admitted (PodGroup not Pending: a group, or a
  pod of no group, that enqueue left Pending is skipped), valid (gang's JobValid, each
  task role first: CheckTaskValid) and
  starving (JobStarving: the priority plugin's ready + pipelined < all tasks, and, unless
  `job_starving` is off, gang's ready + pipelined < minAvailable); a task with
  preemptionPolicy Never is skipped. Jobs in JobOrderFn order (priority, then gang's not
  ready first, drf's lower share, the older), tasks in task order; a job's pipelines and
  evictions commit only if the job ends pipelined (gang: ready + pipelined >=
  minAvailable, and each task role at its minimum: CheckTaskPipelined), else they are
  discarded. preempt keeps one predicate helper for the whole action: a node that failed
  the predicates for a task stays failed for the later tasks of its job and role
  (util/predicate_helper.go; reclaim makes one per task).
- preempt's pass within jobs: then every job of the queue starving when the action began
  tries its tasks still Pending again, each in a statement of its own that commits when the
  task is pipelined, whatever the gang; the first task not pipelined ends the job's pass.
  Its victims would be the job's own tasks: none are counted (not modelled).
- Nodes: every node whose predicates do not answer UnschedulableAndUnresolvable (node
  affinity, taints and cordons do; the vGPU filter answers Unschedulable,
  api/devices/nvidia/vgpu/device_info.go FilterNode, so full nodes stay candidates), less
  those allocate's fit error for the task holds as unresolvable (`predicates`), taken by
  name (upstream orders them by its node-order plugins' scores: not modelled).
- The node's sums (`board`): Volcano's Resreq of each pod, as its spec writes it (the
  vGPU count, one card's memory and cores, one pod), against the node's allocatable less
  every pod's: looser than the cards where a pod takes a whole card or several.
- preempt: victims Running and preemptable (`volcano.sh/preemptable`), in the preemptor's
  queue, of another job, as ssn.Preemptable votes (`votes`: the first tier's priority, gang
  where `preemptable` is on, conformance; where it leaves none, the second tier's drf).
  ValidateVictims: the node's FutureIdle plus every victim must cover the request; then
  the victims go in BuildVictimsPriorityQueue's order until the queue is Allocatable and
  the request fits the node's sums (InitResreq <= FutureIdle). The cards are never
  rechecked: `helps` re-runs the card fit without the victims, and False is the useless
  eviction.
- reclaim: only where the preemptor's queue is not Overused and is Preemptive (proportion:
  the queue Open, allocated + request within deserved; capacity: never Overused, allocated +
  request within realCapability and within deserved in some resource the request asks);
  victims Running and preemptable in other queues that are reclaimable, as ssn.Reclaimable
  votes (gang and conformance; where they leave none, the queue plugin's, each victim in
  victim order judged on its queue's allocated less the victims before it: proportion's,
  the queue holds more than it deserves; capacity's, core.capacity); then the same sums,
  victims of different queues in reverse queue order (VictimQueueOrderFn: the lowest queue
  priority first, then the highest share, capacity's best-effort queues before the others
  on a tie, then the queue listed last), then in reverse JobOrderFn.

Not modelled: tiers other than Volcano's default ones, victims within the preemptor's own
job, topology-aware preemption, the capacity plugin's hierarchical queues, the `pods`
resource in the queues' arithmetic (deserved, Allocatable, Overused: core.queues' and
core.capacity's, in `queues`). Both actions take queue by queue, each queue's key
(QueueOrderFn) as the action begins: upstream's heap compares shares that move as it pops.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from advisor.core.jobs import GroupState
from advisor.core.model import Cluster, Pod
from advisor.core.preemption.board import Board, FloatArray, covers
from advisor.core.preemption.order import jobs_of, standing, victim_order
from advisor.core.preemption.predicates import Predicates
from advisor.core.preemption.queues import QueueBook
from advisor.core.preemption.verdict import Preemption
from advisor.core.preemption.votes import Job, preemptable, reclaimable
from advisor.core.roles import roles_ready, roles_valid
from advisor.core.state import BoolArray


@dataclass(frozen=True, slots=True)
class Options:
    preempt: bool
    reclaim: bool
    gang_preemptable: bool
    gang_starving: bool


def judge_volcano(
    board: Board,
    cluster: Cluster,
    unplaced: Sequence[Pod],
    placed: frozenset[str],
    outcomes: Mapping[str, GroupState],
    options: Options,
    dropped: Mapping[str, BoolArray],
) -> dict[str, Preemption]:
    """`dropped`: per Pending pod with a fit error from allocate, the nodes both actions
    drop first (`predicates`)."""
    jobs, job_of = jobs_of(cluster, unplaced, placed, outcomes)
    members: dict[str, tuple[str, list[Pod]]] = {}
    for pod in cluster.pods:
        job = job_of[pod.name]
        members.setdefault(job.key, (job.queue, []))[1].append(pod)
    holding = {p.name for p in cluster.pods if p.running or p.name in placed}
    book = QueueBook(cluster, members.values(), holding)
    verdicts: dict[str, Preemption] = {}
    order = sorted(jobs.values(), key=lambda j: (-j.priority, *standing(board, j)))
    for action in ("preempt", "reclaim"):
        if not getattr(options, action):
            continue
        starving = [j for j in order if _job_refusal(j, options, book) is None]
        # preempt's one predicate helper for the whole action (preempt.go Execute);
        # reclaim makes one per task, so nothing carries over there
        helper = Predicates(dropped, {} if action == "preempt" else None)
        for queue in _queues_in_order(book, order):
            for job in order:
                if job.queue == queue:
                    _job_pass(board, book, job, job_of, options, action, verdicts, helper)
            for job in starving if action == "preempt" else ():
                if job.queue == queue:
                    _within_job(board, book, job, job_of, options, verdicts, helper)
    return verdicts


def _queues_in_order(book: QueueBook, order: Sequence[Job]) -> list[str]:
    """Both actions take queue by queue (preempt.go and reclaim.go Execute): the queues of
    their jobs by QueueOrderFn as the action begins; each queue's jobs (and preempt's pass
    within them) before the next queue. One the session does not know comes last: its jobs
    are refused whole."""
    queues = list(dict.fromkeys(j.queue for j in order))
    known = sorted((book.queue_order(q), q) for q in queues if book.knows(q))
    return [q for _, q in known] + [q for q in queues if not book.knows(q)]


def _within_job(
    board: Board,
    book: QueueBook,
    job: Job,
    job_of: Mapping[str, Job],
    options: Options,
    verdicts: dict[str, Preemption],
    helper: Predicates,
) -> None:
    """preempt's second pass (preempt.go Execute, "Preemption between Task within Job"):
    for every job starving when the action began, its tasks still Pending, each in its own
    statement, committed when the task is pipelined, whatever the gang; the job's pass ends
    at the first task that is not. Its victims are the job's own running tasks of lower
    priority: the advisor counts none (not modelled), so a task is pipelined only where
    the node's sums already cover it."""
    for pod in job.pending:
        earlier = verdicts.get(pod.name)
        if not _open(earlier):
            continue
        if pod.preemption_policy == "Never":
            return  # taskEligibleToPreempt refuses: not assigned
        found = _task(board, book, job, pod, job_of, options, "preempt", helper, True)
        if found.node is None:
            return
        job.waiting += 1
        verdicts.update(_merge(verdicts, {pod.name: found}))


def _job_pass(
    board: Board,
    book: QueueBook,
    job: Job,
    job_of: Mapping[str, Job],
    options: Options,
    action: str,
    verdicts: dict[str, Preemption],
    helper: Predicates,
) -> None:
    todo = [p for p in job.pending if _open(verdicts.get(p.name))]
    if not todo:
        return
    refusal = _job_refusal(job, options, book)
    if refusal is not None:
        for pod in todo:
            verdicts[pod.name] = Preemption("not-eligible", refusal)
        return
    saved = (board.snapshot(), book.snapshot(), job.waiting)
    tried: dict[str, Preemption] = {}
    for pod in todo:
        if not job.starving(options.gang_starving):
            tried[pod.name] = Preemption(
                "not-eligible", f"its job is no longer starving: {_counts(job)}"
            )
            continue
        if pod.preemption_policy == "Never":
            tried[pod.name] = Preemption(
                "not-eligible",
                "not eligible to preempt other tasks due to preemptionPolicy is Never",
            )
            continue
        tried[pod.name] = _task(board, book, job, pod, job_of, options, action, helper)
        if tried[pod.name].node is not None:
            job.waiting += 1
    if job.ready + job.waiting >= job.min_member and _roles_pipelined(job, verdicts, tried):
        verdicts.update(_merge(verdicts, tried))  # gang's JobPipelined: commit
        return
    board.restore(saved[0])
    book.restore(saved[1])
    job.waiting = saved[2]
    discarded = (
        f"{action} would pipeline {sum(v.node is not None for v in tried.values())} of the "
        f"{job.min_member - job.ready} members its gang still needs ({_counts(job)}), so "
        "Volcano discards the statement and evicts nobody"
    )
    for name, verdict in tried.items():
        tried[name] = Preemption("no-victims", discarded) if verdict.node is not None else verdict
    verdicts.update(_merge(verdicts, tried))


def _roles_pipelined(
    job: Job, verdicts: Mapping[str, Preemption], tried: Mapping[str, Preemption]
) -> bool:
    """gang's JobPipelined beside the count: CheckTaskPipelined, each task role's minimum
    among its members running, placed or pipelined (api/job_info.go)."""
    if not job.min_task_member:
        return True
    waiting = {p.name for p in job.pending}
    held = [
        p
        for p in job.members
        if p.name not in waiting
        or ((v := tried.get(p.name) or verdicts.get(p.name)) is not None and v.node is not None)
    ]
    return roles_ready(job.min_member, job.min_task_member, held)


def _task(
    board: Board,
    book: QueueBook,
    job: Job,
    pod: Pod,
    job_of: Mapping[str, Job],
    options: Options,
    action: str,
    helper: Predicates,
    within: bool = False,
) -> Preemption:
    """One task's attempt, node by node (`within`: preempt's pass within the job), on the
    nodes the action's predicate bookkeeping (`helper`) leaves it."""
    request = board.request(pod)
    reclaim = action == "reclaim"
    if reclaim and book.overused(job.queue):
        return Preemption("no-victims", f"reclaim: queue {job.queue} is overused")
    state = book.state(job.queue)
    if state != "Open":  # the queue plugin's queueAllocatable, which both actions ask
        return Preemption(
            "no-victims", f"{action}: queue {job.queue} is {state}, not Open: it takes no task"
        )
    why = book.unpreemptive(job.queue, pod) if reclaim else None
    if why is not None:
        return Preemption("no-victims", f"reclaim: queue {job.queue} may not reclaim: {why}")
    st = board.state
    allowed = np.flatnonzero(helper.nodes(st, job.key, pod))
    nodes = sorted((int(i) for i in allowed), key=lambda i: int(st.name_rank[i]))
    for node in nodes:
        residents = [p for p in board.residents(node) if p.preemptable]
        if reclaim:
            pool = [
                p
                for p in residents
                if job_of[p.name].queue != job.queue and book.reclaimable(job_of[p.name].queue)
            ]
            if not pool:
                continue
            pool.sort(key=victim_order(board, book, job_of, job.queue))
            victims = reclaimable(board, pod, pool, job_of, book)
        elif within:
            victims = []
        else:
            pool = [
                p
                for p in residents
                if job_of[p.name].queue == job.queue and job_of[p.name].key != job.key
            ]
            victims = preemptable(board, pod, job, pool, job_of, options.gang_preemptable)
        idle = board.idle(node)
        held = {v.name: board.held(v) for v in victims}
        if not covers(request, idle + sum(held.values(), np.zeros_like(idle))):
            continue  # util.ValidateVictims
        victims.sort(key=victim_order(board, book, job_of, job.queue))
        before = book.snapshot()

        def enough(room: FloatArray) -> bool:
            return covers(request, room) and (reclaim or book.allocatable(job.queue, pod))

        chosen: list[Pod] = []
        while victims and not enough(idle):
            victim = victims.pop(0)
            chosen.append(victim)
            idle = idle + held[victim.name]
            book.move(job_of[victim.name].queue, victim, evicted=True)
        if not enough(idle):
            book.restore(before)
            continue
        book.move(job.queue, pod, evicted=False)
        helps = board.settle(pod, node, chosen)
        name = st.node_names[node]
        if not chosen:
            return _pipelined(action, name, helps, within)
        return Preemption(
            "evicts",
            _evicts_text(action, len(chosen), name, helps),
            name,
            tuple(v.name for v in chosen),
            helps,
        )
    scope = "in other reclaimable queues" if reclaim else f"in queue {job.queue}"
    return Preemption(
        "no-victims",
        f"{action}: no node has victims {scope} that free enough for it (lower job "
        "priority, preemptable, and what the gang and conformance plugins allow)",
    )


def _pipelined(action: str, node: str, helps: bool, within: bool) -> Preemption:
    """A pipeline without victims: the node's sums cover the pod."""
    by = f"{action}'s pass within its job" if within else action
    if helps:
        after = "it fits its cards there and is bound in a later session"
    else:
        after = "its cards do not, and Volcano never rechecks them: it stays Pending"
    text = (
        f"{by}: Volcano pipelines it on {node} without evicting anyone: the node's sums "
        f"cover it; {after}"
    )
    return Preemption("no-victims", text, node, (), helps)


def _evicts_text(action: str, n: int, node: str, helps: bool) -> str:
    text = f"Volcano's {action} evicts {n} pod{'s' if n != 1 else ''} on {node}"
    if helps:
        return text + " and then the pod fits its cards there"
    return (
        text + ": the eviction stops once the node's SUM covers the request "
        "(util.ValidateVictims), but the cards still do not fit the pod, so it stays "
        "Pending after the eviction"
    )


def _job_refusal(job: Job, options: Options, book: QueueBook) -> str | None:
    """Why preempt and reclaim skip the whole job, or None."""
    if not book.knows(job.queue):  # not in the session: the cache's snapshot skips it
        return f"queue {job.queue} not found: Volcano skips the job"
    if job.outcome == "not-admitted":
        return "its PodGroup is not admitted (phase Pending): preempt and reclaim skip it"
    # gang's validJobFn, as JobValid runs it here (preempt.go, reclaim.go): each task role
    # (CheckTaskValid: every member counts, whatever its status), then the count
    if not roles_valid(job.min_member, job.min_task_member, job.members):
        return "Not enough valid pods of each task for gang-scheduling"
    valid = job.ready + len(job.pending)
    if valid < job.min_member:
        return f"Not enough valid tasks for gang-scheduling, valid: {valid}, min: {job.min_member}"
    if not job.starving(options.gang_starving):
        return f"its job is not starving: {_counts(job)}"
    return None


def _counts(job: Job) -> str:
    return f"ready {job.ready} + pipelined {job.waiting}, minAvailable {job.min_member}"


def _open(verdict: Preemption | None) -> bool:
    """A pod preempt left without a pipeline goes on to reclaim."""
    return verdict is None or verdict.node is None


def _merge(
    done: Mapping[str, Preemption], tried: Mapping[str, Preemption]
) -> dict[str, Preemption]:
    """Reclaim's verdict after preempt's: a pipeline wins; two refusals read together."""
    out = {}
    for name, verdict in tried.items():
        earlier = done.get(name)
        if earlier is None or verdict.node is not None or earlier.verdict == "not-eligible":
            out[name] = verdict
        else:
            out[name] = Preemption(verdict.verdict, f"{earlier.message}; {verdict.message}")
    return out
