"""Volcano's preempt and reclaim verdicts (advisor.core.preemption.volcano), converted from
volcano v1.15.1 pkg/scheduler/actions/preempt/preempt_test.go TestPreempt and
actions/reclaim/reclaim_test.go TestReclaim (their cpu-only pods take a small GPU slice on
ample cards here, so only cpu decides), and hand cases.

TestPreempt converted: "do not preempt if job is pipelined", "preempt one task of different
job to fit both jobs on one node", "preempt enough tasks to fit large task of different
job", "can not preempt resources when task preemption policy is never", "only commit
evictions on the node where preemption succeeds". Not converted: the cases whose preemptor
fits the node but not its queue's capability ("preempt low priority job in same queue",
"... not pod with preemptable=false or higher priority", "rollback evictions when preemptor
exceeds queue capacity ...", "do not preempt if there are enough idle resources"): the
advisor's cycle places such a pod (queue capability in allocate is not modelled yet), so no
preemption is judged; the BestEffort cases (every advisor pod asks a GPU); the multi-queue
intra-job case (preemption between tasks of one job is not modelled).
TestReclaim converted: "Two Queue with one Queue overusing resource, should reclaim", "can
not reclaim resources when task preemption policy is never", "only commit evictions on the
node where reclaim succeeds" (the advisor's cycle places it: no verdict), "can not reclaim
resources when queue is not open(proportion plugin)". Not converted: the capacity plugin's
queue-state case (the plugin is not modelled), the ordering cases that depend on the
proportion plugin voting in the first tier (the advisor takes Volcano's default tiers, where
proportion is in the second).
plugins/priority TestPreempt is covered by the job-priority rule of the cases above (a
victim's job priority must be lower: "do not preempt if job is pipelined").
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from advisor.core.gang import judge
from advisor.scenario import scenario_from_data

UPSTREAM_GANG = {"preemptable": True, "job_starving": True}  # the tests' tiers enable both


def node(name: str, cpu: str, cards: int = 4, pods: int = 10) -> dict[str, Any]:
    return {
        "name": name,
        "allocatable": {"cpu": cpu, "memory": "64Gi", "pods": pods},
        "cards": [{"index": i, "memory_mib": 16384} for i in range(cards)],
    }


def pod(
    name: str,
    group: str,
    cpu: str = "1",
    *,
    on: str | None = None,
    memory_mib: int = 128,
    card: int = 0,
    **extra: Any,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": f"c1/{name}",
        "request": {"gpus": 1, "memory_mib": memory_mib},
        "resources": {"cpu": cpu, "memory": "1Gi"},
        "group": f"c1/{group}",
        **extra,
    }
    if on is not None:
        out["node"], out["cards"] = on, [card]
    return out


def group(name: str, priority: int = 0, min_member: int = 1, queue: str = "q1") -> dict[str, Any]:
    return {"name": f"c1/{name}", "priority": priority, "min_member": min_member, "queue": queue}


def run(
    nodes: list[dict[str, Any]],
    pods: list[dict[str, Any]],
    groups: list[dict[str, Any]],
    *,
    actions: tuple[str, ...] = ("allocate", "preempt"),
    queues: list[dict[str, Any]] | None = None,
    gang: dict[str, bool] | None = None,
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "scheduler": {"profile": "cce", "actions": list(actions), "gang": gang or UPSTREAM_GANG},
        "nodes": nodes,
        "pods": pods,
        "groups": groups,
        "queues": queues or [{"name": "q1"}],
    }
    cluster = scenario_from_data(data, "volcano.yaml")
    return {d.pod.name: d.preemption for d in judge(cluster).pods}


def evicted(found: dict[str, Any]) -> list[str]:
    return [v for p in found.values() if p is not None for v in p.victims]


def test_preempt_do_not_preempt_if_job_is_pipelined() -> None:
    pods = [
        pod("preemptee1", "pg1", on="n1"),
        pod("preemptee2", "pg1", on="n1"),
        pod("preemptee3", "pg2", on="n1"),
        pod("preemptor2", "pg2"),
    ]
    found = run([node("n1", "3")], pods, [group("pg1"), group("pg2")])
    assert evicted(found) == []
    assert found["c1/preemptor2"].verdict == "not-eligible"  # pg2 is ready: not starving


def test_preempt_one_task_of_different_job_to_fit_both_jobs() -> None:
    pods = [
        pod("preemptee1", "pg1", on="n1"),
        pod("preemptee2", "pg1", on="n1", preemptable=False),
        pod("preemptor1", "pg2"),
        pod("preemptor2", "pg2"),
    ]
    found = run([node("n1", "2")], pods, [group("pg1", 1), group("pg2", 2)])
    assert evicted(found) == ["c1/preemptee1"]
    assert found["c1/preemptor1"].node == "n1"


def test_preempt_enough_tasks_to_fit_large_task() -> None:
    pods = [
        pod("preemptee1", "pg1", on="n1"),
        pod("preemptee2", "pg1", on="n1"),
        pod("preemptee3", "pg1", on="n1", preemptable=False),
        pod("preemptor1", "pg2", "5"),
    ]
    found = run([node("n1", "6")], pods, [group("pg1", 1), group("pg2", 2)])
    assert found["c1/preemptor1"].victims == ("c1/preemptee2", "c1/preemptee1")


def test_preempt_not_with_preemption_policy_never() -> None:
    pods = [
        pod("preemptee1", "pg1", on="n1"),
        pod("preemptor1", "pg2", preemption_policy="Never"),
    ]
    found = run([node("n1", "1", pods=1)], pods, [group("pg1", 1, 0), group("pg2", 2)])
    assert evicted(found) == []
    assert found["c1/preemptor1"].message == (
        "not eligible to preempt other tasks due to preemptionPolicy is Never"
    )


def test_preempt_only_commits_evictions_on_the_node_where_it_succeeds() -> None:
    """n1 would have room after its victim, but the queue's capability (6 cpu) would be
    exceeded; n2's larger victim leaves the queue within it."""
    pods = [
        pod("preemptee1", "pg1", on="n1"),
        pod("preemptee2", "pg3", "4", on="n2"),
        pod("preemptor1", "pg2", "3"),
    ]
    groups = [group("pg1", 1, 0), group("pg2", 2), group("pg3", 1, 0)]
    queues = [{"name": "q1", "capability": {"cpu": "6", "memory": "6Gi"}}]
    found = run([node("n1", "3"), node("n2", "4")], pods, groups, queues=queues)
    assert (found["c1/preemptor1"].node, evicted(found)) == ("n2", ["c1/preemptee2"])


