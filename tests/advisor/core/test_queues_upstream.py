"""Volcano v1.15.1's queue tables converted (volcano-sh/volcano, tag v1.15.1), each case cited
by file and test name: the advisor's verdict must give upstream's binds and phases.

Translation: Volcano's pods ask cpu and memory only; here each also asks one small vGPU
(1 GiB of a 16 GiB card, plenty on every node) so that the cards never decide, and the
queues' capabilities and the groups' minResources name cpu and memory as upstream's do. A
bind is a placement; a PodGroup left Pending is a group `not-admitted`."""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import pytest

from advisor.core.enqueue import enqueue_refusal, overcommit
from advisor.core.gang import diagnose_jobs
from advisor.core.jobs import Queue, frozen_resources
from advisor.core.queues import JobLoad, QueueAttr
from advisor.core.resource_info import resource_list
from advisor.scenario import scenario_from_data


def node(name: str, cpu: str, memory: str) -> dict[str, Any]:
    return {
        "name": name,
        "allocatable": {"cpu": cpu, "memory": memory, "pods": 10},
        "cards": [{"index": i, "memory_mib": 16384} for i in range(4)],
    }


def pod(
    name: str, group: str, cpu: str, memory: str, on: str | None = None, priority: int = 0
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "group": group,
        "request": {"gpus": 1, "memory_mib": 1024},
        "resources": {"cpu": cpu, "memory": memory},
    }
    if on is not None:
        out["node"], out["cards"] = on, [0]
    if priority:
        out["priority"] = priority
    return out


def queue(name: str, weight: int = 1, state: str = "Open", **capability: str) -> dict[str, Any]:
    return {"name": name, "weight": weight, "capability": capability, "state": state}


