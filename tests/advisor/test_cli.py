"""`xgpu-advisor diagnose` end to end: JSON contract, formats, exit codes, nothing half-written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "advisor" / "examples" / "demo.yaml"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "advisor.cli", *args], capture_output=True, text=True, check=False
    )


def test_diagnose_json_contract() -> None:
    proc = run("diagnose", "--scenario", str(EXAMPLE), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["schema"] == "xgpu-advisor/diagnosis/v1"
    assert data["policy"] == {"node": "binpack", "card": "binpack"}
    assert set(data["summary"]) == {
        "pending",
        "schedulable",
        "node-resources",
        "fragmentation",
        "capacity",
        "unsatisfiable",
        "invalid",
    }
    assert data["summary"]["pending"] == len(data["pods"]) == 9
    by_name = {p["pod"]: p for p in data["pods"]}
    # the CCE example inside the demo
    assert by_name["web/infer-1"]["placement"] == {"node": "cce-node-1", "cards": [0, 1]}
    frag = by_name["web/infer-2"]
    assert frag["cause"] == "fragmentation"
    assert frag["placement"] is None
    assert frag["nodes"]["cce-node-1"][0] == "too-few-cards: 1 of 2 cards eligible"
    assert frag["node_summary"] == (
        "0/5 nodes are available: 1 node(s) had untolerated taint {dedicated: research}, "
        "4 too-few-cards."
    )
    assert by_name["ml/finetune-0"]["cluster_free_sufficient"] is True
    assert by_name["ml/pretrain-0"]["cause"] == "unsatisfiable"
    assert by_name["web/odd-size"]["cause"] == "invalid"
    assert by_name["vision/train-xl"]["cause"] == "node-resources"
    for pod in data["pods"]:
        assert {"pod", "cause", "message", "placement", "nodes"} <= set(pod)
    # queue order: priority first
    assert data["pods"][0]["pod"] == "batch/urgent"


def test_markdown_and_html_outputs(tmp_path: Path) -> None:
    out = tmp_path / "report.md"
    assert main(["diagnose", "--scenario", str(EXAMPLE), "--output", str(out)]) == 0
    text = out.read_text()
    assert "web/infer-2" in text
    assert "fragmentation" in text
    html = tmp_path / "report.html"
    assert (
        main(["diagnose", "--scenario", str(EXAMPLE), "--format", "html", "--output", str(html)])
        == 0
    )
    page = html.read_text()
    assert page.lstrip().lower().startswith("<!doctype html")
    assert "cce-node-1" in page
    assert "ml/pretrain-0" in page


def test_bad_scenario_exit_2_one_line_and_nothing_written(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("nodes:\n  - name: n1\n    cards: [{index: 0, memory_mib: -1}]\n")
    out = tmp_path / "out.json"
    proc = run("diagnose", "--scenario", str(bad), "--format", "json", "--output", str(out))
    assert proc.returncode == 2
    assert proc.stdout == ""
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0] == (
        f"xgpu-advisor: error: {bad}: nodes[0].cards[0].memory_mib: must be at least 1, got -1"
    )
    assert not out.exists()
    assert list(tmp_path.iterdir()) == [bad]  # no temporary file left behind


def test_existing_report_survives_a_failed_run(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    out.write_text("previous report")
    bad = tmp_path / "bad.yaml"
    bad.write_text("pods: []\n")
    assert main(["diagnose", "--scenario", str(bad), "--output", str(out)]) == 2
    assert out.read_text() == "previous report"


def test_unwritable_output_is_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "missing-dir" / "out.json"
    assert main(["diagnose", "--scenario", str(EXAMPLE), "--output", str(target)]) == 2
    assert "cannot write" in capsys.readouterr().err


def test_usage_errors_exit_2() -> None:
    assert run("diagnose").returncode == 2
    assert run("diagnose", "--scenario", str(EXAMPLE), "--format", "pdf").returncode == 2


def test_node_detail_flag(tmp_path: Path) -> None:
    proc = run("diagnose", "--scenario", str(EXAMPLE), "--format", "json", "--node-detail", "1")
    frag = next(p for p in json.loads(proc.stdout)["pods"] if p["pod"] == "web/infer-2")
    assert len(frag["nodes"]) == 1
    assert frag["nodes_omitted"] == 4
