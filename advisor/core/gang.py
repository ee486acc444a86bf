"""Gangs in the simulated cycle (docs/design.md §10.2), for the profiles that run Volcano's
session: jobs in Volcano's order, each not-ready job's members placed all-or-nothing.

Read from Volcano v1.15.1:

- A job is its PodGroup; a Pending pod without one is a job of its own (min_member 1), as
  Volcano's controller gives each owner an automatic group.
- Valid (plugins/gang/gang.go, validJobFn): running + Pending members ≥ min_member, else
  every member waits: "Not enough valid tasks for gang-scheduling, valid: v, min: m".
- Job order in one queue (JobOrderFn of the priority and gang plugins, then creation): job
  priority, not-ready jobs first, then the order the jobs appear.
- allocate (actions/allocate/allocate.go, allocateResourcesForTasks): a job's tasks in task
  order (core.task_order: priority, then a Volcano Job pod's index, then creation), each
  placed if it fits; the job stops at ready (running +
  placed ≥ min_member), commits, and comes back for one more task per turn; a job that ends
  not ready is discarded (`stmt.Discard()`): it holds no cards, which later jobs see.
- A task that fits no node ends the job's turn when every member is needed (api/job_info.go
  NeedContinueAllocating: false when MinAvailable == len(Tasks)); else the next is tried.
  A task its queue refuses never ends it (allocate `continue`s before the predicates).
- A discarded member that fitted is worded as PodGroup's condition words it (api/job_info.go,
  FitError and TaskSchedulingReason): "u/N tasks in gang unschedulable: pod group is not
  ready, …"; a member that fails on its own keeps its own cause; a member never tried gets
  cause `gang` and the job's FitError, the message upstream writes on its pod
  (cache.go RecordJobStatusEvent: no fit error of its own, so `job.FitError()`).

Task roles (minTaskMember, the pods' `volcano.sh/task-spec`) follow core.roles: each role's
own minimum in validity and readiness where Volcano checks it, a role's later tasks skipped
once one failed, and when a failure ends the job's turn.

Queues, enqueue (core.session, core.queues) and HAMi's namespace quotas (core.quota) decide
before the cards: a task its queue refuses, or its quota, gets cause `queue` or `quota`.
Not modelled here: pipelining; preemption is judged after the cycle, on its final state
(`core.preemption`). Every output judges by `judge`; plans never leave a running gang below
min_member unless they evict it whole, rescue a Pending gang only whole and are checked by
`judge` (`core.plan.board`), and scale-down never moves a member (`model.gang_members`), so
none of them contradicts it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace

import numpy as np

from advisor.core import preemption
from advisor.core.diagnose import Cycle
from advisor.core.diagnosis import Cause, Diagnosis, PodDiagnosis
from advisor.core.jobs import DEFAULT_QUEUE, GroupOutcome, GroupState
from advisor.core.mig_cycle import MigBook
from advisor.core.model import Cluster, Placement, Pod
from advisor.core.occupancy import build_state
from advisor.core.preemption.predicates import FitErrors
from advisor.core.profiles import profile_of
from advisor.core.quota import QuotaBook
from advisor.core.roles import Roles, skip_message
from advisor.core.session import QueueSession
from advisor.core.state import BoolArray, CardState, Shape
from advisor.core.task_order import task_order
from advisor.defaults import DEFAULT_NODE_DETAIL
from advisor.errors import known


@dataclass(frozen=True, slots=True)
class JobsDiagnosis:
    """Each Pending pod's verdict (cause `gang` among them) in the order the cycle met them,
    the group of each, and each group's outcome."""

    diagnosis: Diagnosis
    groups: tuple[GroupOutcome, ...]
    group_of: dict[str, str | None] = field(default_factory=dict)
    # Groups Volcano's enqueue leaves Pending for the cluster's size alone, which the cycle
    # tries and words by its nodes instead (core.session `left_to_nodes`); a pod of no
    # group (its own PodGroup in Volcano) by its name.
    left_to_nodes: frozenset[str] = frozenset()
    # Pending pods whose queue's Allocatable Volcano refuses for the cluster's size alone,
    # which the cycle words by its nodes (core.session `sized`).
    sized: frozenset[str] = frozenset()
    # Pending pods Volcano's allocate pops and asks its queue about, as the cycle predicts
    # (allocate.go allocateResourcesForTasks): not those of a job it never pops (invalid,
    # held by its queue, or left Pending by enqueue) nor those left when a job's turn ends
    # (NeedContinueAllocating). What Volcano records for a pod follows from it (a member
    # never reached gets the job's FitError), whatever cause the advisor explains it by.
    reached: frozenset[str] = frozenset()
    # Pending pods whose job Volcano's enqueue leaves Pending (allocate never sees it);
    # what Volcano records for them is their queue's. A job whose queue allocate passes
    # over as overused is not among them: that pod's record is the job's FitError.
    not_admitted: frozenset[str] = frozenset()


