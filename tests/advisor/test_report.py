"""advisor.report: one run's data, independent of I/O."""

from __future__ import annotations

import itertools

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


def test_history_peaks_in_gpu_equivalents() -> None:
    allotted, used = history_peaks(history(), cluster())
    assert allotted == pytest.approx(8 / 16 + 16 / 32)
    assert used == pytest.approx(4 / 16 + 8 / 32)


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
    assert data["headroom"]["peak_used_gpus"] == pytest.approx(0.5)
    assert data["headroom"]["capacity_gpus"] == 2
    assert data["rightsizing"]["schema"] == "xgpu-advisor/rightsizing/v1"
    assert data["usage"]["used_bytes"] == [6 * GIB, 12 * GIB]
    assert report.figures.duration_seconds == data["run"]["duration_seconds"]
    assert report.figures.finished_at == inputs.generated_at + report.figures.duration_seconds
