"""Replay of the openb trace (docs/design.md §7): stable figures; end state as a scenario."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from advisor.core.diagnose import diagnose
from advisor.core.model import Policy
from advisor.replay import TraceError, load_trace, replay
from advisor.scenario import load_scenario

NODES = "openb_node_list_gpu_node.csv"
PODS = "openb_pod_list_default.csv"


def replay_cli(openb_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """`xgpu-advisor replay` of the openb trace, JSON on stdout."""
    trace = ["--nodes", str(openb_dir / NODES), "--pods", str(openb_dir / PODS)]
    return subprocess.run(
        [sys.executable, "-m", "advisor.cli", "replay", *trace, "--format", "json", *extra],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture(scope="module", params=["binpack", "spread"])
def figures(request: pytest.FixtureRequest, openb_dir: Path) -> dict[str, object]:
    cluster = load_trace(openb_dir / NODES, openb_dir / PODS, Policy(request.param, "binpack"))
    return dict(replay(cluster).figures())


@pytest.mark.slow  # replays the openb trace
@pytest.mark.timeout(600)  # the whole openb trace: seconds alone, minutes on a busy machine
def test_figures_are_consistent(figures: dict[str, object]) -> None:
    assert figures["schema"] == "xgpu-advisor/replay/v1"
    assert figures["capacity_gpus"] == 6212
    assert figures["pods"] == 7064  # GPU pods only; CPU-only ones are skipped
    assert figures["demand_gpus"] == pytest.approx(6086.8)
    placed, capacity = figures["placed_gpus"], figures["capacity_gpus"]
    assert isinstance(placed, float)
    assert isinstance(capacity, int)
    assert figures["allocation_ratio"] == pytest.approx(placed / capacity, abs=1e-6)
    assert placed <= figures["demand_gpus"]  # type: ignore[operator]


@pytest.mark.slow  # replays the openb trace
@pytest.mark.timeout(600)  # the whole openb trace: seconds alone, minutes on a busy machine
def test_known_end_states(figures: dict[str, object]) -> None:
    """The notes' figures for card binpack: 162 Pending under node binpack, 188 under spread."""
    failed = figures["failed"]
    assert isinstance(failed, dict)
    if figures["policy"] == {"node": "binpack", "card": "binpack"}:
        assert figures["allocation_ratio"] == pytest.approx(0.9585, abs=5e-5)
        assert failed == {"fragmentation": 161, "capacity": 1}
    else:
        assert sum(failed.values()) == 188


@pytest.mark.slow  # replays the openb trace
@pytest.mark.timeout(600)  # the whole openb trace: seconds alone, minutes on a busy machine
def test_placed_plus_failed_is_demand(openb_dir: Path) -> None:
    result = replay(load_trace(openb_dir / NODES, openb_dir / PODS, Policy()))
    placed = sum(d.pod.request.memory_mib for d in result.diagnosis.pods if d.placement)
    failed = sum(d.pod.request.memory_mib for d in result.diagnosis.pods if d.placement is None)
    assert (placed + failed) // 128 / 1000 == pytest.approx(result.figures()["demand_gpus"])


@pytest.mark.slow  # replays the openb trace
@pytest.mark.timeout(600)  # the whole openb trace: seconds alone, minutes on a busy machine
@pytest.mark.realservices  # xgpu-advisor as a process
def test_cli_json_and_end_state_scenario(openb_dir: Path, tmp_path: Path) -> None:
    scenario = tmp_path / "end.yaml"
    proc = replay_cli(openb_dir, "--write-scenario", str(scenario))
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(proc.stdout)
    end = load_scenario(scenario)
    assert end.policy == Policy("binpack", "binpack")
    assert len(end.running) + len(end.pending) == figures["pods"]
    assert sum(p.request.memory_mib for p in end.running) / 128 / 1000 == pytest.approx(
        figures["placed_gpus"]
    )
    # The Pending pods of the end state are Pending there too, for the same causes.
    again = diagnose(end, node_detail_limit=0)
    assert again.summary["schedulable"] == 0
    assert again.summary["pending"] == sum(figures["failed"].values())


def test_small_trace_and_bad_rows(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nn1,1,1,2,T4\ncpu,1,1,0,\n")
    pods = tmp_path / "pods.csv"
    pods.write_text(
        "name,num_gpu,gpu_milli,creation_time\n"
        "late,1,500,20\nearly,2,1000,10\ncpu,0,0,5\nsmall,1,600,30\n"
    )
    result = replay(load_trace(nodes, pods, Policy()))
    assert [d.pod.name for d in result.diagnosis.pods] == [
        "openb/early",
        "openb/late",
        "openb/small",
    ]
    assert [d.cause for d in result.diagnosis.pods] == ["schedulable", "capacity", "capacity"]
    figures = result.figures()
    assert figures["capacity_gpus"] == 2
    assert figures["placed_gpus"] == 2.0
    assert figures["failed"] == {"capacity": 2}
    pods.write_text("name,num_gpu,gpu_milli\np,one,500\n")
    with pytest.raises(TraceError, match=r"pods\.csv: line 2: num_gpu 'one' is not an integer"):
        load_trace(nodes, pods, Policy())
    pods.write_text("name,gpu_milli\np,500\n")
    with pytest.raises(TraceError, match="missing columns num_gpu"):
        load_trace(nodes, pods, Policy())


@pytest.mark.slow  # replays the openb trace
@pytest.mark.timeout(600)  # the whole openb trace: seconds alone, minutes on a busy machine
@pytest.mark.realservices  # xgpu-advisor as a process
def test_cli_reports_fragmentation_of_the_end_state(openb_dir: Path) -> None:
    proc = replay_cli(openb_dir)
    figures = json.loads(proc.stdout)
    frag = figures["fragmentation"]
    assert frag["free_gpus"] == pytest.approx(figures["capacity_gpus"] - figures["placed_gpus"])
    assert 0 < frag["fragment_gpus"] <= frag["free_gpus"]
    assert frag["fragmentation_ratio"] == pytest.approx(
        frag["fragment_gpus"] / frag["free_gpus"], abs=1e-5
    )
