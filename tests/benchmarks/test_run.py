"""The benchmark runner's plumbing: a case runs in its own process and reports back."""

from __future__ import annotations

import sys

from benchmarks.diagnose_bench import MODULE, TABLES
from benchmarks.measure import Case, run_child, run_isolated
from benchmarks.report import Standalone, markdown


def test_a_case_runs_in_a_fresh_process_and_reports_its_figures() -> None:
    case = Case(MODULE, "diagnose", "tiny", "nodes", {"nodes": 12, "pending": 9}, repeats=2)
    result = run_isolated(case)
    assert list(result.wall) == ["diagnose"]
    assert len(result.wall["diagnose"]) == len(result.cpu["diagnose"]) == 2
    assert result.peak_rss_kib > 10_000  # an interpreter with numpy, in KiB
    assert result.facts["summary"]["pending"] == 9
    assert result.facts["running"] == 12 * 6
    text = markdown([result], [Standalone("x.bench", False, "boom")], TABLES, "header")
    assert "| tiny |" in text
    assert TABLES["nodes"][0] in text
    assert "### x.bench (FAILED)" in text


def test_run_child_measures_that_child_alone() -> None:
    small = run_child([sys.executable, "-c", "print('hi')"])
    big = run_child(
        ["python3", "-c", "b = bytearray(200 * 2**20); b[::4096] = b'x' * len(b[::4096])"]
    )
    assert small.stdout == "hi\n"
    # A forked child's peak may start from the (large) pytest parent's, so compare with the
    # 200 MiB the big child touches rather than with the small one.
    assert big.peak_rss_kib >= 200 * 1024
    assert small.peak_rss_kib < big.peak_rss_kib
