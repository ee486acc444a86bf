"""Disagreements the differential test found, shrunk, with upstream's answer recorded: each
runs without Go, on the advisor alone (docs/conformance.md)."""

from __future__ import annotations

from typing import Any

from advisor.core.gang import judge
from advisor.scenario import scenario_from_data
from conformance.compare import advisor_verdicts

AFFINITY = "node(s) didn't match Pod's node affinity/selector"


def _gt(bound: str) -> dict[str, Any]:
    return {"match_expressions": [{"key": "rank", "operator": "Gt", "values": [bound]}]}


def test_a_gt_bound_that_is_no_label_value_matches_no_node() -> None:
    """Seed 1387, shrunk. kube-scheduler v1.35.3 (k8s.io/kubernetes, NodeAffinity over
    apimachinery v0.35.3 labels.NewRequirement, selector.go:219) checks every value as a
    label value, Gt's bound too: "+2" parses as an integer but is no label value, so the
    term matches nothing; the advisor had checked values for In and NotIn only."""
    scenario = {
        "scheduler": {"profile": "volcano-vgpu"},
        "nodes": [
            {"name": "node-0", "labels": {"rank": "5"},
             "cards": [{"index": 0, "memory_mib": 16384}]}
        ],
        "pods": [
            {"name": "ml/job-3", "request": {"gpus": 1, "memory_mib": 2048},
             "affinity": {"node": {"required": [_gt("+2")]}}},
            {"name": "ml/job-4", "request": {"gpus": 1, "memory_mib": 2048},
             "affinity": {"node": {"required": [_gt("+2"), _gt("002")]}}},
        ],
    }  # fmt: skip
    assert advisor_verdicts(scenario) == {
        "ml/job-3": {"node-0": (AFFINITY,)},
        "ml/job-4": {},  # the other term ("002": a label value) matches
    }


def test_an_overcommitted_node_refuses_a_pod_asking_no_cpu_under_volcano() -> None:
    """Session seed 635, shrunk. Volcano v1.14.1's allocate (actions/allocate/allocate.go
    `predicate`, line 820; v1.15.1 line 988) checks `task.InitResreq.
    LessEqualWithResourcesName(node.FutureIdle(), api.Zero)` before its predicates: every
    dimension, a request of zero too, and a DaemonSet pod asking 20 cores of 8 leaves
    FutureIdle cpu at -12. Upstream: "0/1 nodes are unavailable: 1 Insufficient cpu."; the
    advisor had judged the node by NodeResourcesFit's rule, which skips a zero request."""
    scenario = {
        "scheduler": {"profile": "volcano-vgpu"},
        "policy": {"card": "legacy"},
        "nodes": [
            {"name": "node-2", "allocatable": {"cpu": "8"},
             "cards": [{"index": 0, "memory_mib": 81920, "healthy": False},
                       {"index": 1, "memory_mib": 81920}],
             "other_pods": [{"name": "kube-system/ds-2-0",
                             "resources": {"cpu": "20000m", "memory": "1Gi"}}]},
        ],
        "pods": [
            {"name": "ml/job-1", "request": {"gpus": 1, "memory_mib": 24576, "core_percent": 50}},
        ],
    }  # fmt: skip
    (verdict,) = judge(scenario_from_data(scenario, "seed-635.json")).pods
    assert verdict.placement is None
    assert verdict.node_summary == "0/1 nodes are unavailable: 1 Insufficient cpu."
    # kube-scheduler's filters (the kube harness's comparison) still pass the node
    assert advisor_verdicts(scenario) == {"ml/job-1": {}}
