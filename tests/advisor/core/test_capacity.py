"""Hand cases for Volcano's capacity plugin as the queue plugin (advisor.core.capacity, under
`scheduler.queue_plugin: capacity`): the boundaries the upstream tables
(tests/advisor/core/test_capacity_upstream.py) leave out: a queue at its deserved and at its
realCapability, a capability's unlimited dimensions, the guarantees, and where capacity and
proportion part (Volcano v1.15.1 plugins/capacity/capacity.go)."""

from __future__ import annotations

from typing import Any

from advisor.core.capacity import CapacityAttr, capacity_deserved
from advisor.core.gang import diagnose_jobs
from advisor.core.jobs import Queue
from advisor.core.queues import real_capability, reclaimed
from advisor.core.resource_info import Res, resource_list
from advisor.scenario import scenario_from_data

GI = 2**30
VGPU, GPU = "volcano.sh/vgpu-number", "nvidia.com/gpu"


def node(name: str, cpu: str = "8") -> dict[str, Any]:
    return {
        "name": name,
        "allocatable": {"cpu": cpu, "memory": "64Gi", "pods": 20},
        "cards": [{"index": i, "memory_mib": 16384} for i in range(4)],
    }


def pod(name: str, group: str, cpu: str, on: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "group": group,
        "request": {"gpus": 1, "memory_mib": 1024},
        "resources": {"cpu": cpu, "memory": "1Gi"},
    }
    if on is not None:
        out["node"], out["cards"] = on, [0]
    return out


def run(plugin: str = "capacity", actions: list[str] | None = None, **data: Any) -> Any:
    scheduler: dict[str, Any] = {"profile": "volcano-vgpu", "queue_plugin": plugin}
    if actions is not None:
        scheduler["actions"] = actions
    return diagnose_jobs(scenario_from_data({"scheduler": scheduler, **data}, "capacity.yaml"))


def verdicts(result: Any) -> dict[str, tuple[str, str]]:
    return {d.pod.name: (d.cause, d.message) for d in result.diagnosis.pods}


def placed(result: Any) -> set[str]:
    """The Pending pods the cycle placed."""
    return {d.pod.name for d in result.diagnosis.pods if d.placement is not None}


def one_queue(capability: dict[str, str], pending_cpu: str, **queue: Any) -> dict[str, Any]:
    """Queue `a` holding a running 3-cpu pod, one Pending pod asking `pending_cpu`."""
    return {
        "nodes": [node("n1")],
        "queues": [{"name": "a", "capability": capability, **queue}],
        "groups": [{"name": "ml/run", "queue": "a"}, {"name": "ml/new", "queue": "a"}],
        "pods": [pod("ml/run-0", "ml/run", "3", on="n1"), pod("ml/new-0", "ml/new", pending_cpu)],
    }


# -- allocate: realCapability, not deserved ------------------------------------------------------


def test_a_task_reaching_the_capability_exactly_enters() -> None:
    """3 running + 1 = 4 cpu ≤ the 4-cpu capability (LessEqualWithDimensionAndResourcesName:
    not above), though twice the queue's 2-cpu deserved: capacity bounds by realCapability."""
    result = run(**one_queue({"cpu": "4"}, "1", deserved={"cpu": "2"}))
    assert placed(result) == {"ml/new-0"}


def test_one_millicore_past_the_capability_is_the_queue() -> None:
    result = run(**one_queue({"cpu": "4"}, "1001m", deserved={"cpu": "2"}))
    assert verdicts(result)["ml/new-0"] == (
        "queue",
        "Queue a is overused when considering this task: insufficient cpu "
        "(cpu: 3 allocated + 1.001 > 4 realCapability)",
    )


def two_queues(a_running: str, a_pending: str, **a: Any) -> dict[str, Any]:
    """Queues `a` and `b` (weight 1 each) on 8 cpu: `a` holds `a_running` and asks
    `a_pending` more, `b` holds 1 and asks 4 more (so proportion shares 4 and 4)."""
    return {
        "nodes": [node("n1")],
        "queues": [{"name": "a", **a}, {"name": "b"}],
        "groups": [
            {"name": "ml/a-run", "queue": "a"},
            {"name": "ml/a-new", "queue": "a"},
            {"name": "ml/b-run", "queue": "b"},
            {"name": "ml/b-new", "queue": "b"},
        ],
        "pods": [
            pod("ml/a-run-0", "ml/a-run", a_running, on="n1"),
            pod("ml/a-new-0", "ml/a-new", a_pending),
            pod("ml/b-run-0", "ml/b-run", "1", on="n1"),
            pod("ml/b-new-0", "ml/b-new", "4"),
        ],
    }


