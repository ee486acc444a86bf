"""The right-sizing section states what each recommendation stands on (window, samples, peak,
percentile, floor), shows why a workload with too little history gets none, and names the
history a workload needs. Built by the real `rightsize` from a hand-made history."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from advisor.render.report.html import render_report_html
from advisor.render.report.markdown import render_report_markdown
from advisor.rightsizing import rightsize

MIB = 2**20
STEP = 300.0  # 5 minutes
END = 1_764_491_400.0  # 2025-11-30 08:30 UTC


def rows(pod: str, owner: str, samples: int, used_mib: list[float]) -> list[dict[str, Any]]:
    return [
        {
            "timestamp": END - (samples - 1 - i) * STEP,
            "namespace": "ml",
            "pod": pod,
            "container": "main",
            "owner": owner,
            "node": "n1",
            "gpu_index": 0,
            "memory_allotted_bytes": 4096.0 * MIB,
            "memory_used_bytes": used_mib[i] * MIB,
            "core_allotted_percent": 0.0,
            "core_used_percent": 10.0,
        }
        for i in range(samples)
    ]


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    # Deployment/ml/steady: 288 samples 300 s apart (24 h), 1000 MiB used, once 2000 MiB.
    steady = [1000.0] * 288
    steady[100] = 2000.0
    # ml/young: 3 samples (15 m): too little history to advise from.
    history = pd.DataFrame(
        rows("steady-0", "Deployment/ml/steady", 288, steady)
        + rows("young", "", 3, [500.0, 600.0, 700.0])
    )
    sizing = rightsize(history)
    return {"schema": "xgpu-advisor/report/v1", "rightsizing": sizing}


def test_the_fixture_is_what_the_expectations_assume(report: dict[str, Any]) -> None:
    steady, young = report["rightsizing"]["workloads"]
    assert (steady["workload"], steady["advised"]) == ("Deployment/ml/steady", True)
    # peak basis: max(2000 × 1.2 headroom, 2000 × 1.1 margin) = 2400, up to 128s: 19 × 128
    assert steady["memory_mib"]["recommended"] == 2432
    assert steady["evidence"]["memory_mib"] == {
        "percentile": 100,
        "basis": 2000.0,
        "peak": 2000.0,
        "floor": 2200.0,  # 2000 × 1.1
    }
    assert (young["workload"], young["advised"]) == ("ml/young", False)


def test_markdown_row_states_the_evidence(report: dict[str, Any]) -> None:
    text = render_report_markdown(report)
    # 288 samples × 300 s = 24 h; saving (4096 - 2432) × 1 vGPU = 1,664
    assert (
        "| Deployment/ml/steady | main | 1 pod, 1 vGPU | memory | 4,096 | 2,000 | 1,000 | "
        "2,432 (24 h, 288 samples; peak 2,000 MiB, p100; floor 2,200) | 1,664 | - |"
    ) in text


def test_markdown_row_says_why_there_is_no_recommendation(report: dict[str, Any]) -> None:
    text = render_report_markdown(report)
    # 3 samples 300 s apart cover 2 × 300 + 300 = 900 s = 15 m; p95 of 500, 600, 700 = 690
    assert (
        "| ml/young | main | 1 pod, 1 vGPU | memory | 4,096 | 700 | 690 | "
        "not enough history (3 samples over 15 m; need 288 over 24 h) | ? | - |"
    ) in text


def test_the_window_line_names_the_history_needed(report: dict[str, Any]) -> None:
    expected = (
        "Advised only from at least 24 h and 288 samples of history, never below the peak "
        "plus 10.0%."
    )
    assert expected in render_report_markdown(report)
    assert expected in render_report_html(report)


def test_html_cells_carry_the_evidence_and_the_reason(report: dict[str, Any]) -> None:
    page = render_report_html(report)
    assert (
        '<td class="num">2,432<div class="sub">24 h, 288 samples; peak 2,000 MiB, p100; '
        "floor 2,200</div></td>"
    ) in page
    assert (
        '<td class="num">not enough history (3 samples over 15 m; need 288 over 24 h)</td>'
    ) in page


def test_an_older_file_without_evidence_renders_as_before(report: dict[str, Any]) -> None:
    older = {"schema": report["schema"], "rightsizing": dict(report["rightsizing"])}
    older["rightsizing"]["workloads"] = [
        {k: v for k, v in w.items() if k not in ("advised", "not_advised", "evidence")}
        for w in report["rightsizing"]["workloads"]
    ]
    older["rightsizing"]["settings"] = {
        k: v
        for k, v in report["rightsizing"]["settings"].items()
        if k not in ("min_history_s", "min_samples", "peak_margin")
    }
    text = render_report_markdown(older)
    assert "| 2,432 | 1,664 |" in text
    assert "Advised only from" not in text
    # no recommendation and no reason: "?" as for any missing figure
    assert "| 700 | 690 | ? | ? |" in text


def test_every_recommendation_is_listed_before_the_workloads_without_one() -> None:
    """A recommendation to raise saves nothing, yet it is advice: it comes before the rows
    that have none (the sample's StatefulSet/infer/llm is told to raise its memory)."""
    from advisor.render.report.findings import sizing_rows
    from tests.advisor.render.sample_report import sample_report

    listed, _ = sizing_rows(sample_report()["rightsizing"])
    advised = [not row.not_advised for row in listed]
    assert advised == sorted(advised, reverse=True)
    assert any(row.saving_mib is not None and row.saving_mib < 0 for row in listed)
