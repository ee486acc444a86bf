"""A MIG pod's preemption verdict (docs/design.md §10.3, §13) is the one decision every
output gives: `diagnose` (JSON, Markdown, HTML), `report` (its three files) and `plan`
(which lists the pod unresolved with the same cause)."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest

from advisor.cli import main

A100 = "NVIDIA A100-SXM4-40GB"
HALVES = [{"profile": "3g.20gb", "start": 0}, {"profile": "3g.20gb", "start": 4}]
SCENARIO: dict[str, Any] = {
    "scheduler": {"profile": "hami"},
    "nodes": [
        {
            "name": "m",
            "mig_strategy": "mixed",
            "allocatable": {"cpu": "8", "memory": "64Gi", "pods": 10},
            "cards": [
                {"index": 0, "memory_mib": 40960, "model": A100, "mig": {"instances": HALVES}},
                {"index": 1, "memory_mib": 40960, "model": A100},
            ],
        }
    ],
    "pods": [
        {
            "name": "ml/keep",
            "node": "m",
            "request": {"gpus": 1, "mig_profile": "3g.20gb"},
            "mig_instances": [{"card": 0, "start": 0}],
            "priority": 1000,
        },
        {
            "name": "ml/low",
            "node": "m",
            "request": {"gpus": 1, "mig_profile": "3g.20gb"},
            "mig_instances": [{"card": 0, "start": 4}],
        },
        {"name": "v/low", "node": "m", "cards": [1], "request": {"gpus": 1, "memory_mib": 4096}},
        {"name": "ml/p", "request": {"gpus": 1, "mig_profile": "3g.20gb"}, "priority": 100},
    ],
}
LINE = "Preemption evicts ml/low on m (then it fits): kube-scheduler nominates m and evicts 1 pod"


def run(*args: str) -> str:
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(list(args)) == 0
    return out.getvalue()


@pytest.mark.realservices  # the CLI, in-process, writing files
def test_diagnose_report_and_plan_give_the_one_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "mig.yaml"
    scenario.write_text(json.dumps(SCENARIO))
    diagnosis = json.loads(run("diagnose", "--scenario", str(scenario), "--format", "json"))
    (pod,) = diagnosis["pods"]
    assert pod["cause"] == "capacity"
    assert pod["preemption"] == {
        "verdict": "evicts",
        "message": "kube-scheduler nominates m and evicts 1 pod of lower priority",
        "node": "m",
        "victims": ["ml/low"],  # never the vGPU pod beside it: it frees no instance
        "helps": True,
    }
    for fmt in ("markdown", "html"):
        assert LINE in run("diagnose", "--scenario", str(scenario), "--format", fmt)
    out = tmp_path / "report"
    assert main(["report", "--scenario", str(scenario), "--output-dir", str(out)]) == 0
    capsys.readouterr()
    report = json.loads((out / "report.json").read_text())
    assert report["diagnosis"]["pods"] == diagnosis["pods"]
    assert LINE in (out / "report.md").read_text()
    assert LINE in (out / "report.html").read_text()
    plan = json.loads(run("plan", "--scenario", str(scenario), "--format", "json"))
    assert [(u["pod"], u["cause"]) for u in plan["unresolved"]] == [("ml/p", "capacity")]