@dataclass(slots=True)
class _Job:
    name: str | None  # None: a pod without a group
    min_member: int
    priority: int
    first: int  # the order the job appears in (creation order)
    ready: int
    tasks: list[Pod]
    placed: int = 0
    members: int = 0  # running + Pending: len(JobInfo.Tasks)
    valid_checked: bool = False
    queue: str = DEFAULT_QUEUE
    roles: Roles | None = None  # its task roles (core.roles); set by `_jobs`
    # its members with a fit error this session, first per role what a skipped task echoes
    failures: list[tuple[PodDiagnosis, list[int], Shape]] = field(default_factory=list)

    def key(self) -> tuple[int, bool, int]:
        return (-self.priority, self.ready + self.placed >= self.min_member, self.first)

    def role_book(self) -> Roles:
        return known(self.roles, "a job's task roles")

    def is_ready(self) -> bool:
        """The gang plugin's JobReadyFn: the count (IsReady) and each role (CheckTaskReady)."""
        return self.ready + self.placed >= self.min_member and self.role_book().ready_roles()


def diagnose_jobs(
    cluster: Cluster,
    *,
    node_detail_limit: int | None = DEFAULT_NODE_DETAIL,
    state: CardState | None = None,
) -> JobsDiagnosis:
    """One cycle with Volcano's job semantics (under a profile that runs Volcano's session;
    under another, each pod is a job of its own, which is §3's cycle). `state`: the running
    pods' cards (`build_state(cluster)`), which the cycle takes over; built when not given."""
    state = build_state(cluster) if state is None else state
    cycle = Cycle(state, cluster.policy, node_detail_limit, MigBook(cluster, state))
    volcano = profile_of(cluster.scheduler).session.volcano
    jobs = _jobs(cluster, volcano)
    session = QueueSession(cluster, jobs)  # queues and enqueue (core.session)
    quotas = QuotaBook(cluster, cycle.state)  # HAMi's namespace quotas (core.quota)
    verdicts: list[PodDiagnosis] = []
    outcomes: dict[str, GroupState] = {}
    dropped: dict[str, BoolArray] = {}  # per pod with a fit error, its unresolvable nodes
    fit_errors = FitErrors(cluster, cycle.mig)
    reached: dict[int, list[str]] = {}  # per job, its pods allocate popped (`reached`)
    while (i := session.pop()) is not None:
        job = jobs[i]
        roles = job.role_book()
        valid = job.ready + len(job.tasks) + job.placed
        if not job.valid_checked and (not roles.valid() or valid < job.min_member):
            # the gang plugin's validJobFn: each role (CheckTaskValid), then the count
            message = (
                "Not enough valid pods of each task for gang-scheduling"
                if not roles.valid()
                else f"Not enough valid tasks for gang-scheduling, valid: {valid}, "
                f"min: {job.min_member}"
            )
            verdicts.extend(
                cycle.fails_alone(p) or PodDiagnosis(p, "gang", message) for p in job.tasks
            )
            if job.name is not None:
                outcomes[job.name] = "admitted"
            session.done()
            continue
        job.valid_checked = True
        tried: list[tuple[PodDiagnosis, list[int], Shape]] = []
        tried_before = job.failures  # fit errors of earlier turns count (NodesFitErrors)
        cache: dict[str, BoolArray] = {}  # per role, the nodes that failed one of its tasks
        codes: dict[str, BoolArray] = {}  # per role, which of those failed unresolvable
        while job.tasks:  # until a placement leaves the job ready, or NeedContinueAllocating
            pod = job.tasks.pop(0)
            reached.setdefault(i, []).append(pod.name)
            held = session.refusal(job, pod)  # the queue's Allocatable, then HAMi's quota
            cause: Cause = "queue"
            if held is None:
                held, cause = quotas.refusal(pod), "quota"
            if held is None and roles.skipped(pod):  # its role already failed: not tried
                first = next(v for v, _, _ in tried_before if v.pod.role == pod.role)
                verdict = replace(first, pod=pod, message=skip_message(pod))
                tried.append((verdict, [], Shape.of_pod(pod)))
                tried_before.append((verdict, [], Shape.of_pod(pod)))
                continue
            if held is not None:
                verdict = PodDiagnosis(pod, cause, held)
            else:  # the nodes its role failed this turn stay failed (predicate error cache)
                verdict = cycle.visit(pod, cache.get(pod.role or ""))
                placed = verdict.placement
                sized = pod.name in session.sized
                if placed is not None and sized and (held := session.unsized(job, pod)):
                    # Volcano's queue refused it; the nodes take it, so not for their size
                    positions = _positions(cycle, placed)
                    cycle.release(pod, placed, positions, Shape.of_pod(pod))
                    verdict = PodDiagnosis(pod, "queue", held)
            tried.append((verdict, _positions(cycle, verdict.placement), Shape.of_pod(pod)))
            if verdict.placement is not None:
                if pod.role:
                    failed_here = ~cycle.passing()
                    known = cache.get(pod.role)
                    if volcano:  # each node keeps the first error its role met there
                        mine = failed_here & fit_errors.unresolvable(cycle.state, pod)
                        codes[pod.role] = _first(known, codes.get(pod.role), mine)
                    cache[pod.role] = failed_here if known is None else known | failed_here
                job.placed += 1
                roles.place(pod)
                session.placed(job, pod)
                quotas.add(pod, verdict.placement)
                if job.is_ready():
                    break
            elif held is None and pod.name not in session.sized:
                # a fit error; a member Volcano's queue refuses (for the cluster's size:
                # worded by the nodes) has none, as allocate `continue`s before predicates
                roles.fail(pod)
                tried_before.append(tried[-1])
                if volcano:  # its NodesFitErrors: what preempt and reclaim drop first
                    mine = fit_errors.unresolvable(cycle.state, pod)
                    role = pod.role or ""  # a pod of no role: no cache
                    dropped[pod.name] = _first(cache.get(role), codes.get(role), mine)
                if job.min_member >= job.members or not roles.go_on():
                    break  # NeedContinueAllocating: the job's turn ends here
        refused = session.left_to_nodes.get(i)
        if refused is not None and job.is_ready():
            # Volcano's enqueue refused it and allocate never tries it: where the nodes
            # would take it, the cluster's size does not explain it, so it stays Pending
            for verdict, positions, shape in tried:
                if verdict.placement is not None:
                    cycle.release(verdict.pod, verdict.placement, positions, shape)
                    session.placed(job, verdict.pod, placed=False)
                    roles.place(verdict.pod, placed=False)
            held_pods = [v.pod for v, _, _ in tried] + job.tasks
            job.tasks, job.placed = [], 0
            verdicts.extend(PodDiagnosis(p, "queue", refused) for p in held_pods)
            for key in _keys(job.name, held_pods):
                outcomes[key] = "not-admitted"
            session.done()
            continue
        if job.is_ready():
            verdicts.extend(v for v, _, _ in tried)
            if job.tasks:  # a ready job comes back for one more task per turn
                session.again(i)
            if job.name is not None:
                outcomes[job.name] = "placed" if job.placed else "admitted"
            session.done()
            continue
        for verdict, _, _ in tried:
            if verdict.placement is not None:
                session.placed(job, verdict.pod, placed=False)
        verdicts.extend(_rolled_back(cycle, job, tried))
        if job.name is not None:  # nothing placed: nothing to roll back
            outcomes[job.name] = "rolled-back" if job.placed else "admitted"
        session.done()
    for i, why in sorted(session.held.items()):  # never tried: not admitted, or its queue
        verdicts.extend(PodDiagnosis(p, "queue", why) for p in jobs[i].tasks)
        for key in _keys(jobs[i].name, jobs[i].tasks):
            outcomes[key] = "not-admitted" if i in session.not_admitted else "admitted"
    groups = {g.name: g for g in cluster.jobs.groups}
    running = Counter(p.group for p in cluster.running if p.group is not None)
    pending = Counter(p.group for p in cluster.pending if p.group is not None)
    listed = tuple(
        GroupOutcome(
            name,
            groups[name].queue,
            groups[name].min_member,
            running[name],
            pending[name],
            outcomes.get(name, "placed"),
        )
        for name in sorted(pending)
        if volcano
    )
    grouped = volcano and bool(cluster.jobs.groups)
    # Preempt and reclaim skip a job enqueue left Pending, whatever the cycle made of it.
    skipped = {jobs[i].name or cluster.pods[jobs[i].first].name for i in session.left_to_nodes}
    judged: dict[str, GroupState] = {**outcomes, **dict.fromkeys(skipped, "not-admitted")}
    verdicts = _with_preemption(cluster, cycle, verdicts, judged, dropped)
    return JobsDiagnosis(
        Diagnosis(cluster.policy, tuple(verdicts), listed, grouped),
        listed,
        {p.name: p.group for p in cluster.pending},
        frozenset(skipped),
        frozenset(session.sized),
        frozenset(
            n for i, names in reached.items() if i not in session.left_to_nodes for n in names
        ),
        frozenset(p.name for i in session.not_admitted for p in jobs[i].tasks),
    )


