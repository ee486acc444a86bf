"""How long the scheduling layer keeps GPU pods waiting (docs/design.md §12.3): each Pending
pod's age, and the scheduling latency of the pods placed recently.

Pure: the time ages are counted to is handed in (`run_time`: the scenario's `now`, else the
caller's clock), so a scenario with `now` gives the same figures on every run.
"""

from __future__ import annotations

from datetime import UTC, datetime

from advisor.core.model import Cluster, Pod
from advisor.core.times import parse_time

# "Recently": pods scheduled at most this long before now count towards the latency
# histogram; older placements say little about how the scheduler does today.
LATENCY_WINDOW_S = 3600.0
# Upper bounds (seconds) of the latency histogram's buckets: a quick bind is seconds, a pod
# that waited for room or a scale-up minutes, one that waited for a plan hours.
LATENCY_BUCKETS = (1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0, 7200.0)


def run_time(cluster: Cluster, clock_s: float) -> datetime:
    """The scenario's `now` where it gives one, else `clock_s` (unix seconds)."""
    given = parse_time(cluster.now) if cluster.now else None
    return given if given is not None else datetime.fromtimestamp(clock_s, UTC)


def pending_age(pod: Pod, now: datetime) -> float | None:
    """Seconds since the Pending pod was created (0 for one created after `now`); None
    when its creation time is unknown or the pod runs."""
    created = parse_time(pod.created) if pod.created and not pod.running else None
    if created is None:
        return None
    return max((now - created).total_seconds(), 0.0)


def pending_ages(cluster: Cluster, now: datetime) -> dict[str, float]:
    """Pending pods' ages by pod name, those of known creation time only."""
    return {pod.name: age for pod in cluster.pending if (age := pending_age(pod, now)) is not None}


def scheduling_latencies(
    cluster: Cluster, now: datetime, window_s: float = LATENCY_WINDOW_S
) -> tuple[float, ...]:
    """Creation → PodScheduled, in seconds, of the running pods scheduled within `window_s`
    before `now` (the window's bounds included), in the cluster's order."""
    latencies = []
    for pod in cluster.running:
        created = parse_time(pod.created) if pod.created else None
        scheduled = parse_time(pod.scheduled) if pod.scheduled else None
        if created is None or scheduled is None:
            continue
        if 0.0 <= (now - scheduled).total_seconds() <= window_s:
            latencies.append(max((scheduled - created).total_seconds(), 0.0))
    return tuple(latencies)
