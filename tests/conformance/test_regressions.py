"""Disagreements the differential test found, shrunk, with upstream's answer recorded: each
runs without Go, on the advisor alone (docs/conformance.md)."""

from __future__ import annotations

from typing import Any

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
