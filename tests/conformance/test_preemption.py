"""The differential test of preemption (docs/conformance.md): kube-scheduler v1.35.3's
DefaultPreemption PostFilter beside the advisor's `hami` preemption verdicts. Without Go on
PATH the harness tests skip, saying why; the comparison's own rules run without it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance import harness, preempt_compare
from tests.conformance.test_differential import skip_without_go

BUDGET = "xgpu.io/disruption-budget"


def _node(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "cards": [{"index": 0, "memory_mib": 8192}],
        "allocatable": {"cpu": "4", "memory": "8Gi", "pods": 110},
    }


def _running(name: str, node: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "node": node,
        "cards": [0],
        "request": {"gpus": 1, "memory_mib": 1024},
        "resources": {"cpu": "3"},
        "priority": 5,
        "started": "2025-01-01T00:00:00Z",
        **extra,
    }


def _pending(name: str, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "request": {"gpus": 1, "memory_mib": 1024},
        "resources": {"cpu": "2"},
        "priority": 10,
        **extra,
    }


# node-0's only victim is under a budget that allows no disruption: node-1 is picked
# (pickOneNodeForPreemption: fewest PDB violations). ml/p is nominated there, counts its
# 2 cpu, and ml/q (preemptionPolicy Never) is not eligible.
SCENARIO: dict[str, Any] = {
    "scheduler": {"profile": "hami"},
    "nodes": [_node("node-0"), _node("node-1")],
    "pods": [
        _running("run/a", "node-0", annotations={BUDGET: "b:0"}),
        _running("run/b", "node-1"),
        _pending("ml/p"),
        _pending("ml/q", preemption_policy="Never"),
    ],
}


@skip_without_go
@pytest.mark.realservices
@pytest.mark.timeout(900)  # a cold build compiles k8s.io/kubernetes' scheduler packages
def test_generated_clusters_agree_on_preemption() -> None:
    datas = [preempt_compare.generate_preempt(i) for i in range(50)]
    rows = preempt_compare.check(datas)
    compared = sum(r[0] for r in rows)
    diffs = [d for r in rows for d in r[3]]
    assert compared > 50
    assert diffs == [], "python -m conformance.cli shrinks them"
    verdicts = [v["verdict"] for d in datas for v in preempt_compare.advisor_side(d)[1].values()]
    assert verdicts.count("evicts") >= 5  # the clusters do reach eviction
    assert verdicts.count("not-eligible") >= 5


@skip_without_go
@pytest.mark.realservices
def test_the_harness_runs_kube_schedulers_postfilter(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps({**SCENARIO, "placed": {}}))
    (result,) = harness.run("kube-preempt", [path])
    got = {p["pod"]: (p["verdict"], p.get("node"), p["victims"]) for p in result["preemptions"]}
    assert got == {
        "ml/p": ("evicts", "node-1", ["run/b"]),
        "ml/q": ("not-eligible", None, []),
    }
    assert result["preemptions"][0]["candidates"] == {"node-0": ["run/a"], "node-1": ["run/b"]}
    assert result["preemptions"][1]["status"] == (
        "preemption: not eligible due to preemptionPolicy=Never."
    )
    # ml/p's nomination counts: node-1 passes ml/q's in-tree filters only with run/b gone
    assert result["preemptions"][1]["in_tree"] == ["node-1"]


@skip_without_go
@pytest.mark.realservices
def test_the_advisor_agrees_on_the_worked_scenario() -> None:
    (row,) = preempt_compare.check([SCENARIO])
    assert row == (2, 2, 0, [], (1, 1))  # ml/q's words are upstream's


def _evicts(node: str, victims: list[str], **extra: Any) -> dict[str, Any]:
    return {"verdict": "evicts", "node": node, "victims": victims, "message": "", **extra}


def test_a_node_among_upstreams_ties_agrees_on_its_own_victims() -> None:
    theirs = _evicts(
        "node-1", ["run/b"], ties=["node-0", "node-1"], candidates={"node-0": ["run/a"]}
    )
    assert preempt_compare.compare_pod(_evicts("node-0", ["run/a"]), theirs) is None
    assert "advisor evicts ['run/x']" in str(
        preempt_compare.compare_pod(_evicts("node-0", ["run/x"]), theirs)
    )
    assert "upstream on node-1" in str(
        preempt_compare.compare_pod(_evicts("node-2", ["run/a"]), theirs)
    )


def test_verdicts_and_what_the_harness_cannot_say() -> None:
    none: dict[str, Any] = {
        "verdict": "no-victims",
        "node": None,
        "victims": [],
        "message": "preemption: ...",
    }
    assert preempt_compare.compare_pod(none, {"verdict": "no-victims"}) is None
    assert "advisor no-victims, upstream evicts" in str(
        preempt_compare.compare_pod(none, _evicts("node-0", ["run/a"]))
    )
    fits = {**none, "message": "it fits on node-0 once the victims of earlier preemptions ..."}
    assert str(preempt_compare.compare_pod(fits, _evicts("node-0", []))).startswith("skip:")


def test_generated_clusters_carry_what_preemption_reads() -> None:
    datas = [preempt_compare.generate_preempt(i) for i in range(40)]
    assert preempt_compare.generate_preempt(3) == preempt_compare.generate_preempt(3)
    pods = [p for d in datas for p in d["pods"]]
    running = [p for p in pods if "node" in p]
    assert all("started" in p and "priority" in p for p in running)
    assert any(BUDGET in p.get("annotations", {}) for p in running)
    assert any(p.get("preemption_policy") == "Never" for p in pods)
    budgets: dict[tuple[int, str], str] = {}
    for i, d in enumerate(datas):  # each budget tells one count
        for p in d["pods"]:
            value = p.get("annotations", {}).get(BUDGET)
            if value is not None:
                assert budgets.setdefault((i, value.split(":")[0]), value) == value


def test_a_witness_keeps_every_start_time() -> None:
    """Shrinking never drops a running pod's start time: without one kube-scheduler's order
    of victims is no one's to predict (no harness runs for such a candidate)."""
    data = json.loads(json.dumps(SCENARIO))
    del data["pods"][0]["started"]
    assert preempt_compare.disagrees(data) is False
