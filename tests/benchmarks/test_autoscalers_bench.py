"""The `autoscalers` case of benchmarks.diagnose_bench, in-process on a tiny cluster."""

from __future__ import annotations

from benchmarks.diagnose_bench import run_case


def test_the_case_times_the_judged_cycle_then_the_reachable_replicas() -> None:
    outcome = run_case("autoscalers", {"nodes": 30, "pending": 10, "autoscalers": 4}, 1)
    assert list(outcome.timings.wall) == ["judge", "autoscalers"]
    assert outcome.facts["autoscalers"] == 4
    assert outcome.facts["one_cycle"] is True
