"""Right-sizing only from enough history, never below the peak plus a margin, with evidence.

The failure this guards against: a pod allotted 12,288 MiB, seen for 3 samples, was advised
4,096 MiB; the next run, with its real peak in the history, advised 13,696 MiB.
"""

from __future__ import annotations

import pytest

from advisor.core.history import History, duration_text, not_enough
from advisor.defaults import RightsizingSettings
from advisor.rightsizing import rightsize
from tests.advisor.test_rightsizing import cluster_for_fit, frame, only, samples

FIVE_MINUTES = 300.0


def test_three_samples_are_not_advice() -> None:
    """3 samples 5 minutes apart cover 10 m + one 5 m step = 15 m; the defaults ask 288
    sample times over 24 h. Without the gate the advice was ceil(3400 x 1.2 / 128) x 128
    = ceil(31.875) x 128 = 4096 MiB."""
    young = frame(samples([3100.0, 3400.0, 3300.0], allotted_mib=12288, step=FIVE_MINUTES))
    entry = only(rightsize(young))
    assert entry["advised"] is False
    assert entry["not_advised"] == "not enough history (3 samples over 15 m; need 288 over 24 h)"
    assert entry["memory_mib"]["recommended"] is None
    assert entry["memory_mib"]["allotted"] == 12288
    # the evidence is given all the same: what was seen, and what it lacked
    evidence = entry["evidence"]
    assert (evidence["samples"], evidence["window_seconds"], evidence["window"]) == (
        3,
        900.0,
        "15 m",
    )
    assert evidence["memory_mib"]["peak"] == 3400.0


def test_a_full_day_with_its_peak_gives_the_second_runs_advice() -> None:
    """288 samples 5 minutes apart cover 287 x 300 + 300 = 86,400 s = 24 h: enough. Use sits
    at 3,400 MiB but for one 11,400 MiB peak: ceil(11400 x 1.2 / 128) = ceil(106.875) = 107,
    107 x 128 = 13,696 MiB (the peak margin's 11400 x 1.1 = 12,540 is lower)."""
    used = [3400.0] * 287 + [11400.0]
    day = frame(samples(used, allotted_mib=12288, step=FIVE_MINUTES))
    entry = only(rightsize(day))
    assert (entry["advised"], entry["not_advised"]) == (True, None)
    assert entry["memory_mib"]["recommended"] == 13696
    evidence = entry["evidence"]
    assert evidence == {
        "first": 0.0,
        "last": 287 * FIVE_MINUTES,
        "window_seconds": 86400.0,
        "window": "24 h",
        "step_seconds": FIVE_MINUTES,
        "samples": 288,
        "headroom": 0.2,
        "peak_margin": 0.1,
        "memory_mib": {"percentile": 100, "basis": 11400.0, "peak": 11400.0, "floor": 12540.0},
        "core_percent": None,  # memory isolation: no core allotted, no core advice
    }


def test_one_sample_short_of_the_count_is_not_enough() -> None:
    """287 samples 5 m apart: 286 x 300 + 300 = 86,100 s = 23 h 55 m, 287 < 288."""
    entry = only(rightsize(frame(samples([1000.0] * 287, step=FIVE_MINUTES))))
    assert entry["not_advised"] == (
        "not enough history (287 samples over 23 h 55 m; need 288 over 24 h)"
    )


def test_enough_samples_over_too_short_a_span_is_not_enough() -> None:
    """288 samples a minute apart cover 288 x 60 = 17,280 s = 4 h 48 m < 24 h."""
    entry = only(rightsize(frame(samples([1000.0] * 288, step=60.0))))
    assert entry["not_advised"] == (
        "not enough history (288 samples over 4 h 48 m; need 288 over 24 h)"
    )


def test_replicas_sampled_together_count_once() -> None:
    """Two replicas x 144 sample times are 288 rows but 144 sample times (10 m apart:
    143 x 600 + 600 = 86,400 s), so the count falls short though the span does not."""
    replicas = frame(
        samples([1000.0] * 144, pod="infer-1", step=600.0),
        samples([1000.0] * 144, pod="infer-2", step=600.0),
    )
    entry = only(rightsize(replicas))
    assert entry["samples"] == 288  # vGPU samples, as before
    assert entry["evidence"]["samples"] == 144
    assert entry["not_advised"] == (
        "not enough history (144 samples over 24 h; need 288 over 24 h)"
    )