def reclaim_two_queues(q2: dict[str, Any]) -> dict[str, Any]:
    """TestReclaim's two-queue cluster: pg1 (q1) fills n1 with three pods, only the middle
    one preemptable; pg2 (queue `q2`) waits with one."""
    pods = [
        pod("preemptee1", "pg1", on="n1", preemptable=False),
        pod("preemptee2", "pg1", on="n1"),
        pod("preemptee3", "pg1", on="n1", preemptable=False),
        pod("preemptor1", "pg2"),
    ]
    groups = [group("pg1", 1, 1, "q1"), group("pg2", 2, 1, "q2")]
    queues = [{"name": "q1"}, q2]
    return run([node("n1", "3")], pods, groups, actions=("allocate", "reclaim"), queues=queues)


def test_reclaim_from_the_queue_overusing_resource() -> None:
    found = reclaim_two_queues({"name": "q2"})
    assert evicted(found) == ["c1/preemptee2"]


def test_reclaim_not_with_preemption_policy_never() -> None:
    pods = [pod("preemptee1", "pg1", on="n1"), pod("preemptor1", "pg2", preemption_policy="Never")]
    groups = [group("pg1", 1, 0, "q1"), group("pg2", 2, 0, "q2")]
    queues = [{"name": "q1", "weight": 5}, {"name": "q2", "weight": 10}]
    found = run(
        [node("n1", "1", pods=1)], pods, groups, actions=("allocate", "reclaim"), queues=queues
    )
    assert evicted(found) == []


