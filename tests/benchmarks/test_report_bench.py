"""The cron-run benchmark: a small case runs the real `report` command in a child process and
reads back its figures, per-phase times included."""

from __future__ import annotations

import pytest

from benchmarks.measure import Case, run_isolated
from benchmarks.report import markdown
from benchmarks.report_bench import FLEET, MODULE, PHASE, SIZES, TABLES, cases, main, sizes, table

PHASES = ("diagnose", "plan", "fragmentation", "scaling", "rightsizing", "assemble", "render")


def test_quick_runs_the_smallest_size_only_and_full_runs_every_size() -> None:
    assert [c.params["nodes"] for c in cases(quick=True)] == [SIZES[0]]
    full = cases(quick=False)
    assert [(c.name, c.params["nodes"]) for c in full] == [
        *(("report", n) for n in SIZES),
        ("training", SIZES[-1]),
    ]
    assert all(c.params["pending"] == round(0.4 * int(c.params["nodes"])) for c in full)
    assert {c.params["budget"] for c in full} == {"60"}


def test_a_standalone_run_measures_the_sizes_asked_for_else_the_tables() -> None:
    assert sizes(quick=False, nodes=[FLEET]) == (20_000,)
    assert sizes(quick=False, nodes=[500, 20_000]) == (500, 20_000)
    assert sizes(quick=False, nodes=None) == SIZES
    assert sizes(quick=True, nodes=None) == SIZES[:1]
    for wrong in (["--nodes", "0"], ["--nodes", "500", "--quick"]):
        with pytest.raises(SystemExit):
            main(wrong)


@pytest.mark.realservices  # a child process
def test_a_small_case_runs_the_command_and_reports_its_phases() -> None:
    case = Case(MODULE, "report", "tiny", "report", {"nodes": 30, "pending": 12, "budget": "2"}, 1)
    result = run_isolated(case)
    facts = result.facts
    assert list(result.wall) == [PHASE]
    assert result.wall[PHASE][0] == facts["wall_seconds"] > 0
    assert result.peak_rss_kib > 20_000  # the child's: an interpreter with pandas, in KiB
    assert (facts["nodes"], facts["running"], facts["pending"]) == (30, 180, 12)
    assert sum(facts["pending_by_cause"].values()) == 12
    assert list(facts["phases"]) == [*PHASES, "other"]
    assert all(seconds >= 0 for seconds in facts["phases"].values())
    assert sum(facts["phases"].values()) <= facts["wall_seconds"] + 0.01
    assert facts["phases"]["plan"] <= 2.5  # the budget given, not the cron's 60 s
    assert set(facts["output_bytes"]) == {"report.json", "report.md", "report.html"}
    assert all(n > 1000 for n in facts["output_bytes"].values())
    assert facts["keeps_up"] is True
    assert "| tiny |" in markdown([result], [], TABLES, "header")
    assert table([facts]).splitlines()[2].startswith("| 30 / 180 / 12 |")


@pytest.mark.realservices  # a child process
def test_the_training_case_runs_the_report_on_gangs() -> None:
    params: dict[str, int | str] = {"nodes": 40, "pending": 16, "budget": "2", "gangs": 6}
    result = run_isolated(Case(MODULE, "training", "tiny", "training", params, 1))
    facts = result.facts
    assert (facts["nodes"], facts["pending"]) == (40, 16)
    assert sum(facts["pending_by_cause"].values()) == 16
    assert facts["keeps_up"] is True