def test_thresholds_are_settings() -> None:
    """With 3 samples over 15 m asked for, the young pod of the first test is advised:
    max(3400 x 1.2, 3400 x 1.1) = 4080 -> 32 x 128 = 4096 MiB."""
    young = frame(samples([3100.0, 3400.0, 3300.0], allotted_mib=12288, step=FIVE_MINUTES))
    relaxed = RightsizingSettings(min_samples=3, min_history_s=900)
    assert only(rightsize(young, settings=relaxed))["memory_mib"]["recommended"] == 4096
    stricter = RightsizingSettings(min_samples=3, min_history_s=901)
    assert only(rightsize(young, settings=stricter))["advised"] is False


def test_never_below_the_peak_plus_the_margin() -> None:
    """p95 as the memory basis: 287 samples at 1000 MiB and one at 4000 MiB have a p95 of
    1000 (the 95th percentile lies among the 1000s), so p95 x 1.2 = 1200 MiB, under the
    peak. The floor is 4000 x 1.1 = 4400 -> ceil(34.375) = 35 x 128 = 4480 MiB; with a
    25 % margin 5000 -> ceil(39.06) = 40 x 128 = 5120 MiB."""
    day = frame(samples([1000.0] * 287 + [4000.0], allotted_mib=8192, step=FIVE_MINUTES))
    p95 = RightsizingSettings(memory_basis="p95")
    entry = only(rightsize(day, settings=p95))
    assert entry["memory_mib"]["used_p95"] == 1000.0
    assert entry["memory_mib"]["recommended"] == 4480
    assert entry["evidence"]["memory_mib"] == {
        "percentile": 95,
        "basis": 1000.0,
        "peak": 4000.0,
        "floor": 4400.0,
    }
    margin = RightsizingSettings(memory_basis="p95", peak_margin=0.25)
    assert only(rightsize(day, settings=margin))["memory_mib"]["recommended"] == 5120


def test_core_never_below_its_peak_plus_the_margin() -> None:
    """Core at 10 % but one sample at 50 %: p95 10 x 1.2 = 12, floor 50 x 1.1 = 55, a
    multiple of 5 already: 55 %."""
    core = [10.0] * 287 + [50.0]
    day = frame(samples([1000.0] * 288, core_allotted=60, core_used=core, step=FIVE_MINUTES))
    entry = only(rightsize(day))
    assert entry["core_percent"]["recommended"] == 55
    assert entry["evidence"]["core_percent"] == {
        "percentile": 95,
        "basis": 10.0,
        "peak": 50.0,
        "floor": 55.0,
    }


def test_pods_without_enough_history_are_not_shrunk() -> None:
    """The fit simulation leaves a workload with no advice as it runs: nothing shrinks, and
    the waiting pod stays unschedulable."""
    young = frame(
        samples([100.0] * 3, pod="infer-1", allotted_mib=8192, step=FIVE_MINUTES),
        samples([100.0] * 3, pod="infer-2", allotted_mib=8192, step=FIVE_MINUTES),
    )
    fit = rightsize(young, cluster_for_fit())["pending_fit"]
    assert (fit["running_shrunk"], fit["memory_freed_mib"], fit["schedulable_after"]) == (0, 0, 0)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0 s"),
        (45, "45 s"),
        (900, "15 m"),
        (5400, "1 h 30 m"),
        (86400, "24 h"),
        (86400 + 300, "24 h 5 m"),
        (7 * 86400, "7 d"),
        (2 * 86400 + 3600, "2 d 1 h"),
    ],
)
def test_duration_text(seconds: float, text: str) -> None:
    assert duration_text(seconds) == text


def test_history_of_sample_times() -> None:
    """Unsorted, repeated times: 3 distinct (0, 60, 180), gaps 60 and 120, median 90;
    covered 180 + 90 = 270 s."""
    history = History.of([180.0, 0.0, 60.0, 60.0])
    assert history == History(3, 0.0, 180.0, 90.0)
    assert history.covered_s == 270.0
    assert History.of([]) == History(0, 0.0, 0.0, 0.0)
    assert not_enough(History.of([5.0]), 1, 0) is None
    assert not_enough(History.of([5.0]), 2, 0) == (
        "not enough history (1 sample over 0 s; need 2 over 0 s)"
    )