def judge(
    cluster: Cluster,
    *,
    node_detail_limit: int | None = DEFAULT_NODE_DETAIL,
    state: CardState | None = None,
) -> Diagnosis:
    """Each Pending pod's verdict as every output gives it: `diagnose_jobs`'s, which is §3's
    one-pod cycle wherever no gang is judged."""
    return diagnose_jobs(cluster, node_detail_limit=node_detail_limit, state=state).diagnosis


def _first(known: BoolArray | None, codes: BoolArray | None, mine: BoolArray) -> BoolArray:
    """Per node, whether the error allocate's predicate helper holds is unresolvable: a
    node an earlier task of the role failed (`known`) echoes that task's error (`codes`,
    util/predicate_helper.go, read once the role has failed somewhere); else the task's
    own (`mine`)."""
    if known is None or codes is None:
        return mine
    return np.asarray(np.where(known, codes, mine), dtype=np.bool_)


def _keys(name: str | None, pods: list[Pod]) -> list[str]:
    """Where a job's outcome is kept: its group, or for a pod of no group (its own
    PodGroup in Volcano, which enqueue admits or not like any other) the pod's name;
    `listed` reads the groups' only."""
    return [name] if name is not None else [p.name for p in pods]


def _with_preemption(
    cluster: Cluster,
    cycle: Cycle,
    verdicts: list[PodDiagnosis],
    outcomes: dict[str, GroupState],
    dropped: dict[str, BoolArray],
) -> list[PodDiagnosis]:
    """Each pod the cycle left unplaced gains its preemption verdict, judged on the cycle's
    final state (core.preemption); a pod placed keeps None. `dropped`: per pod with a fit
    error, the nodes it holds as unresolvable."""
    unplaced = [v.pod for v in verdicts if v.placement is None and v.cause != "invalid"]
    placed = {v.pod.name: v.placement for v in verdicts if v.placement is not None}
    found = preemption.judge(cluster, cycle.state, unplaced, placed, outcomes, dropped, cycle.mig)
    return [
        replace(v, preemption=found[v.pod.name]) if v.pod.name in found else v for v in verdicts
    ]


