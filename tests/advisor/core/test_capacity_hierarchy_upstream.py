"""Volcano v1.15.1's capacity plugin with hierarchical queues, its table converted
(volcano-sh/volcano, tag v1.15.1, pkg/scheduler/plugins/capacity/capacity_test.go,
Test_capacityPlugin_OnSessionOpenWithHierarchy), each case cited by its name, and hand cases
(core.capacity_tree; docs/design.md §10.2).

Translation, as tests/advisor/core/test_capacity_upstream.py's: each pod also asks one small
vGPU so that the cards never decide; where upstream's pods ask `nvidia.com/gpu` or
`nvidia.com/a100` the pods here ask as many vGPUs (`volcano.sh/vgpu-number`, a card each)
and the queues' scalar deserved and capability name that resource instead; upstream's
`rdma/hca` beside the a100 (case12) is left out, no queue names it. The upstream tiers hold
capacity (with enableHierarchy), predicates and gang; its actions are enqueue, reclaim,
allocate, given here in that order (the advisor judges reclaim after allocate: in these
cases allocate places nothing reclaim would have changed). Queues are listed in upstream's
order, `root` included.

Test_capacityPlugin_AncestorReclaimScenarios is converted in
test_capacity_ancestor_reclaim_upstream.py. Not converted:
Test_buildHierarchicalQueueAttrs_nilSafety (a session without the root queue
or with a job whose queue was deleted mid-session: the advisor always has `root`, and a
scenario's groups name listed queues).
"""

from __future__ import annotations

from typing import Any

from advisor.core.capacity_tree import HierAttr, open_hierarchy
from advisor.core.gang import diagnose_jobs
from advisor.core.queues import JobLoad
from advisor.scenario import scenario_from_data
from tests.advisor.core import volcano_tables as tables

SOURCE = "volcano-sh/volcano v1.15.1 pkg/scheduler/plugins/capacity/capacity_test.go"
WITH = f"{SOURCE} Test_capacityPlugin_OnSessionOpenWithHierarchy"
GPU = "volcano.sh/vgpu-number"  # upstream's nvidia.com/gpu, nvidia.com/a100
GI = 2**30
ACTIONS = ["enqueue", "reclaim", "allocate"]


def node(name: str, cpu: str, memory: str, pods: int = 11, cards: int = 4) -> dict[str, Any]:
    out = tables.node(name, cpu, memory, pods)
    out["cards"] = [{"index": i, "memory_mib": 16384} for i in range(cards)]
    return out


def pod(
    name: str, group: str, cpu: str, memory: str, gpus: int = 1, mib: int = 1024, **rest: Any
) -> Any:
    """`gpus` vGPUs of `mib` in all (16384 a card: whole cards, as upstream's devices)."""
    out = tables.pod("ns1", mib, name, group, cpu, memory, **rest)
    out["request"]["gpus"] = gpus
    if "node" in out:
        out["cards"] = list(range(rest.get("card", 0), rest.get("card", 0) + gpus))
    return out