def test_proportion_bounds_by_the_weighted_share_capacity_by_real_capability() -> None:
    """`a` holds 3 cpu and asks 2 more: proportion's deserved is half the cluster (4), so the
    pod is refused by its queue; capacity's realCapability is the whole 8 cpu, so it fits."""
    data = two_queues("3", "2")
    assert verdicts(run("proportion", **data))["ml/a-new-0"] == (
        "queue",
        "Queue a is overused when considering this task: insufficient cpu "
        "(cpu: 3 allocated + 2 > 4 deserved)",
    )
    assert "ml/a-new-0" in placed(run("capacity", **data))


def test_a_queue_past_its_deserved_is_never_overused() -> None:
    """capacity registers no OverusedFn and bounds by realCapability: `a` holding 4 cpu of a
    1-cpu deserved still has its next job tried and placed; under proportion `a` is at its
    4-cpu share and its queue refuses the pod."""
    data = two_queues("4", "1", deserved={"cpu": "1"})
    assert "ml/a-new-0" in placed(run("capacity", **data))
    cause, message = verdicts(run("proportion", **data))["ml/a-new-0"]
    assert (cause, message.startswith("Queue a is overused")) == ("queue", True)


# -- a capability's unlimited dimensions ----------------------------------------------------


def test_a_capability_of_zero_or_without_cpu_leaves_cpu_unlimited() -> None:
    """buildQueueAttrs: a capability's cpu or memory ≤ 0 is MaxFloat64; a resource it does
    not name is the cluster's (MinDimensionResource, Infinity). 7 cpu of the 8-cpu cluster
    enter a queue capped at 2Gi of memory alone, or at cpu 0."""
    for capability in ({"memory": "2Gi"}, {"cpu": "0", "memory": "2Gi"}):
        assert placed(run(**one_queue(capability, "4"))) == {"ml/new-0"}
    q = Queue("a", capability={"cpu": "0", "memory": "2Gi"})
    total = {"cpu": 8000.0, "memory": 64.0 * GI, VGPU: 40000.0}
    assert real_capability(q, total, {}) == {
        "cpu": 8000.0,
        "memory": 2.0 * GI,
        VGPU: 40000.0,
    }


def test_a_capability_in_a_scalar_bounds_that_scalar_alone() -> None:
    """A capability of 1 vGPU: the Pending pod's second vGPU is refused, cpu is not checked
    against anything but the cluster."""
    result = run(**one_queue({VGPU: "1"}, "1"))
    assert verdicts(result)["ml/new-0"] == (
        "queue",
        "Queue a is overused when considering this task: insufficient volcano.sh/vgpu-number "
        "(volcano.sh/vgpu-number: 1 allocated + 1 > 1 realCapability)",
    )


# -- guarantees ---------------------------------------------------------------------------------


def test_another_queues_guarantee_is_kept_out_of_this_queues_real_capability() -> None:
    """realCapability = total − Σguarantee + own guarantee: queue `g` guarantees 4 of the 8
    cpu, so queue `a` (no capability) may hold 4: its 3 + 2 is refused, by the queue, with
    the node's room to spare."""
    data = one_queue({}, "2")
    data["queues"].append({"name": "g", "guarantee": {"cpu": "4"}})
    assert verdicts(run(**data))["ml/new-0"] == (
        "queue",
        "Queue a is overused when considering this task: insufficient cpu "
        "(cpu: 3 allocated + 2 > 4 realCapability)",
    )
    data = one_queue({}, "1")
    data["queues"].append({"name": "g", "guarantee": {"cpu": "4"}})
    assert "ml/new-0" in placed(run(**data))


def test_deserved_is_never_below_the_guarantee() -> None:
    """helpers.Max(deserved, guarantee): a queue guaranteed 2 cpu deserves 2 without a
    deserved of its own, so it is not best-effort."""
    q = Queue("g", guarantee={"cpu": "2"})
    assert capacity_deserved(
        q, {"cpu": 8000.0, "memory": 64.0 * GI}, resource_list(q.guarantee)
    ) == {"cpu": 2000.0}


def attr(
    allocated: Res, deserved: dict[str, str], guarantee: dict[str, str] | None = None
) -> CapacityAttr:
    q = Queue("q", deserved=deserved, guarantee=guarantee or {})
    total = {"cpu": 8000.0, "memory": 64.0 * GI, GPU: 4000.0}
    out = CapacityAttr(q, 0, allocated=allocated, guarantee=resource_list(q.guarantee))
    out.real_capability = real_capability(q, total, out.guarantee)
    out.deserved = capacity_deserved(q, out.real_capability, out.guarantee)
    return out


