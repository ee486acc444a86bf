"""The `autoscalers` case of benchmarks.diagnose_bench, in-process on a tiny cluster."""

from __future__ import annotations

from benchmarks.diagnose_bench import run_case


def test_the_case_times_the_judged_cycle_then_the_reachable_replicas() -> None:
    outcome = run_case("autoscalers", {"nodes": 30, "pending": 10, "autoscalers": 4}, 1)
    assert list(outcome.timings.wall) == ["judge", "autoscalers"]
    assert outcome.facts["autoscalers"] == 4
    assert outcome.facts["one_cycle"] is True


def test_distinct_templates_change_no_answer_only_the_kinds() -> None:
    params = {"nodes": 30, "pending": 10, "autoscalers": 4}
    shared = run_case("autoscalers", params, 1).facts
    distinct = run_case("autoscalers", params | {"distinct": 1}, 1).facts
    assert distinct["kinds"] == 4
    assert distinct["placeable"] == shared["placeable"]
    assert distinct["note"].split(";")[0] == shared["note"].split(";")[0]
