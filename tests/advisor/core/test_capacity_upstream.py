"""Volcano v1.15.1's capacity plugin tables converted (volcano-sh/volcano, tag v1.15.1,
pkg/scheduler/plugins/capacity/capacity_test.go), each case cited by its test and name: the
advisor's verdicts under `scheduler.queue_plugin: capacity` must give upstream's binds,
phases, pipelines and evictions (docs/design.md §10.2, §10.3).

Translation, as tests/advisor/core/test_queues_upstream.py's: upstream's pods ask cpu and
memory only; here each also asks one small vGPU (1 GiB of a 16 GiB card, four cards a node)
so that the cards never decide, and the queues' deserved, capabilities and the groups'
minResources name cpu and memory as upstream's do (a resource deserved does not name is no
reason to reclaim: GreaterPartlyWithRelevantDimensions). A bind is a placement, a PodGroup
left Pending a group `not-admitted`, a pipeline and its evictions the pod's preemption
verdict. Upstream's queues have no creation time, so its queue order falls back to their
names; the advisor's stand-in is the listing order, here the names' order.

Cases whose point is a resource only some pods ask (an extended resource such as
`nvidia.com/gpu` beside pods that ask none) cannot be written as scenarios, where every pod
asks a vGPU: those are converted at the plugin's level, on core.capacity's queueAttr with
upstream's resources and names (`nvidia.com/gpu`, `nvidia.com/A100`), asserting what the
plugin decides (PreemptiveFn, ReclaimableFn) and, by hand, the node sums reclaim.go then
checks.

Not converted, and why:

- Test_capacityPlugin_OnSessionOpenWithHierarchy: converted in
  tests/advisor/core/test_capacity_hierarchy_upstream.py (core.capacity_tree), which also
  says why Test_buildHierarchicalQueueAttrs_nilSafety is not;
  Test_capacityPlugin_AncestorReclaimScenarios in test_capacity_ancestor_reclaim_upstream.py.
- TestCapacityPluginDRA, TestParseDRAResourceListCombinesCountAndCapacity,
  TestSharedResourceClaimIsChargedOnce, TestJobEnqueueableChecksDRAWithoutMinResources,
  TestJobEnqueueableAccountsDRAInqueue, TestDRAAllocatableIgnoresInqueue,
  TestCheckDRAAllocatable_overflowRejected: dynamic resource allocation (ResourceClaims,
  DeviceClass quotas) is not in the advisor's model.
- TestNoDoubleCountingForInqueueJobWithBindingTasks: it runs two sessions, the first
  leaving tasks Binding while their PodGroup stays Inqueue; the advisor judges one session
  and reads no Binding state. Its rule (inqueue is minResources less what the job holds,
  util.GetInqueueResource) is core.queues' `gather`, converted below as a hand case.
"""

from __future__ import annotations

from typing import Any

import pytest

from advisor.core.capacity import CapacityAttr, capacity_deserved
from advisor.core.gang import diagnose_jobs
from advisor.core.jobs import Queue
from advisor.core.queues import reclaimed
from advisor.core.resource_info import Res, resource_list
from advisor.scenario import scenario_from_data
from tests.advisor.core import volcano_tables as tables
from tests.advisor.core.volcano_tables import node

SOURCE = "volcano-sh/volcano v1.15.1 pkg/scheduler/plugins/capacity/capacity_test.go"
GI = 2**30
GPU, A100 = "nvidia.com/gpu", "nvidia.com/A100"


def pod(name: str, group: str, cpu: str, memory: str, **rest: Any) -> dict[str, Any]:
    return tables.pod("ns1", 1024, name, group, cpu, memory, **rest)