CPU1 = {"cpu": 1000.0}


def test_a_guarantee_keeps_the_victims_that_would_take_the_queue_below_it() -> None:
    """checkGuaranteeConstraint, on the allocations less the victims before: 3 cpu held,
    deserved 1 raised to the 2 guaranteed. A 2-cpu pod would leave 1 (below the guarantee,
    though 3 > 2 deserved): kept; a 1-cpu pod leaves 2: a victim."""
    q = attr({"cpu": 3000.0}, {"cpu": "1"}, {"cpu": "2"})
    assert reclaimed({"q": q}, CPU1, [("q", {"cpu": 2000.0}), ("q", CPU1)]) == [1]


def test_a_queue_below_its_guarantee_keeps_even_its_immediate_victims() -> None:
    """A pod asking none of the queue's deserved resources is an immediate victim, but the
    guarantee is checked first: a queue holding 1 of its 2 guaranteed cpu gives up nothing."""
    q = attr({"cpu": 1000.0, GPU: 1000.0}, {}, {"cpu": "2"})
    gpu = {GPU: 1000.0}
    assert reclaimed({"q": q}, gpu, [("q", gpu)]) == []
    free = attr({"cpu": 1000.0, GPU: 1000.0}, {"cpu": "2"})
    assert reclaimed({"q": free}, gpu, [("q", gpu)]) == [0]


def test_victims_stop_once_the_queue_is_back_at_its_deserved() -> None:
    """GreaterPartlyWithRelevantDimensions is strict: 3 cpu held of 1 deserved gives up two
    1-cpu pods (3 > 1, 2 > 1), not the third (1 = 1)."""
    q = attr({"cpu": 3000.0}, {"cpu": "1"})
    assert reclaimed({"q": q}, CPU1, [("q", CPU1)] * 3) == [0, 1]


# -- reclaim's PreemptiveFn at the deserved boundary ---------------------------------------------


def test_a_queue_may_reclaim_up_to_its_deserved_exactly() -> None:
    """futureUsed ≤ deserved in some resource the task asks (equal counts)."""
    q = attr({"cpu": 1000.0, "memory": GI}, {"cpu": "2", "memory": "1Gi"})
    assert q.unpreemptive({"cpu": 1000.0, "memory": GI}) is None  # cpu 2 = 2
    assert q.unpreemptive({"cpu": 1001.0, "memory": GI}) == (
        "its allocated plus the pod's request exceeds its deserved in every resource the pod asks"
    )
    # a resource the queue neither holds nor deserves is left out (ZeroFiltered) ...
    assert q.unpreemptive({"cpu": 500.0, GPU: 1000.0}) is None
    # ... one it holds and deserves none of is compared, and is no help
    held = attr({"cpu": 1000.0, GPU: 1000.0}, {"cpu": "1"})
    assert held.unpreemptive({"cpu": 500.0, GPU: 1000.0}) is not None


def test_equal_shares_put_a_queue_with_a_deserved_before_a_best_effort_one() -> None:
    """compareShareWithDeserved: a queue at its deserved (share 1) goes before a best-effort
    queue (share 1 always), whichever was listed first."""
    best_effort = CapacityAttr(Queue("b"), 0, allocated={"cpu": 1000.0})
    at_deserved = attr({"cpu": 2000.0}, {"cpu": "2"})
    at_deserved.order = 1
    assert best_effort.share == at_deserved.share == 1.0
    assert at_deserved.key() < best_effort.key()


def test_enqueue_reads_real_capability_under_both_plugins() -> None:
    """JobEnqueueable is the same test under capacity as under proportion (minResources +
    allocated + inqueue − elastic ≤ realCapability): a group whose minResources reach the
    capability exactly is admitted, one millicore more is not."""
    for plugin in ("capacity", "proportion"):
        for cpu, admitted in (("1", True), ("1001m", False)):
            data = one_queue({"cpu": "4"}, cpu)
            # the running group's minResources are what it holds: no elastic, no inqueue
            data["groups"][0]["min_resources"] = {"cpu": "3"}
            data["groups"][1]["min_resources"] = {"cpu": cpu}
            result = run(plugin, ["enqueue", "allocate"], **data)
            state = {g.name: g.state for g in result.groups}["ml/new"]
            assert (state != "not-admitted") is admitted, (plugin, cpu)
