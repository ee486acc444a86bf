"""Pending ages and recent scheduling latencies (advisor/core/waiting.py, design §12)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from advisor.core.model import Card, Cluster, Node, Placement, Pod, Request
from advisor.core.waiting import (
    LATENCY_WINDOW_S,
    pending_ages,
    run_time,
    scheduling_latencies,
)

NOW = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
NODE = Node("n", (Card(0, 16384),))


def pod(name: str, created: str | None, scheduled: str | None = None, running: bool = False) -> Pod:
    placement = Placement("n", (0,)) if running else None
    return Pod(f"ns/{name}", Request(1, 1024), placement, created=created, scheduled=scheduled)


def test_a_pending_pod_s_age_is_now_minus_its_creation() -> None:
    cluster = Cluster(
        (NODE,),
        (
            pod("old", "2024-05-01T10:00:00Z"),
            pod("offset", "2024-05-01T13:30:00+02:00"),  # 11:30 UTC
            pod("future", "2024-05-01T12:00:05Z"),  # a clock ahead of ours: 0, not negative
            pod("unknown", None),
            pod("running", "2024-05-01T09:00:00Z", "2024-05-01T09:00:01Z", running=True),
        ),
    )
    assert pending_ages(cluster, NOW) == {"ns/old": 7200.0, "ns/offset": 1800.0, "ns/future": 0.0}


def test_now_is_the_scenario_s_else_the_clock_s() -> None:
    assert run_time(Cluster((NODE,), now="2024-05-01T12:00:00Z"), 0.0) == NOW
    assert run_time(Cluster((NODE,)), NOW.timestamp()) == NOW


@pytest.mark.parametrize(
    ("scheduled", "expected"),
    [
        ("2024-05-01T11:00:00Z", (30.0,)),  # exactly the window before now: in
        ("2024-05-01T10:59:59Z", ()),  # a second older: out
        ("2024-05-01T12:00:00Z", (3630.0,)),  # at now: in
        ("2024-05-01T12:00:01Z", ()),  # after now (a later snapshot's pod): out
    ],
)
def test_the_latency_window_includes_its_bounds(
    scheduled: str, expected: tuple[float, ...]
) -> None:
    assert LATENCY_WINDOW_S == 3600
    placed = pod("p", "2024-05-01T10:59:30Z", scheduled, running=True)
    assert scheduling_latencies(Cluster((NODE,), (placed,)), NOW) == expected


def test_latency_is_creation_to_scheduled_of_running_pods_with_both_times() -> None:
    cluster = Cluster(
        (NODE,),
        (
            pod("quick", "2024-05-01T11:50:00Z", "2024-05-01T11:50:04Z", running=True),
            pod("skewed", "2024-05-01T11:50:10Z", "2024-05-01T11:50:00Z", running=True),
            pod("no-created", None, "2024-05-01T11:50:00Z", running=True),
            pod("pending", "2024-05-01T11:50:00Z", "2024-05-01T11:50:04Z"),
        ),
    )
    assert scheduling_latencies(cluster, NOW) == (4.0, 0.0)  # clocks that disagree: 0