def _jobs(cluster: Cluster, volcano: bool) -> list[_Job]:
    groups = {g.name: g for g in cluster.jobs.groups} if volcano else {}
    running = Counter(p.group for p in cluster.running if p.group is not None)
    running_pods: dict[str, list[Pod]] = {}
    for pod in cluster.running:
        if pod.group is not None:
            running_pods.setdefault(pod.group, []).append(pod)
    jobs: dict[str, _Job] = {}
    order: list[_Job] = []
    for index, pod in enumerate(cluster.pods):
        if pod.running:
            continue
        group = groups.get(pod.group or "")
        if group is None:
            order.append(_Job(None, 1, pod.priority, index, 0, [pod]))
            continue
        job = jobs.get(group.name)
        if job is None:
            job = _Job(group.name, group.min_member, group.priority, index, running[group.name], [])
            job.queue = group.queue
            jobs[group.name] = job
            order.append(job)
        job.tasks.append(pod)
    for job in order:  # task order (core.task_order)
        job.members = job.ready + len(job.tasks)
        mins = groups[job.name].min_task_member if job.name is not None else {}
        job.roles = Roles.of(job.min_member, mins, running_pods.get(job.name or "", ()), job.tasks)
        job.tasks = task_order(job.tasks)
    return order


def _positions(cycle: Cycle, placement: Placement | None) -> list[int]:
    return [] if placement is None else cycle.state.positions(placement)


