"""The advisor's own series (docs/design.md §6), one set per run: textfile and Pushgateway.

Written with prometheus-client's textfile writer (atomic rename) so node_exporter's
textfile collector, or a Prometheus scraping the report volume, never sees half a file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client import CollectorRegistry, Gauge, generate_latest, push_to_gateway

from advisor import metricnames as M
from advisor.core.diagnosis import shown_causes
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
    return registry


def write_textfile(path: Path | str, run: RunFigures) -> None:
    # Not prometheus_client's write_to_textfile: it renames a file over the target even
    # when that is a pipe or a device (as root, /dev/null); write_atomic writes those in place.
    write_atomic(path, generate_latest(registry_for(run)).decode("utf-8"))


def push(gateway: str, run: RunFigures, job: str = "xgpu-advisor") -> None:
    """Replace this job's group on a Pushgateway (PUT semantics: no stale series linger)."""
    push_to_gateway(gateway, job=job, registry=registry_for(run), timeout=10)
