"""The advisor's own series (docs/design.md §6), one set per run: textfile and Pushgateway.

Written with prometheus-client's textfile writer (atomic rename) so node_exporter's
textfile collector, or a Prometheus scraping the report volume, never sees half a file.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client import CollectorRegistry, Gauge, generate_latest, push_to_gateway
from prometheus_client.core import HistogramMetricFamily, Metric, SummaryMetricFamily
from prometheus_client.registry import Collector

from advisor import metricnames as M
from advisor.core.autoscalers import Reach
from advisor.core.diagnosis import shown_causes
from advisor.core.waiting import LATENCY_BUCKETS
from advisor.scenario.write import write_atomic

PLAN_KINDS = ("rebalance", "scale_up", "scale_down")


@dataclass(frozen=True, slots=True)
class RunFigures:
    pending_by_cause: Mapping[str, int]
    stranded_memory_bytes: float
    fragmentation_ratio: float
    plans_by_kind: Mapping[str, int] = field(default_factory=dict)
    rescuable_pods: int = 0
    finished_at: float = 0.0  # unix seconds
    duration_seconds: float = 0.0
    # §12.3: Pending pods' ages (seconds) by cause; recent scheduling latencies, by profile.
    pending_ages: Mapping[str, Sequence[float]] = field(default_factory=dict)
    latencies: Mapping[str, Sequence[float]] = field(default_factory=dict)
    # §12.2: each autoscaler's reachable replicas, the values the report renders.
    autoscalers: Sequence[Reach] = ()


def registry_for(run: RunFigures) -> CollectorRegistry:
    registry = CollectorRegistry()

    def gauge(family: M.Family) -> Gauge:
        return Gauge(family.name, family.help, family.labels, registry=registry)

    pending = gauge(M.PENDING_PODS)
    for cause in shown_causes(run.pending_by_cause):
        pending.labels(cause=cause).set(run.pending_by_cause.get(cause, 0))
    gauge(M.STRANDED_MEMORY).set(run.stranded_memory_bytes)
    gauge(M.FRAGMENTATION).set(run.fragmentation_ratio)
    plans = gauge(M.PLANS)
    for kind in PLAN_KINDS:
        plans.labels(kind=kind).set(run.plans_by_kind.get(kind, 0))
    gauge(M.RESCUABLE_PODS).set(run.rescuable_pods)
    gauge(M.LAST_SUCCESS).set(run.finished_at)
    gauge(M.RUN_DURATION).set(run.duration_seconds)
    oldest = gauge(M.PENDING_AGE_MAX)
    for aged, ages in run.pending_ages.items():
        if ages:  # no age known: no oldest to tell
            oldest.labels(cause=aged).set(max(ages))
    registry.register(_Waiting(run))
    _autoscalers(run.autoscalers, gauge)
    return registry


def _autoscalers(reaches: Sequence[Reach], gauge: Callable[[M.Family], Gauge]) -> None:
    """Replicas and max for every autoscaler; placeable only where a template says what a
    replica is (a 0 would claim that none places); blocked only while one stays Pending."""
    replicas, most = gauge(M.AUTOSCALER_REPLICAS), gauge(M.AUTOSCALER_MAX_REPLICAS)
    placeable, blocked = gauge(M.AUTOSCALER_PLACEABLE), gauge(M.AUTOSCALER_BLOCKED)
    for r in reaches:
        name = r.autoscaler.name
        replicas.labels(autoscaler=name).set(r.autoscaler.replicas)
        most.labels(autoscaler=name).set(r.autoscaler.max_replicas)
        if r.placeable is not None:
            placeable.labels(autoscaler=name).set(r.placeable)
        if r.blocked is not None:
            blocked.labels(autoscaler=name, cause=r.blocked.cause).set(1)


class _Waiting(Collector):
    """The age summary and the latency histogram, from this run's figures as they stand
    (prometheus-client's Summary and Histogram would add a `_created` series per label set,
    a time that means nothing for figures computed once)."""

    def __init__(self, run: RunFigures) -> None:
        self._run = run

    def collect(self) -> Iterator[Metric]:
        ages = SummaryMetricFamily(
            M.PENDING_AGE.name, M.PENDING_AGE.help, labels=M.PENDING_AGE.labels
        )
        for cause in shown_causes(self._run.pending_by_cause):
            known = self._run.pending_ages.get(cause, ())
            ages.add_metric([cause], count_value=len(known), sum_value=sum(known))
        yield ages
        family = M.SCHEDULING_LATENCY
        latency = HistogramMetricFamily(family.name, family.help, labels=family.labels)
        for profile, seconds in sorted(self._run.latencies.items()):
            latency.add_metric([profile], buckets=latency_buckets(seconds), sum_value=sum(seconds))
        yield latency


def latency_buckets(seconds: Sequence[float]) -> list[tuple[str, float]]:
    """Cumulative counts per upper bound, `+Inf` last; a latency equal to a bound is in its
    bucket (Prometheus' `le`)."""
    ranked = sorted(seconds)
    counts = [(repr(le), float(bisect_right(ranked, le))) for le in LATENCY_BUCKETS]
    return [*counts, ("+Inf", float(len(ranked)))]


def write_textfile(path: Path | str, run: RunFigures) -> None:
    # Not prometheus_client's write_to_textfile: it renames a file over the target even
    # when that is a pipe or a device (as root, /dev/null); write_atomic writes those in place.
    write_atomic(path, generate_latest(registry_for(run)).decode("utf-8"))


def push(gateway: str, run: RunFigures, job: str = "xgpu-advisor") -> None:
    """Replace this job's group on a Pushgateway (PUT semantics: no stale series linger)."""
    push_to_gateway(gateway, job=job, registry=registry_for(run), timeout=10)
