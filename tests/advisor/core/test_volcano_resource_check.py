"""Volcano's own node-resource check in the profiles that run its session (cce,
volcano-vgpu), beside kube-scheduler's NodeResourcesFit (hami). Hand cases, computed from
volcano-sh/volcano v1.15.1 (the same code in v1.14.1):

- pkg/scheduler/actions/allocate/allocate.go, `predicate`: before any predicate plugin,
  `task.InitResreq.LessEqualWithResourcesName(node.FutureIdle(), api.Zero)`; on failure
  the node's reason is `api.WrapInsufficientResourceReason(resources)`;
- pkg/scheduler/api/resource_info.go, `LessEqualWithResourcesName`: cpu, memory, then each
  scalar the task has, `l < r || |l - r| < 0.1`, a request of zero included; it lists every
  dimension short;
- pkg/scheduler/api/unschedule_info.go, `WrapInsufficientResourceReason`: "Insufficient " +
  the first of them only;
- pkg/scheduler/api/pod_info.go, `GetPodResourceRequest`: `result.AddScalar(pods, 1)`, so
  the pod slot is a scalar of the same check; api/node_info.go `allocateIdleResource`
  lets Idle go negative when the node's pods ask more than it has.

kube-scheduler (k8s.io/kubernetes v1.35.3, noderesources/fit.go `fitsRequest`) skips a
resource the pod asks none of ("skip checking resource request with quantity zero",
fit_test.go TestEnoughRequests) and names every resource short, after the static filters.
"""

from __future__ import annotations

from typing import Any

import pytest

from advisor.core.diagnose import diagnose
from advisor.scenario import scenario_from_data

VOLCANO = ("cce", "volcano-vgpu")


def _cluster(profile: str, nodes: list[dict[str, Any]], pod: dict[str, Any]) -> Any:
    pending = {"name": "ml/p", "request": {"gpus": 1, "memory_mib": 1024}, **pod}
    data = {"scheduler": {"profile": profile}, "nodes": nodes, "pods": [pending]}
    return scenario_from_data(data, "volcano-fit.yaml")


def _node(name: str = "n0", **extra: Any) -> dict[str, Any]:
    return {"name": name, "cards": [{"index": 0, "memory_mib": 16384}], **extra}


def _overcommitted(name: str = "n0", **extra: Any) -> dict[str, Any]:
    """8 cores allocatable, a DaemonSet pod asking 20: FutureIdle cpu is -12 cores."""
    ds = {"name": "kube-system/ds", "resources": {"cpu": "20", "memory": "1Gi"}}
    return _node(name, allocatable={"cpu": "8", "memory": "64Gi"}, other_pods=[ds], **extra)


@pytest.mark.parametrize("profile", VOLCANO)
def test_an_overcommitted_node_refuses_a_pod_asking_no_cpu(profile: str) -> None:
    (verdict,) = diagnose(_cluster(profile, [_overcommitted()], {})).pods
    assert verdict.placement is None
    assert verdict.cause == "node-resources"
    assert verdict.node_summary == "0/1 nodes are unavailable: 1 Insufficient cpu."
    assert verdict.node_reasons == (
        ("n0", ("Insufficient cpu: overcommitted by 12, pod needs 0",)),
    )


def test_kube_scheduler_places_it_there() -> None:
    (verdict,) = diagnose(_cluster("hami", [_overcommitted()], {})).pods
    assert verdict.cause == "schedulable"
    assert verdict.placement is not None
    assert verdict.placement.node == "n0"


@pytest.mark.parametrize("profile", VOLCANO)
def test_a_request_equal_to_the_room_left_fits(profile: str) -> None:
    node = _node(allocatable={"cpu": "2", "memory": "4Gi", "pods": 2})
    pod = {"resources": {"cpu": "2", "memory": "4Gi"}}
    (verdict,) = diagnose(_cluster(profile, [node], pod)).pods
    assert verdict.cause == "schedulable"


@pytest.mark.parametrize("profile", VOLCANO)
def test_only_the_first_resource_short_is_named_cpu_memory_then_pods(profile: str) -> None:
    def ds(node: str) -> list[dict[str, Any]]:
        return [{"name": f"kube-system/ds-{node}", "resources": {"cpu": "1", "memory": "1Gi"}}]

    tight = {"cpu": "1", "memory": "1Gi", "pods": 1}
    nodes = [
        _node("a", allocatable=tight, other_pods=ds("a")),  # cpu, memory and pods short
        _node("b", allocatable={**tight, "cpu": "8"}, other_pods=ds("b")),  # memory and pods
        _node("c", allocatable={**tight, "cpu": "8", "memory": "8Gi"}, other_pods=ds("c")),
    ]
    pod = {"resources": {"cpu": "500m", "memory": "512Mi"}}
    (verdict,) = diagnose(_cluster(profile, nodes, pod)).pods
    assert verdict.node_summary == (
        "0/3 nodes are unavailable: 1 Insufficient cpu, 1 Insufficient memory, 1 Insufficient pods."
    )
    reasons = {name: [line.split(":")[0] for line in lines] for name, lines in verdict.node_reasons}
    assert reasons == {
        "a": ["Insufficient cpu"],
        "b": ["Insufficient memory"],
        "c": ["Insufficient pods"],
    }


def test_kube_scheduler_names_every_resource_short() -> None:
    ds = {"name": "kube-system/ds", "resources": {"cpu": "1", "memory": "1Gi"}}
    node = _node(allocatable={"cpu": "1", "memory": "1Gi", "pods": 1}, other_pods=[ds])
    pod = {"resources": {"cpu": "500m", "memory": "512Mi"}}
    (verdict,) = diagnose(_cluster("hami", [node], pod)).pods
    assert verdict.node_summary == (
        "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 1 Too many pods."
    )


@pytest.mark.parametrize("profile", VOLCANO)
def test_the_resource_check_comes_before_the_predicates(profile: str) -> None:
    # allocate's predicate returns at the resource check: NodeUnschedulable (in the
    # predicates plugin) never runs for a node short on cpu. Node c's one card is full.
    full: dict[str, Any] = {"name": "ml/full", "node": "c", "cards": [0]}
    full["request"] = {"gpus": 1, "memory_mib": 16384}
    nodes = [_overcommitted("a", unschedulable=True), _node("b", unschedulable=True), _node("c")]
    data = {
        "scheduler": {"profile": profile},
        "nodes": nodes,
        "pods": [full, {"name": "ml/p", "request": {"gpus": 1, "memory_mib": 1024}}],
    }
    (verdict,) = diagnose(scenario_from_data(data, "volcano-fit.yaml")).pods
    reasons = {name: lines[0] for name, lines in verdict.node_reasons}
    assert reasons["a"] == "Insufficient cpu: overcommitted by 12, pod needs 0"
    assert reasons["b"] == "node(s) were unschedulable"
    assert ("Insufficient cpu", 1) in verdict.reason_counts
    data["scheduler"] = {"profile": "hami"}
    (kube,) = diagnose(scenario_from_data(data, "volcano-fit.yaml")).pods
    assert ("node(s) were unschedulable", 2) in kube.reason_counts