def test_reclaim_not_when_the_queue_is_not_open() -> None:
    """proportion's PreemptiveFn (queueAllocatable) refuses every task of a queue not Open."""
    found = reclaim_two_queues({"name": "q2", "state": "Closed"})
    assert evicted(found) == []
    assert (
        found["c1/preemptor1"].message == "reclaim: queue q2 is Closed, not Open: it takes no task"
    )


def test_reclaim_pod_that_fits_has_no_verdict() -> None:
    pods = [pod("victim-n1", "pg-victim", "2", on="n1"), pod("preemptor1", "pg-preemptor", "3")]
    groups = [group("pg-victim", 0, 0, "q1"), group("pg-preemptor", 0, 1, "q2")]
    queues = [{"name": "q1", "weight": 1}, {"name": "q2", "weight": 9}]
    found = run([node("n1", "10")], pods, groups, actions=("allocate", "reclaim"), queues=queues)
    assert found["c1/preemptor1"] is None


# -- hand cases ---------------------------------------------------------------------------


def test_node_sum_eviction_leaves_the_pod_pending() -> None:
    """The node's free GPU memory plus one victim covers 14080 MiB, so Volcano evicts it
    (util.ValidateVictims sums the node) — but no single card then has 14080 free. b goes
    first: its job's dominant share (cpu) is the higher (BuildVictimsPriorityQueue, drf's
    JobOrderFn reversed)."""
    pods = [
        pod("a", "ja", on="n1", memory_mib=10112, card=0),
        pod("b", "jb", "4", on="n1", memory_mib=4096, card=1),
        pod("c", "jc", on="n1", memory_mib=8192, card=1, priority=10),
        pod("p", "jp", memory_mib=14080, priority=5),
    ]
    groups = [group("ja"), group("jb"), group("jc", 10), group("jp", 5)]
    found = run([node("n1", "8", cards=2)], pods, groups, gang={"preemptable": False})
    got = found["c1/p"]
    assert (got.verdict, got.victims, got.helps) == ("evicts", ("c1/b",), False)
    assert "stays Pending after the eviction" in got.message


def test_gang_protects_victims_at_min_member() -> None:
    """With gang's preemptable on (upstream default), a job at its minAvailable is no victim."""
    pods = [pod("a", "ja", "2", on="n1"), pod("p", "jp", "2", priority=5)]
    groups = [group("ja"), group("jp", 5)]
    on = run([node("n1", "2")], pods, groups)
    off = run([node("n1", "2")], pods, groups, gang={"preemptable": False})
    assert on["c1/p"].verdict == "no-victims"
    assert off["c1/p"].victims == ("c1/a",)


def test_preempt_off_under_cce_defaults() -> None:
    data = {
        "scheduler": {"profile": "cce"},
        "nodes": [node("n1", "1")],
        "pods": [pod("a", "ja", on="n1"), pod("p", "jp", priority=5)],
        "groups": [group("ja", queue="default"), group("jp", 5, queue="default")],
    }
    got = judge(scenario_from_data(data, "cce.yaml")).pods[0].preemption
    assert got is not None
    assert got.verdict == "off"
    assert "allocate, backfill" in got.message


def test_a_gang_that_cannot_pipeline_min_member_evicts_nobody() -> None:
    """Two members needed, room for one after every eviction: the statement is discarded."""
    pods = [
        pod("a", "ja", on="n1"),
        pod("w0", "gang", priority=5),
        pod("w1", "gang", "2", priority=5),
    ]
    groups = [group("ja", 0, 0), {**group("gang", 5), "min_member": 2}]
    found = run([node("n1", "1")], pods, groups)
    assert evicted(found) == []
    assert "discards the statement" in found["c1/w0"].message


