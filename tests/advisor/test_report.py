"""advisor.report: one run's data, independent of I/O."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pandas as pd
import pytest

from advisor.core.model import Card, Cluster, Node, Placement, Pod, Request
from advisor.report import ReportInputs, ReportOptions, build_report, history_peaks, usage_series

GIB = 2**30


def cluster() -> Cluster:
    nodes = (Node("n1", (Card(0, 16384), Card(1, 32768))),)
    pods = (
        Pod("a/x", Request(1, 8192), Placement("n1", (0,)), owner="Deployment/a/x"),
        Pod("a/y", Request(1, 16384), Placement("n1", (1,))),
        Pod("a/wait", Request(2, 28672)),
    )
    return Cluster(nodes, pods)


def history() -> pd.DataFrame:
    rows = []
    for t, (pod, gpu, allotted, used) in itertools.product(
        (0.0, 60.0), [("x", 0, 8, 2), ("y", 1, 16, 4)]
    ):
        scale = 2 if t == 60.0 else 1  # usage doubles at the second step
        rows.append(
            {
                "timestamp": t,
                "namespace": "a",
                "pod": pod,
                "container": pod,
                "owner": "",
                "node": "n1",
                "gpu_index": gpu,
                "memory_allotted_bytes": allotted * GIB,
                "memory_used_bytes": used * scale * GIB,
                "core_allotted_percent": 0.0,
                "core_used_percent": 10.0,
            }
        )
    return pd.DataFrame(rows)


def test_history_peaks_in_gpus_of_memory() -> None:
    # one 16 GiB and one 32 GiB card: the tie goes to the larger, 1 GPU = 32 GiB
    allotted, used = history_peaks(history(), cluster())
    assert allotted == pytest.approx((8 + 16) / 32)
    assert used == pytest.approx((4 + 8) / 32)


def test_usage_series_sums_per_step() -> None:
    series = usage_series(history())
    assert series["timestamps"] == [0.0, 60.0]
    assert series["allotted_bytes"] == [24 * GIB, 24 * GIB]
    assert series["used_bytes"] == [6 * GIB, 12 * GIB]


def test_report_data_and_figures_agree() -> None:
    ticks = itertools.count(step=0.25)
    inputs = ReportInputs(cluster(), "test", 1_764_460_800.0, history=history())
    report = build_report(inputs, ReportOptions(time_budget_s=5), lambda: float(next(ticks)))
    data = report.data
    assert data["schema"] == "xgpu-advisor/report/v1"
    assert data["generated_at"] == "2025-11-30T00:00:00+00:00"
    assert data["diagnosis"]["summary"]["capacity"] == 1
    assert report.figures.pending_by_cause["capacity"] == 1
    # GPUs of memory of 32 GiB: 12 GiB used at the peak, 48 GiB of cards
    assert data["headroom"]["peak_used_gpus"] == pytest.approx(12 / 32)
    assert data["headroom"]["capacity_gpus"] == 1.5
    assert data["rightsizing"]["schema"] == "xgpu-advisor/rightsizing/v1"
    assert data["usage"]["used_bytes"] == [6 * GIB, 12 * GIB]
    assert report.figures.duration_seconds == data["run"]["duration_seconds"]
    assert report.figures.finished_at == inputs.generated_at + report.figures.duration_seconds


def test_report_plans_name_only_pods_without_a_controller() -> None:
    """The embedded §8 plans know the cluster: an owned evicted pod is not 'unowned'."""
    from tests.advisor.commands.test_plan import cce_cluster

    inputs = ReportInputs(cce_cluster(), "test", 1_764_460_800.0)
    plans = build_report(inputs, ReportOptions(time_budget_s=5), lambda: 0.0).data["plan"]
    assert [(p["evict"], p["unowned"]) for p in plans["plans"]] == [(["ml/train-a"], [])]


def test_scale_down_is_judged_after_the_plans() -> None:
    """`spare` is idle now, but the plan moves the evicted pod there: it must not also be
    proposed for removal; the node no plan touches still is."""
    from tests.advisor.commands.test_plan import cce_cluster

    base = cce_cluster()
    idle = Node("idle", (Card(0, 16384),))
    small = Pod("ml/tiny", Request(1, 1024), Placement("idle", (0,)), owner="Job/ml/tiny")
    inputs = ReportInputs(
        Cluster((*base.nodes, idle), (*base.pods, small), base.policy), "test", 0.0
    )
    data = build_report(inputs, ReportOptions(time_budget_s=5), lambda: 0.0).data["plan"]
    assert any(p["placements"].get("ml/train-a", {}).get("node") == "spare" for p in data["plans"])
    assert [d["node"] for d in data["scale_down"]] == ["idle"]


def test_idle_nodes_kept_are_judged_after_the_plans_too() -> None:
    """`spare` is idle before the plans (so judged on the cluster as given it would be
    proposed or kept) but full after them: it is in neither list. `pinned` runs a
    kube-system pod: kept, with why."""
    from advisor.core.scaling.down import scale_down_advice
    from tests.advisor.commands.test_plan import cce_cluster

    base = cce_cluster()
    pinned = Node("pinned", (Card(0, 16384),))
    probe = Pod("kube-system/probe-2", Request(1, 1024), Placement("pinned", (0,)))
    cluster = Cluster((*base.nodes, pinned), (*base.pods, probe), base.policy)
    before = scale_down_advice(cluster)
    assert "spare" in {s.node for s in before.steps} | {h.node for h in before.held}
    inputs = ReportInputs(cluster, "test", 0.0)
    data = build_report(inputs, ReportOptions(time_budget_s=5), lambda: 0.0).data["plan"]
    assert data["scale_down"] == []
    assert data["scale_down_held"] == [
        {
            "node": "pinned",
            "utilisation": 0.0625,
            "reason": "gpu-pod-not-movable",
            "detail": "kube-system/probe-2: kube-system pod",
        }
    ]


def test_run_records_how_long_each_phase_took() -> None:
    """Every phase of the run is timed off the clock it was given; the phases cover the run
    without overlapping, so they add up to no more than its duration."""
    ticks = itertools.count(step=0.25)
    inputs = ReportInputs(cluster(), "test", 1_764_460_800.0, history=history())
    run = build_report(inputs, ReportOptions(time_budget_s=5), lambda: float(next(ticks))).data[
        "run"
    ]
    phases = run["phases"]
    assert list(phases) == [
        "diagnose",
        "plan",
        "fragmentation",
        "scaling",
        "rightsizing",
        "assemble",
    ]
    assert all(seconds >= 0 for seconds in phases.values())
    assert phases["diagnose"] == 0.25  # one tick: the clock is read once at each boundary
    assert phases["plan"] > 0  # the plan search reads the clock too
    assert sum(phases.values()) <= run["duration_seconds"]
    assert run["duration_seconds"] > 0


def test_phases_of_a_run_with_a_stopped_clock_are_zero() -> None:
    inputs = ReportInputs(cluster(), "test", 0.0)
    run = build_report(inputs, ReportOptions(time_budget_s=5), lambda: 100.0).data["run"]
    assert run["duration_seconds"] == 0
    assert set(run["phases"].values()) == {0}


def test_the_report_command_adds_its_render_phase(tmp_path: Path) -> None:
    from advisor.cli import main
    from tests.realparts import DEMO

    out = tmp_path / "out"
    assert main(["report", "--scenario", str(DEMO), "--output-dir", str(out)]) == 0
    run = json.loads((out / "report.json").read_text())["run"]
    assert list(run["phases"])[-2:] == ["assemble", "render"]
    assert all(seconds >= 0 for seconds in run["phases"].values())
    # build_report's phases still add up to no more than its duration; render comes after.
    analysis = sum(s for name, s in run["phases"].items() if name != "render")
    assert analysis <= run["duration_seconds"] + 1e-9
