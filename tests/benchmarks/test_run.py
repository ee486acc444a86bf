"""The benchmark runner's plumbing: a case runs in its own process and reports back."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from benchmarks.diagnose_bench import MODULE, TABLES
from benchmarks.measure import Case, child_env, run_isolated
from benchmarks.report import Standalone, markdown

pytestmark = pytest.mark.realservices  # benchmark cases in child processes


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
    # Measured from a small fresh parent: Linux lets a child's peak RSS start from its
    # parent's at exec, and this pytest process is large (benchmarks.run's parent is small).
    probe = (
        "import json, sys; from benchmarks.measure import run_child; "
        "s = run_child([sys.executable, '-c', 'print(\"hi\")']); "
        "b = run_child([sys.executable, '-c', "
        "'b = bytearray(200 * 2**20); b[::4096] = bytes(len(b[::4096]))']); "
        "print(json.dumps([s.stdout, s.peak_rss_kib, b.peak_rss_kib]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=child_env()
    )
    stdout, small, big = json.loads(out.stdout)
    assert stdout == "hi\n"
    assert big > small + 150 * 1024