def queue(
    name: str,
    parent: str | None,
    deserved: dict[str, str] | None = None,
    capability: dict[str, str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """buildQueueWithParents(name, parent, deserved, capability)."""
    out: dict[str, Any] = {"name": name, **extra}
    if parent:
        out["parent"] = parent
    if deserved:
        out["deserved"] = deserved
    if capability:
        out["capability"] = capability
    return out


def res(cpu: str | None, memory: str | None, **scalars: str) -> dict[str, str]:
    """api.BuildResourceList: an empty quantity is left out."""
    out = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v}
    return {**out, **{k.replace("_", "/"): v for k, v in scalars.items()}}


def group(name: str, queue: str, phase: str, min_member: int = 1, **extra: Any) -> Any:
    return {"name": f"ns1/{name}", "queue": queue, "min_member": min_member, "phase": phase} | extra


def judge(data: dict[str, Any]) -> Any:
    scheduler = {
        "profile": "volcano-vgpu",
        "actions": ACTIONS,
        "queue_plugin": "capacity",
        "enable_hierarchy": True,
    }
    return diagnose_jobs(scenario_from_data({"scheduler": scheduler, **data}, "hier.yaml"))


def binds(result: Any) -> dict[str, str]:
    return {d.pod.name: d.placement.node for d in result.diagnosis.pods if d.placement is not None}


def verdict_of(result: Any, name: str) -> Any:
    (found,) = [d for d in result.diagnosis.pods if d.pod.name == name]
    return found


def evictions(result: Any) -> tuple[dict[str, str], list[str]]:
    pipelined, evicted = {}, []
    for d in result.diagnosis.pods:
        if d.preemption is not None and d.preemption.verdict == "evicts":
            pipelined[d.pod.name] = d.preemption.node
            evicted.extend(d.preemption.victims)
    return pipelined, evicted


ROOT = queue("root", None)
N1 = [node("n1", "8", "8Gi")]
# case0, case1's queues
Q1 = [
    ROOT,
    queue("q1", "root", capability=res("4", "4Gi")),
    queue("q2", "root", capability=res("4", "4Gi")),
    queue("q11", "q1", capability=res("1", "1Gi")),
    queue("q12", "q1", capability=res("3", "3Gi")),
]
# case2..4's
Q3 = {
    "q3": queue("q3", "root", res("4", "4Gi", pods="10"), res("4", "4Gi", pods="10")),
    "q4": queue("q4", "root", res("2", "2Gi", pods="1"), res("4", "4Gi", pods="4")),
    "q31": queue("q31", "q3", res("2", "2Gi", pods="2"), res("4", "4Gi", pods="4")),
    "q32": queue("q32", "q3", res("2", "2Gi", pods="2"), res("4", "4Gi", pods="4")),
    "q33": queue("q33", "q3", res("0", "0Gi", pods="2"), res("4", "4Gi", pods="4")),
}


def test_case0_pod_allocatable_when_queue_is_leaf_queue() -> None:
    """WITH case0: p1 (1 cpu, 1Gi) of q11, a leaf under q1, fits q11's 1 cpu capability."""
    data = {
        "nodes": N1,
        "queues": Q1,
        "groups": [group("pg1", "q11", "Inqueue")],
        "pods": [pod("p1", "pg1", "1", "1Gi")],
    }
    assert binds(judge(data)) == {"ns1/p1": "n1"}


def test_case1_pod_not_allocatable_when_queue_is_not_leaf_queue() -> None:
    """WITH case1: pg2 is in q1, which has children: buildHierarchicalQueueAttrs fails, and
    the plugin refuses every task (readyToSchedule false)."""
    data = {
        "nodes": N1,
        "queues": Q1,
        "groups": [group("pg2", "q1", "Pending")],
        "pods": [pod("p2", "pg2", "1", "1Gi")],
    }
    result = judge(data)
    assert binds(result) == {}
    p2 = verdict_of(result, "ns1/p2")
    assert p2.cause == "queue"
    assert p2.message == (
        "Capacity plugin failed to check queue's hierarchical structure: the Queue q1 of a "
        "job is not leaf queue"
    )


def test_case2_pod_allocatable_when_queue_has_not_exceed_capability() -> None:
    """WITH case2: pg3 (two pods of 2 cpu, 2Gi) in q31: 4 cpu within q31's and q3's 4."""
    data = {
        "nodes": N1,
        "queues": [ROOT, Q3["q3"], Q3["q4"], Q3["q31"], Q3["q32"]],
        "groups": [group("pg3", "q31", "Inqueue", min_member=2)],
        "pods": [pod("p3", "pg3", "2", "2Gi"), pod("p4", "pg3", "2", "2Gi")],
    }
    assert binds(judge(data)) == {"ns1/p3": "n1", "ns1/p4": "n1"}


def test_case3_can_reclaim_from_other_queues_when_allocated_lt_deserved() -> None:
    """WITH case3: n1 is full (p5 4 cpu of q4; p6, not preemptable, and p7 of q31); p8 of
    q32 (nothing allocated, 2 deserved) reclaims. q4 and q31 both hold more than they
    deserve, but VictimQueueOrderFn takes q31 first (it shares q3 with q32, a deeper
    ancestor than q4's root): p7 alone is evicted."""
    data = {
        "nodes": N1,
        "queues": [ROOT, Q3["q3"], Q3["q31"], Q3["q32"], Q3["q4"]],
        "groups": [
            group("pg4", "q4", "Running"),
            group("pg5", "q31", "Running"),
            group("pg6", "q32", "Inqueue"),
        ],
        "pods": [
            pod("p5", "pg4", "4", "4Gi", on="n1", card=0),
            pod("p6", "pg5", "2", "2Gi", on="n1", card=1, preemptable=False),
            pod("p7", "pg5", "2", "2Gi", on="n1", card=2),
            pod("p8", "pg6", "2", "2Gi"),
        ],
    }
    result = judge(data)
    assert binds(result) == {}
    assert evictions(result) == ({"ns1/p8": "n1"}, ["ns1/p7"])


def test_case4_pod_is_not_allocatable_when_ancestor_queues_real_capability_not_enough() -> None:
    """WITH case4: q31 and q32 hold 2 cpu each, all of q3's 4: p10 (3 cpu) of q33, within
    q33's own 4 cpu capability, does not fit q3's realCapability."""
    data = {
        "nodes": N1,
        "queues": [ROOT, Q3["q3"], Q3["q31"], Q3["q32"], Q3["q33"]],
        "groups": [
            group("pg5", "q31", "Running"),
            group("pg7", "q32", "Running"),
            group("pg8", "q33", "Inqueue"),
        ],
        "pods": [
            pod("p6", "pg5", "2", "2Gi", on="n1", card=0, preemptable=False),
            pod("p9", "pg7", "2", "2Gi", on="n1", card=1),
            pod("p10", "pg8", "3", "3Gi"),
        ],
    }
    result = judge(data)
    assert binds(result) == {}
    p10 = verdict_of(result, "ns1/p10")
    assert p10.cause == "queue"
    assert p10.message == (
        "Queue q33 is overused when considering this task: insufficient cpu, memory (in its "
        "ancestor queue q3: cpu: 4 allocated + 3 > 4 realCapability, memory: 4Gi allocated + "
        "3Gi > 4Gi realCapability)"
    )


def test_case5_capability_cpu_or_memory_not_specified_is_inherited_from_parent() -> None:
    """WITH case5: q5 and q51 name memory alone; their cpu is the root's (unlimited), so
    p11's 1 cpu fits."""
    data = {
        "nodes": N1,
        "queues": [
            ROOT,
            queue("q5", "root", capability=res(None, "4Gi")),
            queue("q51", "q5", capability=res(None, "2Gi")),
        ],
        "groups": [group("pg9", "q51", "Running")],
        "pods": [pod("p11", "pg9", "1", "0")],
    }
    assert binds(judge(data)) == {"ns1/p11": "n1"}


def test_case6_podgroup_cant_be_enqueued_when_any_ancestor_queues_capability_not_enough() -> None:
    """WITH case6: pg10 and pg11 (minResources 2 cpu, 4Gi each) in q61 and q62, whose
    capability is q6's (2 cpu, 4Gi): pg10 is admitted and counted inqueue in q6, so pg11
    exceeds q6's. Upstream's groups have no pods; here each has one (the outcome is the
    enqueue's)."""
    data = {
        "nodes": N1,
        "queues": [
            ROOT,
            queue("q6", "root", capability=res("2", "4Gi")),
            queue("q61", "q6"),
            queue("q62", "q6"),
        ],
        "groups": [
            group("pg10", "q61", "Pending", min_resources=res("2", "4Gi")),
            group("pg11", "q62", "Pending", min_resources=res("2", "4Gi")),
        ],
        "pods": [pod("p10", "pg10", "2", "4Gi"), pod("p11", "pg11", "2", "4Gi")],
    }
    result = judge(data)
    assert binds(result) == {"ns1/p10": "n1"}
    p11 = verdict_of(result, "ns1/p11")
    assert p11.cause == "queue"
    assert p11.message == "queue resource quota insufficient: insufficient cpu, memory"


def _tree(data: dict[str, Any]) -> dict[str, HierAttr]:
    scheduler = {"profile": "volcano-vgpu", "queue_plugin": "capacity", "enable_hierarchy": True}
    cluster = scenario_from_data({"scheduler": scheduler, **data}, "hier.yaml")
    loads: list[JobLoad] = []
    return {n: a for n, a in open_hierarchy(cluster, loads).items() if isinstance(a, HierAttr)}


def test_case7_children_guarantees_beyond_parents_capability_should_not_panic() -> None:
    """WITH case7: q71 and q72 each guarantee 4 cpu, 3Gi under q7's 6 cpu, 4Gi: q7's
    realCapability less both guarantees leaves nothing, so each child's realCapability is
    its own guarantee."""
    tree = _tree(
        {
            "nodes": N1,
            "queues": [
                ROOT,
                queue("q7", "root", capability=res("6", "4Gi")),
                queue("q71", "q7", capability=res("6", "4Gi"), guarantee=res("4", "3Gi")),
                queue("q72", "q7", capability=res("6", "4Gi"), guarantee=res("4", "3Gi")),
            ],
        }
    )
    for name in ("q71", "q72"):
        real = tree[name].real_capability
        assert (real["cpu"], real["memory"]) == (4000.0, 3.0 * GI)
    assert tree["q7"].real_capability["cpu"] == 6000.0


def test_case8_deserved_with_a_scalar_resource_passes_the_check() -> None:
    """WITH case8: q8 deserves 8 gpus, q81 4; p12 (2 cpu, 2Gi, 1 gpu) of q81 binds."""
    data = {
        "nodes": [node("n-gpu", "8", "8Gi", pods=10, cards=8)],
        "queues": [
            ROOT,
            queue("q8", "root", res("4", "4Gi", **{GPU: "8"})),
            queue("q81", "q8", res("2", "2Gi", **{GPU: "4"})),
            queue("q82", "q8", res("2", "2Gi", **{GPU: "4"})),
        ],
        "groups": [group("pg12", "q81", "Inqueue")],
        "pods": [pod("p12", "pg12", "2", "2Gi")],
    }
    assert binds(judge(data)) == {"ns1/p12": "n-gpu"}


def test_case9_scalar_resources_at_0_in_deserved_still_pass_the_check() -> None:
    """WITH case9: q9 and q91 deserve hugepages-1Gi 0 beside their gpus; p13 binds."""
    data = {
        "nodes": [node("n2", "8", "8Gi", pods=10, cards=8)],
        "queues": [
            ROOT,
            queue("q9", "root", res("2", "2Gi", **{GPU: "8", "hugepages-1Gi": "0"})),
            queue("q91", "q9", res("2", "2Gi", **{GPU: "4", "hugepages-1Gi": "0"})),
        ],
        "groups": [group("pg13", "q91", "Inqueue")],
        "pods": [pod("p13", "pg13", "2", "2Gi")],
    }
    assert binds(judge(data)) == {"ns1/p13": "n2"}


def test_case10_root_capability_beyond_the_cluster_should_not_panic() -> None:
    """WITH case10: the root's own capability (16 cpu, 16Gi, above n1's 8) is its
    realCapability, not bounded by the cluster; q10's is its capability within it."""
    tree = _tree(
        {
            "nodes": N1,
            "queues": [
                queue("root", None, capability=res("16", "16Gi")),
                queue("q10", "root", capability=res("10", "4Gi")),
            ],
        }
    )
    assert tree["root"].real_capability == {"cpu": 16000.0, "memory": 16.0 * GI}
    assert tree["q10"].real_capability == {"cpu": 10000.0, "memory": 4.0 * GI}


def test_case11_capability_scalars_not_specified_are_inherited_from_parent() -> None:
    """WITH case11: case11_queue1 names no capability (the root's, unlimited, in every
    resource of the cluster); its children cap 4 gpus each; p14 and p15 (4 gpus each) bind."""
    data = {
        "nodes": [node("n2", "8", "8Gi", pods=10, cards=8)],
        "queues": [
            ROOT,
            queue("case11_queue1", "root"),
            queue("case11_queue11", "case11_queue1", capability=res("4", "4Gi", **{GPU: "4"})),
            queue("case11_queue12", "case11_queue1", capability=res("4", "4Gi", **{GPU: "4"})),
        ],
        "groups": [
            group("pg14", "case11_queue11", "Inqueue"),
            group("pg15", "case11_queue12", "Inqueue"),
        ],
        "pods": [pod("p14", "pg14", "1", "1Gi", gpus=4), pod("p15", "pg15", "1", "1Gi", gpus=4)],
    }
    assert binds(judge(data)) == {"ns1/p14": "n2", "ns1/p15": "n2"}


def test_case12_can_reclaim_when_allocated_le_deserved_on_a_single_scalar_dimension() -> None:
    """WITH case12 (the a100s as whole cards): n3's 5 a100s hold p17 and p18 (2 each,
    case12_queue12, which deserves nothing; p18 not preemptable); p16 (2) of case12_queue11
    (deserves 2) reclaims: p17, an immediate victim, is evicted."""
    data = {
        "max_vgpus_per_card": 1,  # a card one device, as upstream's a100s count
        "nodes": [node("n3", "16", "16Gi", cards=5)],
        "queues": [
            queue("root", None, res("16", "16Gi", **{GPU: "4"})),
            queue("case12_queue1", "root", res(None, None, **{GPU: "2"})),
            queue("case12_queue11", "case12_queue1", res(None, None, **{GPU: "2"})),
            queue("case12_queue12", "case12_queue1"),
        ],
        "groups": [
            group("pg16", "case12_queue11", "Inqueue"),
            group("pg17", "case12_queue12", "Running"),
            group("pg18", "case12_queue12", "Running"),
        ],
        "pods": [
            pod("p16", "pg16", "1", "1Gi", gpus=2, mib=32768),
            pod("p17", "pg17", "1", "1Gi", gpus=2, mib=32768, on="n3", card=0),
            pod("p18", "pg18", "1", "1Gi", 2, 32768, on="n3", card=2, preemptable=False),
        ],
    }
    result = judge(data)
    assert binds(result) == {}
    assert evictions(result) == ({"ns1/p16": "n3"}, ["ns1/p17"])