# -- the queues' arithmetic is the cycle's (core.queues) ----------------------------------
# Where preemption's own copy disagreed with core.queues, Volcano v1.15.1's proportion.go
# decides; these pin its answer.


def test_a_guarantee_of_a_queue_without_jobs_bounds_the_others() -> None:
    """totalGuarantee sums every queue of the session, jobs or not: `idle` keeps 4 of the 8
    cpu out of q1's realCapability, so q1 deserves 4 and the 5-cpu preemptor exceeds it."""
    pods = [pod("a", "ja", "6", on="n1"), pod("p", "jp", "5", priority=5)]
    queues: list[dict[str, Any]] = [{"name": "q1"}, {"name": "idle", "guarantee": {"cpu": "4"}}]
    found = run([node("n1", "8")], pods, [group("ja", 0, 0), group("jp", 5)], queues=queues)
    assert (found["c1/p"].verdict, evicted(found)) == ("no-victims", [])


def test_a_zero_capability_of_a_gpu_resource_is_zero() -> None:
    """Only cpu and memory read a capability of zero as none; q1 deserves no GPU core, so
    a preemptor asking some is never Allocatable."""
    preemptor = pod("p", "jp", "2", priority=5)
    preemptor["request"]["core_percent"] = 10
    queues = [{"name": "q1", "capability": {"volcano.sh/gpu-core.percentage": "0"}}]
    found = run(
        [node("n1", "2")],
        [pod("a", "ja", "2", on="n1"), preemptor],
        [group("ja", 0, 0), group("jp", 5)],
        queues=queues,
    )
    assert (found["c1/p"].verdict, evicted(found)) == ("no-victims", [])


def test_a_job_of_a_queue_not_listed_is_not_in_the_session() -> None:
    """The scenario reader refuses an unknown queue; a live cluster can carry one, so the
    preemptor's group moves to q9 after reading. Volcano's cache leaves the job out."""
    data: dict[str, Any] = {
        "scheduler": {"profile": "cce", "actions": ["allocate", "preempt"], "gang": UPSTREAM_GANG},
        "nodes": [node("n1", "1")],
        "pods": [pod("a", "ja", on="n1"), pod("p", "jp", priority=5)],
        "groups": [group("ja", 0, 0), group("jp", 5)],
        "queues": [{"name": "q1"}],
    }
    base = scenario_from_data(data, "volcano.yaml")
    moved = tuple(replace(g, queue="q9") if g.name == "c1/jp" else g for g in base.jobs.groups)
    found = judge(replace(base, jobs=replace(base.jobs, groups=moved))).pods[0].preemption
    assert found is not None
    assert (found.verdict, found.message) == (
        "not-eligible",
        "queue q9 not found: Volcano skips the job",
    )


def test_a_queue_counts_a_per_card_request_as_written() -> None:
    """Volcano's Resreq sums the containers' requests as written: 3072 MiB of
    volcano.sh/vgpu-memory on each of 2 cards counts 3072 against q1's capability of 4096,
    not the 6144 the node's cards give."""
    two_cards = pod("p", "jp", "2", memory_mib=6144, priority=5)
    two_cards["request"]["gpus"] = 2
    data: dict[str, Any] = {
        "scheduler": {
            "profile": "volcano-vgpu",
            "actions": ["allocate", "preempt"],
            "gang": UPSTREAM_GANG,
        },
        "nodes": [node("n1", "2", cards=2)],
        "pods": [pod("a", "ja", "2", on="n1"), two_cards],
        "groups": [group("ja", 0, 0), group("jp", 5)],
        "queues": [{"name": "q1", "capability": {"volcano.sh/vgpu-memory": "4096"}}],
    }
    found = judge(scenario_from_data(data, "volcano.yaml")).pods[0].preemption
    assert found is not None
    assert (found.verdict, found.victims) == ("evicts", ("c1/a",))