def queue(
    name: str,
    deserved: tuple[str, str] | None = None,
    capability: tuple[str, str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """util.BuildQueueWithResourcesQuantity(name, deserved, capability): weight 1."""
    out: dict[str, Any] = {"name": name, **extra}
    if deserved is not None:
        out["deserved"] = dict(zip(("cpu", "memory"), deserved, strict=True))
    if capability is not None:
        out["capability"] = dict(zip(("cpu", "memory"), capability, strict=True))
    return out


def group(name: str, queue: str, min_resources: tuple[str, str] | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": f"ns1/{name}", "queue": queue, "min_member": 1}
    if min_resources is not None:
        out["min_resources"] = dict(zip(("cpu", "memory"), min_resources, strict=True))
    return out


def judge(data: dict[str, Any], actions: list[str]) -> Any:
    scheduler = {"profile": "volcano-vgpu", "actions": actions, "queue_plugin": "capacity"}
    return diagnose_jobs(scenario_from_data({"scheduler": scheduler, **data}, "capacity.yaml"))


def binds(result: Any) -> dict[str, str]:
    return {d.pod.name: d.placement.node for d in result.diagnosis.pods if d.placement is not None}


def verdict_of(result: Any, name: str) -> Any:
    (found,) = [d for d in result.diagnosis.pods if d.pod.name == name]
    return found


def evictions(result: Any) -> tuple[dict[str, str], list[str]]:
    """(pipelined pod -> node, evicted pods): the preemption verdicts' pipelines."""
    pipelined, evicted = {}, []
    for d in result.diagnosis.pods:
        if d.preemption is not None and d.preemption.verdict == "evicts":
            pipelined[d.pod.name] = d.preemption.node
            evicted.extend(d.preemption.victims)
    return pipelined, evicted


# -- TestEnqueueAndAllocatable (actions enqueue, allocate; tier: capacity alone) --------------

RES = {"1c0g": ("1", "0"), "0c1g": ("0", "1G"), "1c1g": ("1", "1G")}


def _enqueue_and_allocatable(pending: str, res: str, pending_queue: str) -> dict[str, Any]:
    n = pending[-1]
    return {
        "nodes": [node("n1", "3", "3G"), node("n2", "3", "3G")],
        "queues": [
            queue("q1", deserved=("2", "2G"), capability=("2", "2G")),
            queue("q2", deserved=("2", "2G"), capability=("3", "3G")),
            {"name": "q3", "state": "Closed", "capability": {"cpu": "3", "memory": "3G"}},
        ],
        "groups": [
            group("pg1", "q1", ("1", "3G")),
            group("pg2", "q2", ("3", "1G")),
            group(pending, pending_queue, RES[res]),
        ],
        "pods": [
            pod("pod1", "pg1", "1", "3G", on="n1"),
            pod("pod2", "pg2", "3", "1G", on="n2"),
            pod(f"pod{n}", pending, *RES[res]),
        ],
    }


ENQUEUE = f"{SOURCE} TestEnqueueAndAllocatable"


def test_case0_memory_exceed_derserved_job_only_request_cpu_can_be_enqueued_and_allocated() -> None:
    """ENQUEUE case0: q1 holds 3G of its 2G realCapability; a job asking cpu alone is
    judged on cpu: 1 + 1 ≤ 2."""
    result = judge(_enqueue_and_allocatable("pg3", "1c0g", "q1"), ["enqueue", "allocate"])
    assert binds(result) == {"ns1/pod3": "n1"}


def test_case1_cpu_exceed_derserved_job_only_request_memory_can_be_enqueued_and_allocated() -> None:
    result = judge(_enqueue_and_allocatable("pg4", "0c1g", "q2"), ["enqueue", "allocate"])
    assert binds(result) == {"ns1/pod4": "n2"}


def test_case2_exceed_capacity_can_not_enqueue() -> None:
    result = judge(_enqueue_and_allocatable("pg5", "1c1g", "q1"), ["enqueue", "allocate"])
    assert binds(result) == {}
    assert {g.name: g.state for g in result.groups}["ns1/pg5"] == "not-admitted"
    verdict = verdict_of(result, "ns1/pod5")
    assert (verdict.cause, verdict.message) == (
        "queue",
        "queue resource quota insufficient: insufficient memory",
    )


def test_case4_queue_with_non_open_state_can_not_enqueue() -> None:
    data = {
        "nodes": [node("n1", "3", "3G"), node("n2", "3", "3G")],
        "queues": [{"name": "q3", "state": "Closed", "capability": {"cpu": "3", "memory": "3G"}}],
        "groups": [group("pg6", "q3", ("1", "1G"))],
        "pods": [pod("pod6", "pg6", "1", "1G")],
    }
    result = judge(data, ["enqueue", "allocate"])
    assert binds(result) == {}
    assert {g.name: g.state for g in result.groups} == {"ns1/pg6": "not-admitted"}
    assert verdict_of(result, "ns1/pod6").message == "queue q3 is Closed: it admits no job"


# -- Test_capacityPlugin_OnSessionOpenWithoutHierarchy (actions allocate, reclaim) ------------

WITHOUT = f"{SOURCE} Test_capacityPlugin_OnSessionOpenWithoutHierarchy"
N12 = [node("n1", "2", "4Gi", selector="worker"), node("n2", "2", "4Gi")]
RECLAIM = ["allocate", "reclaim"]


def test_case0_pod_allocatable_when_queue_has_not_exceed_capability() -> None:
    data = {
        "nodes": N12,
        "queues": [queue("q1", capability=("2", "2Gi"))],
        "groups": [group("pg1", "q1"), group("pg2", "q1")],
        "pods": [
            pod("p1", "pg1", "1", "1Gi", on="n1"),
            pod("p2", "pg2", "1", "1Gi", node_selector={"selector": "worker"}),
        ],
    }
    result = judge(data, RECLAIM)
    assert binds(result) == {"ns1/p2": "n1"}


def test_case1_pod_not_allocatable_when_queue_exceed_queue_capability() -> None:
    data = {
        "nodes": N12,
        "queues": [queue("q2", capability=("1.5", "1.5Gi"))],
        "groups": [group("pg3", "q2"), group("pg4", "q2")],
        "pods": [pod("p3", "pg3", "1", "1Gi", on="n1"), pod("p4", "pg4", "1", "1Gi")],
    }
    result = judge(data, RECLAIM)
    assert binds(result) == {}
    assert evictions(result) == ({}, [])
    p4 = verdict_of(result, "ns1/p4")
    assert p4.cause == "queue"
    assert p4.message == (
        "Queue q2 is overused when considering this task: insufficient cpu, memory "
        "(cpu: 1 allocated + 1 > 1.5 realCapability, "
        "memory: 1Gi allocated + 1Gi > 1.5Gi realCapability)"
    )
    # PreemptiveFn: futureUsed exceeds realCapability, so the queue reclaims nothing
    assert p4.preemption.message == (
        "reclaim: queue q2 may not reclaim: its allocated plus the pod's request exceeds its "
        "realCapability"
    )


def test_case2_can_reclaim_from_other_queues_when_allocated_lt_deserved() -> None:
    data = {
        "nodes": N12,
        "queues": [queue("q3", deserved=("2", "4Gi")), queue("q4", deserved=("2", "4Gi"))],
        "groups": [group("pg5", "q3"), group("pg6", "q4")],
        "pods": [
            pod("p5", "pg5", "2", "4Gi", on="n1", preemptable=False),
            pod("p6", "pg5", "2", "4Gi", on="n2"),
            pod("p7", "pg6", "2", "4Gi"),
        ],
    }
    result = judge(data, RECLAIM)
    assert binds(result) == {}
    assert evictions(result) == ({"ns1/p7": "n2"}, ["ns1/p6"])


def test_case4_pods_are_assigned_according_to_the_order_of_queue_priority() -> None:
    data = {
        "nodes": [node("n5", "2", "4Gi"), node("n6", "2", "4Gi")],
        "queues": [
            queue("q7", capability=("2", "4Gi"), priority=5),
            queue("q8", capability=("2", "4Gi"), priority=1),
            queue("q9", capability=("2", "4Gi"), priority=10),
        ],
        "groups": [group("pg10", "q7"), group("pg11", "q8"), group("pg12", "q9")],
        "pods": [
            pod("p13", "pg10", "2", "4Gi", on="n5"),
            pod("p14", "pg11", "2", "4Gi"),
            pod("p15", "pg12", "2", "4Gi"),
        ],
    }
    result = judge(data, RECLAIM)
    assert binds(result) == {"ns1/p15": "n6"}
    assert evictions(result) == ({}, [])
    # q8 deserves nothing: no resource p14 asks is within its deserved, so it reclaims none
    assert verdict_of(result, "ns1/p14").preemption.message == (
        "reclaim: queue q8 may not reclaim: its allocated plus the pod's request exceeds its "
        "deserved in every resource the pod asks"
    )


def test_case5_can_reclaim_from_other_queues_when_allocated_plus_req_le_deserved_on_one_dim() -> (
    None
):
    """p16 + p17 equal q10's deserved in cpu (2), not in memory (4Gi > 2Gi); q11 deserves
    nothing, so p18 is an immediate victim."""
    data = {
        "nodes": [N12[0]],
        "queues": [
            queue("q10", deserved=("2", "2Gi"), capability=("4", "4Gi")),
            queue("q11", deserved=("0", "0Gi"), capability=("2", "2Gi")),
        ],
        "groups": [group("pg16", "q10"), group("pg17", "q10"), group("pg18", "q11")],
        "pods": [
            pod("p16", "pg16", "1", "3Gi", on="n1"),
            pod("p17", "pg17", "1", "1Gi"),
            pod("p18", "pg18", "1", "1Gi", on="n1", card=1),
        ],
    }
    result = judge(data, RECLAIM)
    assert evictions(result) == ({"ns1/p17": "n1"}, ["ns1/p18"])


def test_case6_can_not_reclaim_from_other_queues_when_allocated_plus_req_gt_deserved() -> None:
    data = {
        "nodes": [N12[0]],
        "queues": [
            queue("q12", deserved=("1", "2Gi"), capability=("4", "4Gi")),
            queue("q13", deserved=("0", "0Gi"), capability=("2", "2Gi")),
        ],
        "groups": [group("pg19", "q12"), group("pg20", "q12"), group("pg21", "q13")],
        "pods": [
            pod("p19", "pg19", "1", "1Gi", on="n1"),
            pod("p20", "pg20", "1", "2Gi"),
            pod("p21", "pg21", "1", "1Gi", on="n1", card=1),
        ],
    }
    result = judge(data, RECLAIM)
    assert evictions(result) == ({}, [])
    assert verdict_of(result, "ns1/p20").preemption.verdict == "no-victims"


def test_case10_preemptivefn_respects_capability_no_reclaim_when_futureused_exceeds_it() -> None:
    data = {
        "nodes": [node("n9", "8", "100Gi"), node("n10", "8", "100Gi")],
        "queues": [
            queue("queue21", deserved=("8", "100Gi"), capability=("8", "100Gi")),
            queue("queue22", capability=("2", "5Gi")),
        ],
        "groups": [group("pg33", "queue21"), group("pg34", "queue21"), group("pg35", "queue22")],
        "pods": [
            pod("p33", "pg33", "7", "90Gi", on="n9"),
            pod("p34", "pg34", "2", "5Gi"),
            pod("p35", "pg35", "2", "5Gi", on="n10"),
        ],
    }
    result = judge(data, RECLAIM)
    assert binds(result) == {}
    assert evictions(result) == ({}, [])
    p34 = verdict_of(result, "ns1/p34")
    assert p34.cause == "queue"  # 7 + 2 > 8 cpu of realCapability: allocate refuses it too
    assert "exceeds its realCapability" in p34.preemption.message


# -- the same test's scalar cases, at the plugin's level ---------------------------------------


def attr(
    name: str,
    allocated: Res,
    total: Res,
    deserved: dict[str, str] | None = None,
    capability: dict[str, str] | None = None,
) -> CapacityAttr:
    """A flat capacity queueAttr as buildQueueAttrs makes it (no guarantee anywhere, so
    realCapability is the total capped by the capability)."""
    from advisor.core.queues import real_capability

    q = Queue(name, capability=capability or {}, deserved=deserved or {})
    out = CapacityAttr(q, 0, allocated=dict(allocated))
    out.real_capability = real_capability(q, dict(total), {})
    out.deserved = capacity_deserved(q, out.real_capability, {})
    return out


def res(cpu: float = 0, memory_gi: float = 0, gpu: float = 0) -> Res:
    """api.NewResource(BuildResourceList(cpu, memory, nvidia.com/gpu)): millicores, bytes,
    thousandths of a gpu (a scalar left out where none is asked)."""
    out: Res = {"cpu": cpu * 1000.0, "memory": memory_gi * GI}
    if gpu:
        out[GPU] = gpu * 1000.0
    return out


def fits(request: Res, room: Res) -> bool:
    return all(request.get(n, 0.0) <= room.get(n, 0.0) for n in request)


def test_case3_cpu_and_memory_overused_scalar_not_reclaim_should_happen() -> None:
    """WITHOUT case3: q5 holds p8 + p9 (A100 10 each; p8 not preemptable), q6 p10 + p11 (2
    cpu, 4Gi each); p12 of q6 asks A100 10 alone. q6 is over its deserved in cpu and memory,
    not in A100, so it may reclaim; on n4 p9 is a victim (q5 holds 20 A100 of 10 deserved)
    and frees what p12 asks: pipelined on n4, p9 evicted."""
    total = {"cpu": 4000.0, "memory": 8.0 * GI, A100: 20000.0}
    deserved = {"cpu": "2", "memory": "4Gi", A100: "10"}
    q5 = attr("q5", {"cpu": 0.0, "memory": 0.0, A100: 20000.0}, total, deserved)
    q6 = attr("q6", {"cpu": 4000.0, "memory": 8.0 * GI}, total, deserved)
    p12 = {"cpu": 0.0, "memory": 0.0, A100: 10000.0}
    assert q6.unpreemptive(p12) is None
    # n3 holds p8 (not preemptable: no reclaimee) and p10 (q6's own); n4 p9 and p11
    p9 = {"cpu": 0.0, "memory": 0.0, A100: 10000.0}
    assert reclaimed({"q5": q5}, p12, [("q5", p9)]) == [0]
    n4_idle = {"cpu": 0.0, "memory": 0.0, A100: 0.0}  # 2 cpu, 4Gi, 10 A100 less p9 and p11
    assert fits(p12, {n: n4_idle[n] + p9.get(n, 0.0) for n in n4_idle})


def test_case7_allocated_without_the_scalar_deserved_names_is_not_reclaimed() -> None:
    """WITHOUT case7: p22 (2 cpu, 4Gi) of queue14 is within its deserved in every resource
    it asks (the gpu it does not ask is no reason), so only p23 (queue15 deserves nothing:
    an immediate victim) is given up, and it frees no cpu: reclaim.go's ValidateVictims
    finds p25's 2 cpu uncovered, nobody is evicted."""
    total = res(4, 8, gpu=4)
    queue14 = attr("queue14", res(2, 4), total, {"cpu": "2", "memory": "4Gi", GPU: "2"})
    queue15 = attr("queue15", res(gpu=1), total)
    queue16 = attr("queue16", res(2, 1, gpu=1), total, {"cpu": "2", "memory": "4Gi", GPU: "2"})
    p25 = res(2, 3, gpu=1)
    assert queue16.unpreemptive(p25) is None  # memory: 1Gi + 3Gi ≤ 4Gi deserved
    attrs = {"queue14": queue14, "queue15": queue15}
    p22, p23 = res(2, 4), res(gpu=1)
    # victim order: queue15 (best-effort, share 1) after queue14 (share 1) in queue order,
    # so first in reverse
    assert queue14.key() < queue15.key()
    assert reclaimed(attrs, p25, [("queue15", p23), ("queue14", p22)]) == [0]
    idle = res(0, 3, gpu=2)  # n7 less p22, p23, p24
    assert not fits(p25, {n: idle.get(n, 0.0) + p23.get(n, 0.0) for n in set(idle) | set(p23)})


def test_case8_reclaimer_dimensions_are_considered_properly_while_evicting_reclaimees() -> None:
    """WITHOUT case8: p30 (1 cpu, 1 gpu) of queue18 reclaims on n8 (1 gpu in all): p26 asks
    memory alone (none of p30's resources: skipped), p27 1 cpu within queue17's 2 cpu
    deserved, p28 a gpu queue17's deserved does not name (an immediate victim): p28 alone."""
    total = res(4, 8, gpu=1)
    queue17 = attr("queue17", res(1, 4, gpu=1), total, {"cpu": "2", "memory": "2Gi"})
    queue18 = attr("queue18", res(2, 4), total, {"cpu": "2", "memory": "4Gi", GPU: "1"})
    p30 = res(1, 0, gpu=1)
    assert queue18.unpreemptive(p30) is None  # gpu: 0 + 1 ≤ 1 deserved
    p26, p27, p28 = res(0, 4), res(1, 0), res(gpu=1)
    for order in ([p26, p27, p28], [p28, p27, p26], [p27, p28, p26]):
        chosen = reclaimed({"queue17": queue17}, p30, [("queue17", p) for p in order])
        assert [order[i] for i in chosen] == [p28]
    idle = res(1, 0)  # n8 less p26..p29
    assert fits(p30, {n: idle.get(n, 0.0) + p28.get(n, 0.0) for n in set(idle) | set(p28)})


def test_case9_reclaimee_with_the_scalar_deserved_names_is_not_reclaimed_on_cpu_memory() -> None:
    """WITHOUT case9: p31 (4 cpu, 4Gi, 1 gpu) of queue19, which deserves one gpu and nothing
    else, holds no more than its deserved gpu: cpu and memory, which deserved does not
    hold, are no reason, so p32 reclaims nothing."""
    total = res(4, 8, gpu=1)
    queue19 = attr("queue19", res(4, 4, gpu=1), total, {GPU: "1"})
    queue20 = attr("queue20", {}, total, {"cpu": "2", "memory": "2Gi"})
    p32 = res(1, 1)
    assert queue20.unpreemptive(p32) is None
    assert reclaimed({"queue19": queue19}, p32, [("queue19", res(4, 4, gpu=1))]) == []


# -- the plugin's own values ----------------------------------------------------------------


BUILT = {"2c2g": ("2", "2Gi"), "2c4g": ("2", "4Gi"), "0c0g": ("0", "0Gi")}


@pytest.mark.parametrize(
    ("case", "deserved", "allocated", "want"),
    [
        ("best-effort queue with allocated resources", None, res(1, 1), 1.0),
        ("best-effort queue with pending requests only (no allocated)", None, {}, 1.0),
        ("best-effort queue with both allocated and request", None, res(1, 1), 1.0),
        ("best-effort queue completely idle", None, {}, 1.0),
        ("queue with deserved but no allocated", "2c2g", {}, 0.0),
        ("queue with deserved, allocated < deserved (CPU dimension)", "2c2g", res(1, 1), 0.5),
        ("queue with deserved, allocated = deserved", "2c2g", res(2, 2), 1.0),
        ("queue with deserved, allocated > deserved (CPU dimension)", "2c2g", res(3, 2), 1.5),
        ("queue with deserved, memory is dominant resource", "2c4g", res(1, 3), 0.75),
        ("queue with deserved, CPU is dominant resource", "2c4g", res(1.5, 2), 0.75),
        ("queue with deserved, allocated exceeds on both dimensions", "2c2g", res(3, 3), 1.5),
        (
            "queue with deserved, request should not affect share calculation",
            "2c2g",
            res(1, 1),
            0.5,
        ),
        ("queue with deserved but zero values", "0c0g", res(1, 1), 1.0),
        ("queue with deserved, allocated is zero", "2c2g", res(0, 0), 0.0),
        ("best-effort queue with only CPU allocated", None, res(1, 0), 1.0),
        ("best-effort queue with only memory allocated", None, res(0, 1), 1.0),
        ("best-effort queue with only CPU request (no allocated)", None, {}, 1.0),
    ],
)
def test_update_queue_attr_share(
    case: str, deserved: str | None, allocated: Res, want: float
) -> None:
    """Test_updateQueueAttrShare (a queue's request, which upstream also sets, plays no part
    and is left out): a queue deserving nothing is best-effort, share 1."""
    given = dict(zip(("cpu", "memory"), BUILT[deserved], strict=True)) if deserved else None
    q = attr("test-queue", allocated, res(100, 1000), given)
    assert q.share == want, case


def test_deserved_is_capped_by_real_capability_and_raised_to_guarantee() -> None:
    """buildQueueAttrs: deserved ∧ realCapability (a resource only deserved names stays),
    then helpers.Max with the guarantee."""
    real = {"cpu": 4000.0, "memory": 8.0 * GI}
    q = Queue("q", deserved={"cpu": "6", "memory": "2Gi", GPU: "3"}, guarantee={"memory": "4Gi"})
    assert capacity_deserved(q, real, resource_list(q.guarantee)) == {
        "cpu": 4000.0,
        "memory": 4.0 * GI,
        GPU: 3000.0,
    }


# -- pkg/scheduler/actions/reclaim/reclaim_test.go, TestReclaim ---------------------------------


def test_reclaim_can_not_reclaim_resources_when_queue_is_not_open_capacity_plugin() -> None:
    """volcano-sh/volcano v1.15.1 pkg/scheduler/actions/reclaim/reclaim_test.go TestReclaim
    "can not reclaim resources when queue is not open(capacity plugin)": capacity's
    PreemptiveFn refuses a queue that is not Open, so preemptor1 (queue q2, Closed) evicts
    nobody, though preemptee2 of q1 is preemptable on the full node. Upstream runs reclaim
    alone on an Inqueue group; here allocate first refuses the task (its queue is Closed)."""
    data = {
        "nodes": [node("n1", "3", "3Gi")],
        "queues": [{"name": "q1"}, {"name": "q2", "state": "Closed"}],
        "groups": [
            {"name": "c1/pg1", "queue": "q1", "min_member": 1, "priority": 10},
            {"name": "c1/pg2", "queue": "q2", "min_member": 1, "priority": 100000},
        ],
        "pods": [
            {**pod("preemptee1", "pg1", "1", "1G", on="n1", card=0, preemptable=False)},
            {**pod("preemptee2", "pg1", "1", "1G", on="n1", card=1)},
            {**pod("preemptee3", "pg1", "1", "1G", on="n1", card=2, preemptable=False)},
            {**pod("preemptor1", "pg2", "1", "1G", priority=100000)},
        ],
    }
    for p in data["pods"]:
        p["name"] = p["name"].replace("ns1/", "c1/")
        p["group"] = p["group"].replace("ns1/", "c1/")
    result = judge(data, ["reclaim"])
    assert evictions(result) == ({}, [])
    verdict = verdict_of(result, "c1/preemptor1")
    assert verdict.cause == "queue"
    assert verdict.preemption.message == ("reclaim: queue q2 is Closed, not Open: it takes no task")
