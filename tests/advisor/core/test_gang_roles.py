"""Task roles in the job cycle (advisor.core.roles, core.gang; docs/design.md §10.2): a
PodGroup's `min_task_member` (spec.minTaskMember) and its pods' `role`
(`volcano.sh/task-spec`). Volcano v1.15.1's allocate cases with roles converted
(pkg/scheduler/actions/allocate/allocate_test.go, TestAllocate, cited by name; their cpu
requests and node selectors become the pods' `resources` and `node_selector` beside a GPU
request), and hand cases for the rules of pkg/scheduler/api/job_info.go they leave out
(CheckTaskValid, CheckTaskReady, TaskHasFitErrors, NeedContinueAllocating)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from advisor.core.gang import diagnose_jobs
from advisor.core.jobs import GroupOutcome
from tests.advisor.core.test_gang import cluster, node, verdicts
from tests.advisor.core.test_gang import pod as gang_pod


def pod(name: str, role: str, *, selector: str | None = None, **kw: Any) -> dict[str, Any]:
    """A member of c1/pg1 with task role `role`, on nodes labelled nodeRole=`selector`."""
    out = gang_pod(name, role=selector, **kw)
    out["role"] = role
    return out


def group(min_member: int, roles: dict[str, int] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": "c1/pg1", "min_member": min_member}
    if roles is not None:
        out["min_task_member"] = roles
    return out


def messages(result: Any) -> dict[str, str]:
    return {d.pod.name: d.message for d in result.diagnosis.pods}


# -- Volcano's TestAllocate cases with roles -----------------------------------------------


def test_prepredicate_failed_node_selector_does_not_match() -> None:
    """TestAllocate "prepredicate failed: node selector does not match": minMember 1, p1
    (master) finds no master node, p2 (worker) binds to n1. The roles differ, so p1's
    failure does not skip p2 (TaskHasFitErrors is per role)."""
    result = diagnose_jobs(
        cluster(
            [node("n1", "2", role="worker")],
            [pod("c1/p1", "master", selector="master"), pod("c1/p2", "worker", selector="worker")],
            [group(1)],
        )
    )
    assert verdicts(result)["c1/p2"] == ("schedulable", "n1")
    assert verdicts(result)["c1/p1"][1] is None


def test_prepredicate_failed_and_tasks_not_used_up_continue_until_min_member_meet() -> None:
    """TestAllocate "prepredicate failed and tasks are not used up, continue on until min
    member meet": minMember 2, minTaskMember {master: 1, worker: 1}. p0 binds n1; p1
    (master) finds n1 full, but master has its one (NeedContinueAllocating goes on); p2
    binds n2 and the job is ready, each role at its minimum."""
    result = diagnose_jobs(
        cluster(
            [node("n1", "1", role="master"), node("n2", "1", role="worker")],
            [
                pod("c1/p0", "master", selector="master"),
                pod("c1/p1", "master", selector="master"),
                pod("c1/p2", "worker", selector="worker"),
                pod("c1/p3", "worker", selector="worker"),
            ],
            [group(2, {"master": 1, "worker": 1})],
        )
    )
    found = verdicts(result)
    assert found["c1/p0"] == ("schedulable", "n1")
    assert found["c1/p2"] == ("schedulable", "n2")
    assert found["c1/p1"][1] is None
    assert found["c1/p3"][1] is None
    assert result.groups == (GroupOutcome("c1/pg1", "default", 2, 0, 4, "placed"),)


def test_masters_min_member_cannot_be_allocated_break_from_allocating() -> None:
    """TestAllocate "master's min member can not be allocated, break from allocating":
    minMember 2, minTaskMember {master: 2, worker: 0}; n2 could take both workers. p0 binds
    n1, p1 (master) finds n1 full and master is short of its two, so NeedContinueAllocating
    is false: the turn ends, the job is not ready, nothing binds. Counting members alone,
    p0 and p2 would have made minMember 2."""
    result = diagnose_jobs(
        cluster(
            [node("n1", "1", role="master"), node("n2", "2", role="worker")],
            [
                pod("c1/p0", "master", selector="master"),
                pod("c1/p1", "master", selector="master"),
                pod("c1/p2", "worker", selector="worker"),
                pod("c1/p3", "worker", selector="worker"),
            ],
            [group(2, {"master": 2, "worker": 0})],
        )
    )
    found = verdicts(result)
    assert all(where is None for _, where in found.values())
    assert found["c1/p0"][0] == "gang"
    assert found["c1/p2"] == ("gang", None)
    assert found["c1/p3"] == ("gang", None)
    assert result.groups[0].state == "rolled-back"
    # the workers were never tried: the job's FitError, not "can possibly be assigned"
    said = messages(result)
    assert said["c1/p0"].startswith("Pod c1/p0 can possibly be assigned to n1")
    assert said["c1/p2"].startswith("pod group is not ready")
    assert said["c1/p3"] == said["c1/p2"]


# -- hand cases ----------------------------------------------------------------------------


def test_a_role_short_of_its_pods_makes_the_job_invalid() -> None:
    """CheckTaskValid (gang.go validJobFn, before the count): minMember 3 with {ps: 1,
    worker: 2} and three workers but no ps pod: every member waits, in the gang plugin's
    words, though three members meet minMember."""
    result = diagnose_jobs(
        cluster(
            [node("n1", "8", cards=4)],
            [pod(f"c1/w{i}", "worker") for i in range(3)],
            [group(3, {"ps": 1, "worker": 2})],
        )
    )
    assert {c for c, _ in verdicts(result).values()} == {"gang"}
    assert set(messages(result).values()) == {
        "Not enough valid pods of each task for gang-scheduling"
    }


def test_roles_are_not_checked_where_min_member_is_below_their_sum() -> None:
    """CheckTaskValid/CheckTaskReady: "if job minAvailable is less than sum of(task
    minAvailable), skip this check": minMember 2 with {ps: 1, worker: 2}, no ps pod, and
    the two workers start the job."""
    result = diagnose_jobs(
        cluster(
            [node("n1", "8", cards=4)],
            [pod(f"c1/w{i}", "worker") for i in range(2)],
            [group(2, {"ps": 1, "worker": 2})],
        )
    )
    assert [where for _, where in verdicts(result).values()] == ["n1", "n1"]


def test_count_ready_but_a_role_short_rolls_back() -> None:
    """The gang plugin's JobReadyFn needs CheckTaskReady beside the count: minMember 3 with
    {ps: 1, worker: 2}; three workers fit, the ps pod does not (its node selector matches
    nothing), ps is short of its one, so the turn ends and the job is discarded: nothing
    binds. The condition counts minAvailable less the members that fitted, so it reads
    0 unschedulable (gang.go OnSessionClose)."""
    result = diagnose_jobs(
        cluster(
            [node("n1", "8", cards=4)],
            [pod(f"c1/w{i}", "worker") for i in range(3)] + [pod("c1/ps", "ps", selector="ps")],
            [group(3, {"ps": 1, "worker": 2})],
        )
    )
    found = verdicts(result)
    assert all(where is None for _, where in found.values())
    assert [found[f"c1/w{i}"][0] for i in range(3)] == ["gang"] * 3
    assert "(0/4 tasks in gang unschedulable: pod group is not ready" in messages(result)["c1/w0"]
    assert result.groups[0].state == "rolled-back"


def test_a_roles_later_tasks_are_skipped_once_one_failed() -> None:
    """TaskHasFitErrors (allocate.go allocateResourcesForTasks): once w0 fails every node,
    w1 and w2 (same role) are not tried, each with Volcano's "Task … with role spec worker
    has already predicated failed, skip" and w0's cause; a pod of another role still is.
    The later workers would fit n1 if tried (w0 alone asks a node that does not exist),
    which shows the skip. (w0 does not ask more than the cluster holds: Volcano's queue
    would refuse such a task before the predicates, with no fit error, and the role would
    not fail.)"""
    result = diagnose_jobs(
        cluster(
            [node("n1", "8", cards=1)],
            [
                pod("c1/w0", "worker", selector="nowhere"),
                pod("c1/w1", "worker"),
                pod("c1/w2", "worker"),
                pod("c1/m0", "master"),
            ],
            [group(1)],
        )
    )
    found = verdicts(result)
    assert found["c1/m0"] == ("schedulable", "n1")
    assert found["c1/w1"] == (found["c1/w0"][0], None) == (found["c1/w2"][0], None)
    assert messages(result)["c1/w1"] == (
        "Task w1 with role spec worker has already predicated failed, skip"
    )


def test_pods_without_a_role_are_each_tried() -> None:
    """TaskHasFitErrors: "if the task didn't set the spec key, should not use the cache":
    the same pods as above without roles; w1 and w2 are tried and fit."""
    pods = [
        gang_pod("c1/w0", role="nowhere"),
        gang_pod("c1/w1"),
        gang_pod("c1/w2"),
    ]
    result = diagnose_jobs(cluster([node("n1", "8", cards=2)], pods, [group(1)]))
    found = verdicts(result)
    assert found["c1/w1"][1] == "n1"
    assert found["c1/w2"][1] == "n1"


def test_below_the_roles_sum_the_job_goes_on_while_other_roles_can_reach_min_member() -> None:
    """NeedContinueAllocating where minMember is below the roles' sum: after a fit error it
    goes on while running + placed + the Pending members of roles without a fit error reach
    minMember. minMember 2, {a: 2, b: 2} (sum 4): a0 fits, a1 fails (role a failed, so a2
    is skipped); the two b pods remain, 1 + 2 ≥ 2, so b0 is tried and the job starts. With
    minMember 3 and a single b pod, 1 + 1 < 3 ends the turn before b0 (a1 and a2, still
    Pending, do not count: their role failed)."""

    def run(min_member: int, bs: int) -> Any:
        pods = [
            pod("c1/a0", "a"),
            pod("c1/a1", "a", selector="nowhere"),
            pod("c1/a2", "a"),
            *(pod(f"c1/b{i}", "b") for i in range(bs)),
        ]
        nodes = [node("n1", "8", cards=4)]
        return diagnose_jobs(cluster(nodes, pods, [group(min_member, {"a": 2, "b": 2})]))

    assert verdicts(run(2, 2))["c1/b0"] == ("schedulable", "n1")
    assert verdicts(run(2, 2))["c1/a0"] == ("schedulable", "n1")
    stopped = run(3, 1)
    assert verdicts(stopped)["c1/b0"] == ("gang", None)
    assert verdicts(stopped)["c1/a0"] == ("gang", None)
    # b0 was never tried: the job's FitError, not "can possibly be assigned"
    assert messages(stopped)["c1/b0"].startswith("pod group is not ready")


def test_running_members_count_for_their_roles() -> None:
    """getJobAllocatedRoles counts running (allocated-status) tasks per role: ps running,
    minMember 3 with {ps: 1, worker: 2}; two Pending workers fit and the job is ready."""
    result = diagnose_jobs(
        cluster(
            [node("n1", "8", cards=4)],
            [
                pod("c1/ps", "ps", on=("n1", 0)),
                pod("c1/w0", "worker"),
                pod("c1/w1", "worker"),
            ],
            [group(3, {"ps": 1, "worker": 2})],
        )
    )
    assert [where for _, where in verdicts(result).values()] == ["n1", "n1"]
    assert result.groups[0].state == "placed"


def test_nodes_an_earlier_task_of_the_role_failed_stay_failed_for_the_role() -> None:
    """Volcano's predicate error cache (v1.15.1 util/predicate_helper.go PredicateNodes,
    keyed by job and task role, one per allocateResourcesForTasks turn; allocate's default
    enablePredicateErrorCache): minMember 2, so both are tried in one turn; w0 (worker)
    fits only n2, so n1 failed for the role; w1 (worker, no selector) would go to n1 under
    spread, but Volcano does not check n1 for it again and places it on n2. Without roles
    (no cache) it goes to n1; with minMember 1 the job is ready after w0, and w1's turn
    starts with a fresh cache. Found by the session comparison
    (conformance/session_compare.py, seed 502)."""

    def run(role: str | None, min_member: int = 2) -> dict[str, tuple[str, str | None]]:
        nodes = [node("n1", "8", role="a"), node("n2", "8", role="b")]
        pods = [gang_pod("c1/w0", role="b"), gang_pod("c1/w1")]
        for p in pods:
            if role is not None:
                p["role"] = role
        data = cluster(nodes, pods, [group(min_member)])
        spread = replace(data, policy=replace(data.policy, node="spread"))
        return verdicts(diagnose_jobs(spread))

    assert run("worker") == {"c1/w0": ("schedulable", "n2"), "c1/w1": ("schedulable", "n2")}
    assert run(None) == {"c1/w0": ("schedulable", "n2"), "c1/w1": ("schedulable", "n1")}
    assert run("worker", 1) == run(None)


def test_a_task_that_fits_only_where_its_role_failed_stays_pending() -> None:
    """The same cache in one turn (minMember 2): w0 fits only n2 (n1 fails it), w1 only
    n1, so w1 finds every node failed (n2 by its own selector, n1 by the cache), held by
    its job's role (cause `gang`) though n1 would take it, and the job, short of its two,
    is discarded."""
    nodes = [node("n1", "8", role="a"), node("n2", "8", role="b")]
    pods = [pod("c1/w0", "worker", selector="b"), pod("c1/w1", "worker", selector="a")]
    result = diagnose_jobs(cluster(nodes, pods, [group(2)]))
    assert verdicts(result) == {"c1/w0": ("gang", None), "c1/w1": ("gang", None)}
    assert "failed an earlier task of its role worker" in messages(result)["c1/w1"]
    assert result.groups[0].state == "rolled-back"


def test_preempt_skips_a_job_whose_roles_are_short() -> None:
    """preempt.go runs ssn.JobValid on each starving job before looking for victims; gang's
    validJobFn checks each role first (CheckTaskValid). minMember 2 with {ps: 2}, one ps
    and one worker Pending at high priority, a low-priority pod holding the only card:
    the count (2) would pass, the roles do not, so preempt evicts nothing for them.
    Found by the preemption comparison (conformance/session_preempt.py, seed 9)."""
    data = cluster(
        [node("n1", "8", cards=1)],
        [
            pod("c1/low", "x", group=None, memory_mib=16000, on=("n1", 0)),
            pod("c1/ps-0", "ps", memory_mib=16000, priority=100),
            pod("c1/w-0", "worker", memory_mib=16000, priority=100),
        ],
        [group(2, {"ps": 2})],
    )
    data = replace(data, scheduler=replace(data.scheduler, actions=("allocate", "preempt")))
    result = diagnose_jobs(data)
    for d in result.diagnosis.pods:
        assert d.preemption is not None
        assert d.preemption.victims == ()
        assert "Not enough valid pods of each task for gang-scheduling" in d.preemption.message