def _rolled_back(
    cycle: Cycle, job: _Job, tried: list[tuple[PodDiagnosis, list[int], Shape]]
) -> list[PodDiagnosis]:
    """The job did not reach min_member: its placements are released (Statement.Discard),
    the members that fitted get cause `gang` in the PodGroup condition's words, the others
    tried keep their own cause, those never tried (`job.tasks` left) get the job's FitError
    unless they fail on their own (invalid, unsatisfiable)."""
    for verdict, positions, shape in tried:
        if verdict.placement is not None:
            cycle.release(verdict.pod, verdict.placement, positions, shape)
    untried, job.tasks = job.tasks, []
    fitted = [v for v, _, _ in tried if v.placement is not None]
    failed = [v for v, _, _ in tried if v.placement is None]
    total = job.ready + len(tried) + len(untried)
    unready = job.min_member - (len(fitted) + job.ready)
    histogram = {"Pending": len(tried) + len(untried), "minAvailable": job.min_member}
    if job.ready:
        histogram["Running"] = job.ready
    counts = ", ".join(sorted(f"{n} {what}" for what, n in histogram.items()))
    pending = {"Schedulable": len(fitted), "Unschedulable": len(failed) + len(untried)}
    states = ", ".join(sorted(f"{n} {what}" for what, n in pending.items() if n))
    origin = ""
    # the first task with a fit error of its own (one its queue refused has none)
    fit_failed = [v for v in failed if v.cause not in ("queue", "quota")] or failed
    if fit_failed:
        first = fit_failed[0]
        origin = f". Origin reason is {first.pod.name.split('/', 1)[1]}: {first.message}"
    fit_error = f"pod group is not ready, {counts}; Pending: {states}{origin}"
    condition = f"{unready}/{total} tasks in gang unschedulable: {fit_error}"
    out = []
    for verdict, _, _ in tried:
        if verdict.placement is None:
            out.append(verdict)
            continue
        pod = verdict.pod
        where = verdict.placement.node
        message = (
            f"Pod {pod.name} can possibly be assigned to {where}, once minAvailable is "
            f"satisfied ({condition})"
        )
        out.append(replace(verdict, cause="gang", message=message, placement=None))
    # a member never tried that would fail on its own keeps its own cause (§10.3)
    out.extend(cycle.fails_alone(pod) or PodDiagnosis(pod, "gang", fit_error) for pod in untried)
    return out
