"""`xgpu-advisor diagnose` end to end: JSON contract, formats, exit codes, nothing half-written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.cli import main
from tests.advisor.commands.test_whatif_profiles import HAMI_WHOLE

pytestmark = pytest.mark.realservices  # runs xgpu-advisor as a process

EXAMPLE = Path(__file__).resolve().parents[3] / "advisor" / "examples" / "demo.yaml"


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
        "mig-geometry",  # the demo's MIG node (docs/design.md §13)
    }
    assert data["summary"]["pending"] == len(data["pods"]) == 10
    by_name = {p["pod"]: p for p in data["pods"]}
    # the CCE example inside the demo
    assert by_name["web/infer-1"]["placement"] == {"node": "cce-node-1", "cards": [0, 1]}
    frag = by_name["web/infer-2"]
    assert frag["cause"] == "fragmentation"
    assert frag["placement"] is None
    assert frag["nodes"]["cce-node-1"][0] == "too-few-cards: 1 of 2 cards eligible"
    assert frag["node_summary"] == (
        "0/6 nodes are unavailable: 1 node(s) had untolerated taint {dedicated: research}, "
        "5 too-few-cards."
    )
    # Only the A100 and V100 cards could hold its 20480 MiB slices: 39936 MiB free there.
    assert by_name["ml/finetune-0"]["cluster_free_sufficient"] is False
    # Each pod carries the advice `report` and `plan` give it (the plans weighed).
    assert by_name["ml/finetune-0"]["advice"]["key"] == "capacity-scale-up"
    assert by_name["web/infer-2"]["advice"] == {
        "key": "fragmentation",
        "scale_up": False,
        "why": "a rebalancing plan makes room for it",
    }
    assert by_name["ml/pretrain-0"]["cause"] == "unsatisfiable"
    assert by_name["web/odd-size"]["cause"] == "invalid"
    assert by_name["vision/train-xl"]["cause"] == "node-resources"
    for pod in data["pods"]:
        assert {"pod", "cause", "message", "placement", "nodes", "advice"} <= set(pod)
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
    assert frag["nodes_omitted"] == 5


# --- --scheduler (docs/design.md §9.2) ------------------------------------------------------


def scenario_file(tmp_path: Path, data: dict[str, Any], name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("fmt", ["json", "markdown", "html"])
def test_scheduler_cce_or_auto_on_a_cce_file_changes_nothing(fmt: str) -> None:
    plain = run("diagnose", "--scenario", str(EXAMPLE), "--format", fmt)
    assert plain.returncode == 0, plain.stderr
    for value in ("cce", "auto"):
        flagged = run("diagnose", "--scenario", str(EXAMPLE), "--format", fmt, "--scheduler", value)
        assert flagged.stdout == plain.stdout, value
    if fmt == "json":
        assert json.loads(plain.stdout)["scheduler"] == {"profile": "cce"}
    else:  # a cce cluster's reports read as they always did
        assert "hami" not in plain.stdout
        assert "Scheduler:" not in plain.stdout


def test_diagnose_judges_by_the_files_profile_or_the_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = scenario_file(tmp_path, HAMI_WHOLE)
    assert main(["diagnose", "--scenario", str(path), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["scheduler"] == {
        "profile": "hami",
        "default_memory_mib": 0,
        "weights": {"slot": 1, "core": 1, "memory": 1},
    }
    assert data["policy"] == {"node": "binpack", "card": "spread"}  # hami's defaults
    requests = {p["pod"]: p["request"] for p in data["pods"]}
    assert requests["a/whole"] == {
        "gpus": 1,
        "memory_mib": 0,
        "core_percent": 0,
        "whole_card": True,
    }
    assert requests["a/half"] == {
        "gpus": 1,
        "memory_mib": 0,
        "core_percent": 0,
        "memory_percent": 50,
    }
    assert (
        main(
            ["diagnose", "--scenario", str(path), "--format", "json", "--scheduler", "volcano-vgpu"]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert data["scheduler"] == {"profile": "volcano-vgpu", "schedule_weight": 0}
    assert data["policy"] == {"node": "binpack", "card": "legacy"}
    # hand-computed in commands/test_whatif_profiles: whole card on card 1, the share on card 0
    placements = {p["pod"]: p["placement"] for p in data["pods"]}
    assert placements == {
        "a/whole": {"node": "n1", "cards": [1]},
        "a/half": {"node": "n1", "cards": [0]},
    }


def test_markdown_names_the_profile_and_its_requests(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = scenario_file(tmp_path, HAMI_WHOLE)
    assert main(["diagnose", "--scenario", str(path)]) == 0
    text = capsys.readouterr().out
    assert text.startswith(
        "**2 Pending GPU pods: 2 schedulable** (scheduler: hami; policy: node binpack, card spread)"
    )
    assert "| a/whole | 0 | 1 × whole card | schedulable | fits on n1, card 1 |" in text
    assert "| a/half | 0 | 1 × 50 % of the card | schedulable | fits on n1, card 0 |" in text
    # card 0: 1000 MiB running + the share's 8192 * 50 // 100 = 4096; card 1: the whole 8192
    assert "| n1 | 0 |  | memory isolation | 5096 / 8192 (+4096 pending) |" in text
    assert "| n1 | 1 |  | memory isolation | 8192 / 8192 (+8192 pending) |" in text
    assert main(["diagnose", "--scenario", str(path), "--format", "html"]) == 0
    assert "Scheduler: hami · Policy: node binpack, card spread" in capsys.readouterr().out


def test_a_random_tie_is_said_in_markdown_and_html(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Two empty identical nodes: HAMi's node scores (before placement) are both 0, so its
    # scheduler picks one at random; the model takes n1 and says so.
    card = [{"index": 0, "memory_mib": 8192}]
    data = {
        "scheduler": {"profile": "hami"},
        "nodes": [{"name": "n1", "cards": card}, {"name": "n2", "cards": card}],
        "pods": [{"name": "a/p", "request": {"gpus": 1, "memory_mib": 1024}}],
    }
    path = scenario_file(tmp_path, data)
    note = (
        "fits on n1, card 0 (2 nodes score the same and the scheduler picks one of them at "
        "random, so the real pick may differ)"
    )
    for fmt in ("markdown", "html"):
        assert main(["diagnose", "--scenario", str(path), "--format", fmt]) == 0
        assert note in capsys.readouterr().out, fmt
    assert main(["diagnose", "--scenario", str(path), "--scheduler", "cce"]) == 0
    assert "may differ" not in capsys.readouterr().out  # cce breaks the tie by name


@pytest.mark.parametrize(
    "command",
    [
        ["diagnose", "--scenario", str(EXAMPLE)],
        ["plan", "--scenario", str(EXAMPLE)],
        ["whatif", "--scenario", str(EXAMPLE)],
        ["report", "--scenario", str(EXAMPLE), "--output-dir", "never-written"],
        ["report", "--exporters", "http://127.0.0.1:9", "--output-dir", "never-written"],
        ["snapshot", "--exporters", "http://127.0.0.1:9", "--output", "never-written.yaml"],
    ],
    ids=lambda c: "-".join(c[:2]),
)
def test_an_unknown_profile_is_one_line_and_exit_2(tmp_path: Path, command: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "advisor.cli", *command, "--scheduler", "kai"],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "xgpu-advisor: error: --scheduler: unknown profile 'kai'; known: cce, hami, "
        "volcano-vgpu, auto"
    ]
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_only_whatif_takes_several_profiles() -> None:
    proc = run("diagnose", "--scenario", str(EXAMPLE), "--scheduler", "cce,hami")
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        "xgpu-advisor: error: --scheduler: one profile here; only whatif compares several"
    ]