def group(name: str, queue: str, min_resources: dict[str, str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "queue": queue, "min_member": 1}
    if min_resources is not None:
        out["min_resources"] = min_resources
    return out


def judge(data: dict[str, Any], actions: list[str] | None = None) -> Any:
    scheduler: dict[str, Any] = {"profile": "volcano-vgpu"}
    if actions is not None:
        scheduler["actions"] = actions
    return diagnose_jobs(scenario_from_data({"scheduler": scheduler, **data}, "queues.yaml"))


def binds(result: Any) -> dict[str, str]:
    return {d.pod.name: d.placement.node for d in result.diagnosis.pods if d.placement is not None}


def states(result: Any) -> dict[str, str]:
    return {g.name: g.state for g in result.groups}


# -- pkg/scheduler/plugins/proportion/proportion_test.go, TestEnqueueAndAllocable -------------

RES = {"1c2g": ("1", "2G"), "2c1g": ("2", "1G"), "1c0g": ("1", "0"), "0c1g": ("0", "1G")}
RES["1c1g"] = ("1", "1G")


def _enqueue_and_allocable(pending: str, res: str, pending_queue: str) -> dict[str, Any]:
    return {
        "nodes": [node("n1", "2", "2G"), node("n2", "2", "2G")],
        "queues": [
            queue("q1", cpu="2", memory="2G"),
            queue("q2", cpu="3", memory="3G"),
            queue("q3", state="Closed", cpu="3", memory="3G"),
        ],
        "groups": [
            group("ns1/pg1", "q1", {"cpu": "1", "memory": "2G"}),
            group("ns1/pg2", "q2", {"cpu": "2", "memory": "1G"}),
            group(
                f"ns1/{pending}", pending_queue, dict(zip(("cpu", "memory"), RES[res], strict=True))
            ),
        ],
        "pods": [
            pod("ns1/pod1", "ns1/pg1", "1", "2G", on="n1"),
            pod("ns1/pod2", "ns1/pg2", "2", "1G", on="n2"),
            pod(f"ns1/pod{pending[-1]}", f"ns1/{pending}", *RES[res]),
        ],
    }


def test_case0_memory_exceed_deserved_job_only_request_cpu_can_be_enqueued_and_allocated() -> None:
    result = judge(_enqueue_and_allocable("pg3", "1c0g", "q1"))
    assert binds(result) == {"ns1/pod3": "n1"}


def test_case1_cpu_exceed_deserved_job_only_request_memory_can_be_enqueued_and_allocated() -> None:
    result = judge(_enqueue_and_allocable("pg4", "0c1g", "q2"))
    assert binds(result) == {"ns1/pod4": "n2"}


def test_case2_exceed_capacity_can_not_enqueue() -> None:
    result = judge(_enqueue_and_allocable("pg5", "1c1g", "q1"))
    assert binds(result) == {}
    assert states(result)["ns1/pg5"] == "not-admitted"
    (verdict,) = [d for d in result.diagnosis.pods if d.pod.name == "ns1/pod5"]
    assert verdict.cause == "queue"
    assert verdict.message == "queue resource quota insufficient: insufficient memory"


def test_case3_exceed_deserved_can_not_allocate() -> None:
    """Upstream enables only Allocatable here (no enqueue): the task is refused by the queue's
    deserved, which is q1's request capped by the cluster's share."""
    result = judge(_enqueue_and_allocable("pg5", "1c1g", "q1"), actions=["allocate"])
    assert binds(result) == {}
    (verdict,) = [d for d in result.diagnosis.pods if d.pod.name == "ns1/pod5"]
    assert verdict.cause == "queue"
    assert "Queue q1 is overused" in verdict.message


def test_case4_queue_closed_can_not_enqueue() -> None:
    result = judge(_enqueue_and_allocable("pg6", "1c1g", "q3"))
    assert binds(result) == {}
    assert states(result)["ns1/pg6"] == "not-admitted"
    (verdict,) = [d for d in result.diagnosis.pods if d.pod.name == "ns1/pod6"]
    assert verdict.message == "queue q3 is Closed: it admits no job"


# -- pkg/scheduler/actions/enqueue/enqueue_test.go, TestEnqueue ---------------------------------


def test_enqueue_when_podgroup_status_is_pending() -> None:
    """Two Pending groups in queues c1 and c2 (capability 4 cpu each): both are admitted."""
    data = {
        "nodes": [node("n1", "16", "16G")],
        "queues": [queue("c1", cpu="4", memory="4G"), queue("c2", cpu="4", memory="4G")],
        "groups": [group("c1/pg1", "c1"), group("c1/pg2", "c2")],
        "pods": [pod("c1/p1", "c1/pg1", "3", "1G"), pod("c1/p2", "c1/pg2", "1", "1G")],
    }
    result = judge(data)
    assert states(result) == {"c1/pg1": "placed", "c1/pg2": "placed"}


def test_enqueue_when_podgroup_status_is_inqueue() -> None:
    """Upstream runs enqueue alone and expects pg1 still Inqueue: enqueue takes only Pending
    groups (enqueue.go Execute, `job.IsPending()`). Here allocate runs after it and places
    both members, which it does only for a group past enqueue."""
    data = {
        "nodes": [node("n1", "16", "16G")],
        "queues": [queue("c1", cpu="4", memory="4G"), queue("c2", cpu="4", memory="4G")],
        "groups": [{**group("c1/pg1", "c1"), "min_member": 2, "phase": "Inqueue"}],
        "pods": [pod("c1/p1", "c1/pg1", "1", "1G"), pod("c1/p2", "c1/pg1", "1", "1G")],
    }
    result = judge(data)
    assert states(result) == {"c1/pg1": "placed"}
    assert binds(result) == {"c1/p1": "n1", "c1/p2": "n1"}


def test_enqueue_when_podgroup_status_is_running() -> None:
    """Both members run and the group is Running: nothing is Pending, nothing changes."""
    data = {
        "nodes": [node("n1", "16", "16G")],
        "queues": [queue("c1", cpu="4", memory="4G")],
        "groups": [{**group("c1/pg1", "c1"), "min_member": 2, "phase": "Running"}],
        "pods": [
            pod("c1/p1", "c1/pg1", "1", "1G", on="n1"),
            pod("c1/p2", "c1/pg1", "1", "1G", on="n1"),
        ],
    }
    result = judge(data)
    assert result.groups == ()
    assert result.diagnosis.pods == ()


def _admitted_before(phase: str | None) -> dict[str, Any]:
    """A group whose minResources (8 cpu) its queue's capability (4 cpu) refuses, one
    member of 1 cpu Pending, nothing running; `phase` its PodGroup's, None: inferred."""
    too_big = group("c1/pg1", "c1", {"cpu": "8", "memory": "1G"})
    if phase is not None:
        too_big["phase"] = phase
    return {
        "nodes": [node("n1", "16", "16G")],
        "queues": [queue("c1", cpu="4", memory="4G")],
        "groups": [too_big],
        "pods": [pod("c1/p1", "c1/pg1", "1", "1G")],
    }


@pytest.mark.parametrize(
    ("phase", "placed"),
    [(None, False), ("Pending", False), ("Inqueue", True), ("Unknown", True), ("Running", True)],
)
def test_only_a_pending_podgroup_goes_through_enqueue(phase: str | None, placed: bool) -> None:
    """Hand case: enqueue judges only a Pending PodGroup (api/job_info.go IsPending: Pending
    or no phase); one admitted by an earlier session (Inqueue), or Running or Unknown, goes
    straight to allocate, whose per-task test (1 cpu within the 4) passes. Inferred, a group
    with nothing running is Pending and its minResources are refused."""
    result = judge(_admitted_before(phase))
    assert (binds(result) == {"c1/p1": "n1"}) is placed
    if not placed:
        assert states(result) == {"c1/pg1": "not-admitted"}
        assert result.diagnosis.pods[0].cause == "queue"


def test_an_inqueue_podgroup_holds_its_min_resources_against_later_groups() -> None:
    """Hand case: pg1 is Inqueue (admitted earlier, 16 cpu of minResources, nothing running
    yet) and counts in overcommit's inqueue (overcommit.go OnSessionOpen), so pg2's 4 cpu
    pass 1.2 × 16 = 19.2 and it is refused, though its priority is higher. Inferred, both
    are Pending, pg2 is enqueued first, and pg1 is the one refused."""
    data: dict[str, Any] = {
        "nodes": [node("n1", "16", "64G")],
        "groups": [
            {"name": "ns/pg1", "min_member": 1, "min_resources": {"cpu": "16"}},
            {"name": "ns/pg2", "min_member": 1, "min_resources": {"cpu": "4"}, "priority": 10},
        ],
        "pods": [pod("ns/a1", "ns/pg1", "12", "1G"), pod("ns/b1", "ns/pg2", "4", "1G")],
    }
    inferred = judge(data)
    assert states(inferred) == {"ns/pg1": "not-admitted", "ns/pg2": "placed"}
    data["groups"][0]["phase"] = "Inqueue"
    given = judge(data)
    assert states(given) == {"ns/pg1": "placed", "ns/pg2": "not-admitted"}
    (b1,) = [d for d in given.diagnosis.pods if d.pod.name == "ns/b1"]
    assert b1.message == "resource in cluster is overused: overused cpu"


def test_a_running_podgroup_below_min_member_reserves_nothing() -> None:
    """Hand case: pg1 is Running with one of its min_member 2 running (a finished driver:
    the "Spark job" of proportion.go and overcommit.go OnSessionOpen), so its minResources
    count inqueue only where min_member are allocated: not here, and pg2 (8 cpu) is
    admitted. Inferred, pg1 is Inqueue and its 16 cpu refuse pg2."""
    data: dict[str, Any] = {
        "nodes": [node("n1", "16", "64G")],
        "groups": [
            {"name": "ns/pg1", "min_member": 2, "min_resources": {"cpu": "16"}},
            {"name": "ns/pg2", "min_member": 1, "min_resources": {"cpu": "8"}},
        ],
        "pods": [pod("ns/a1", "ns/pg1", "1", "1G", on="n1"), pod("ns/b1", "ns/pg2", "8", "1G")],
    }
    assert states(judge(data))["ns/pg2"] == "not-admitted"
    data["groups"][0]["phase"] = "Running"
    assert states(judge(data))["ns/pg2"] == "placed"


def test_enqueue_cannot_because_the_specified_queue_is_c1_but_there_is_only_c2() -> None:
    """The scenario reader refuses a group naming an unknown queue; a live cluster can carry
    one, so the cluster is built with queue c2 and the group moved to c1 after."""
    data = {
        "scheduler": {"profile": "volcano-vgpu"},
        "nodes": [node("n1", "16", "16G")],
        "queues": [queue("c2", cpu="4", memory="4G")],
        "groups": [group("c1/pg1", "c2")],
        "pods": [pod("c1/p1", "c1/pg1", "1", "1G")],
    }
    base = scenario_from_data(data, "queues.yaml")
    moved = replace(base.jobs, groups=(replace(base.jobs.groups[0], queue="c1"),))
    result = diagnose_jobs(replace(base, jobs=moved))
    assert binds(result) == {}
    (verdict,) = result.diagnosis.pods
    assert (verdict.cause, verdict.message) == (
        "queue",
        "queue c1 not found: Volcano skips the job",
    )


def test_enqueue_cannot_because_queue_resources_are_less_than_podgroup_min_resources() -> None:
    """Upstream has no node; here one of 16 cpu, so that the queue's capability (1 cpu) and
    not the empty cluster refuses the group's minResources (8 cpu)."""
    data = {
        "nodes": [node("n1", "16", "16G")],
        "queues": [queue("c1", cpu="1", memory="1G")],
        "groups": [group("c1/pg1", "c1", {"cpu": "8", "memory": "8G"})],
        "pods": [pod("c1/p1", "c1/pg1", "1", "1G")],
    }
    result = judge(data)
    assert states(result) == {"c1/pg1": "not-admitted"}
    assert result.diagnosis.pods[0].message == (
        "queue resource quota insufficient: insufficient cpu, memory"
    )


# -- pkg/scheduler/plugins/overcommit/overcommit_test.go, TestOvercommitPlugin ------------------

NORMAL = {"cpu": "2000m", "memory": "2G"}
HUGE = {"cpu": "20000m", "memory": "20G"}


@pytest.mark.parametrize(
    ("case", "factor", "min_resources", "enqueueable"),
    [
        ("overCommitFactor is more than 0", 1.2, NORMAL, True),
        ("overCommitFactor is less than 0", 0.8, NORMAL, True),  # below 1: the default 1.2
        ("when the required resources of pg are too large", 1.2, HUGE, False),
        ("when pg does not fill MinResources", 1.2, None, True),
    ],
)
def test_overcommit_plugin(
    case: str, factor: float, min_resources: dict[str, str] | None, enqueueable: bool
) -> None:
    """Upstream asks JobEnqueueable of one PodGroup already Inqueue (so counted in the
    plugin's inqueue at the session's opening) on nodes of 2 cpu/4Gi and 4 cpu/16Gi. The
    scenario reader refuses a factor below 1, so the value is set on the cluster after."""
    data = {
        "scheduler": {"profile": "volcano-vgpu"},
        "nodes": [node("n1", "2", "4Gi"), node("n2", "4", "16Gi")],
        "pods": [],
    }
    base = scenario_from_data(data, "overcommit.yaml")
    cluster = replace(base, scheduler=replace(base.scheduler, overcommit_factor=factor))
    wanted = None if min_resources is None else resource_list(frozen_resources(min_resources))
    load = JobLoad("default", {}, {}, wanted, "Inqueue")
    commit = overcommit(cluster, [load], used={})
    attr = QueueAttr(Queue("c1"), 0)
    attr.real_capability = {"cpu": math.inf, "memory": math.inf}
    assert (enqueue_refusal(attr, commit, wanted) is None) is enqueueable, case


def test_overcommit_enqueue_rejects_once_the_inqueue_groups_pass_factor_times_total() -> None:
    """Hand case in the cycle: the first group is Inqueue (one of its two members running,
    its minResources 6 cpu), the second's 4 cpu would take the cluster past 1.2 × its 8 cpu
    − the 1 used; with factor 2.0 overcommit admits it and proportion refuses it (both
    checked against Volcano v1.14.1's session, conformance/volcano14)."""
    data: dict[str, Any] = {
        "nodes": [node("n1", "4", "16G"), node("n2", "4", "16G")],
        "groups": [
            {"name": "ns/pg1", "min_member": 2, "min_resources": {"cpu": "6"}},
            group("ns/pg2", "default", {"cpu": "4"}),
        ],
        "pods": [
            pod("ns/a1", "ns/pg1", "1", "1G", on="n1"),
            pod("ns/a2", "ns/pg1", "3", "1G"),
            pod("ns/b1", "ns/pg2", "4", "1G"),
        ],
    }
    result = judge(data)
    # idle = 1.2 × 8 − 1 = 8.6 cpu; inqueue 6 (pg1, Inqueue) + 4 > 8.6
    assert states(result)["ns/pg2"] == "not-admitted"
    (b1,) = [d for d in result.diagnosis.pods if d.pod.name == "ns/b1"]
    assert b1.message == "resource in cluster is overused: overused cpu"
    # With factor 2.0 overcommit admits it (6 + 4 <= 15); proportion then refuses it:
    # 4 + 1 allocated + 5 inqueue (pg1's minResources less what it holds) > the 8 cpu of
    # realCapability (proportion.go JobEnqueueableFn). Only the cluster's size refuses it,
    # but the nodes have the room, so allocate, which never tries it, decides.
    data["scheduler"] = {"profile": "volcano-vgpu", "overcommit_factor": 2.0}
    again = diagnose_jobs(scenario_from_data(data, "queues.yaml"))
    assert states(again)["ns/pg2"] == "not-admitted"
    (b1,) = [d for d in again.diagnosis.pods if d.pod.name == "ns/b1"]
    assert b1.message == "queue resource quota insufficient: insufficient cpu"


# -- pkg/scheduler/actions/allocate/allocate_test.go, TestAllocate -----------------------------


def test_allocate_high_priority_queue_should_not_block_others() -> None:
    """Queue c1's job asks 3 cpu of a 2-cpu cluster; queue c2's job must still be placed.
    Proportion (Allocatable on in upstream's tiers) gives each queue half the cluster, 1 cpu:
    c1's task is refused by its queue before any node is tried."""
    data = {
        "nodes": [node("n1", "2", "4G")],
        "queues": [queue("c1"), queue("c2")],
        "groups": [group("c1/pg1", "c1"), group("c1/pg2", "c2")],
        "pods": [pod("c1/p1", "c1/pg1", "3", "1G"), pod("c1/p2", "c1/pg2", "1", "1G")],
    }
    result = judge(data)
    assert binds(result) == {"c1/p2": "n1"}
    (p1,) = [d for d in result.diagnosis.pods if d.pod.name == "c1/p1"]
    assert p1.cause == "queue"
    assert p1.message.startswith(
        "Queue c1 is overused when considering this task: insufficient cpu"
    )
