"""exporter.collection.collector_run: one way to time a collector and record its outcome."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from exporter.collection import collector_run
from exporter.snapshot import CollectorRun


def ticks(*times: float) -> Iterator[float]:
    """A clock's readings, in order."""
    yield from times


def test_a_clean_run_succeeds_and_lasts_from_start_to_end() -> None:
    runs: list[CollectorRun] = []
    times = ticks(10.0, 10.25)
    with collector_run(runs, "nvml", clock=lambda: next(times)):
        pass
    assert runs == [CollectorRun("nvml", True, 0.25, None)]  # 10.25 - 10.0


def test_an_error_set_by_the_block_fails_the_run() -> None:
    runs: list[CollectorRun] = []
    times = ticks(1.0, 1.5)
    with collector_run(runs, "kubernetes", clock=lambda: next(times)) as run:
        run.error = "list failed: 503"
    assert runs == [CollectorRun("kubernetes", False, 0.5, "list failed: 503")]


def test_a_timeout_reads_the_collector_s_own_words() -> None:
    runs: list[CollectorRun] = []
    times = ticks(0.0, 3.0)
    with collector_run(
        runs, "attribution", on_timeout="timed out reading", clock=lambda: next(times)
    ):
        raise TimeoutError
    assert runs == [CollectorRun("attribution", False, 3.0, "timed out reading")]


def test_a_bug_in_the_block_is_logged_and_fails_the_run_without_escaping(
    caplog: pytest.LogCaptureFixture,
) -> None:
    runs: list[CollectorRun] = []
    reached_after = False
    with caplog.at_level(logging.ERROR, logger="xgpu.exporter.collection"):
        with collector_run(runs, "nvml") as run:
            raise KeyError("gpu")
        reached_after = True
    assert reached_after
    assert run.error == "failed: KeyError('gpu')"
    (record,) = runs
    assert (record.name, record.success, record.error) == ("nvml", False, "failed: KeyError('gpu')")
    assert record.duration_s >= 0.0
    assert caplog.records[0].exc_info is not None  # the traceback is kept for the log


def test_a_cancellation_is_not_swallowed() -> None:
    runs: list[CollectorRun] = []
    with pytest.raises(KeyboardInterrupt), collector_run(runs, "nvml"):
        raise KeyboardInterrupt
    assert runs == []
