"""Autoscaler targets from history (docs/design.md §12.2, "Targets from history"): for each
HPA metric on an exporter per-pod series, what the HPA saw over the history, and the
`target_average` and `max_replicas` to set, given only on the evidence right-sizing asks for.

What the HPA saw. A Pods metric is one value per pod (prometheus-adapter's default rule sums
a pod's series: its containers and cards) averaged over the target's pods. From the history
(one row per vGPU and step, `rightsizing.HISTORY_COLUMNS`), the rows of the pods whose owner
is the target (`core.hpa.targets_of`), per step: the replicas sampled, their demand (the
per-pod values summed) and the average (demand / replicas), the value the HPA compared with
its target; and each pod's allotment (for core, 100 per card where none is allotted).

The rule, simple on purpose. The HPA asks ceil(demand / target) replicas. Aim at AIM (70 %)
of a pod's allotment: room for the load to rise while a new replica starts. Where the p95
step's demand would then need more replicas than the cluster places (the reach: `replicas +
placeable`), raise the target to p95 demand / reachable replicas, but never above MOST (90 %)
of the allotment, where pods hit their limit before the HPA reacts (a note says the cluster
cannot hold that load). `max_replicas` is what the peak step needs at that target, at least
`min_replicas`, capped at the reachable replicas with a note. Where the reach placed every
replica up to `max_replicas` and the peak needs more, the reach is tried again up to that
need, so a higher `max_replicas` is only advised where the cluster places it now.

Evidence: the target's sample times, gated as right-sizing gates a workload
(`core.history.not_enough`, `RightsizingSettings.min_samples` and `min_history_s`, the
same words). Confidence is low where the history covers less of the window than right-sizing's
overcommit asks (`overcommit_min_coverage`), or the peak ran at `max_replicas` (the HPA could
add none: the load may have been higher than seen); else high.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import pandas as pd

from advisor import metricnames as M
from advisor.core.autoscalers import Reach, reach, reachable
from advisor.core.history import History, not_enough
from advisor.core.hpa import Autoscaler, PodMetric, targets_of
from advisor.core.model import Cluster
from advisor.defaults import RightsizingSettings
from advisor.rightsizing import (
    MIB,
    ceil_to,
    history_evidence,
    validate_history,
)

AIM = 0.7  # of a pod's allotment: the target aimed at
MOST = 0.9  # of a pod's allotment: never a higher target


@dataclass(frozen=True, slots=True)
class Series:
    """An exporter per-pod series as the history holds it."""

    used: str  # history column
    allotted: str  # the column of its allotment
    unit: int  # targets are rounded to this: 1 %, 1 MiB (in bytes)
    whole_card: float  # the allotment where none is given (memory isolation's core)


SERIES: Mapping[str, Series] = MappingProxyType(
    {
        M.CORE_USED.name: Series("core_used_percent", "core_allotted_percent", 1, 100.0),
        M.MEMORY_USED.name: Series("memory_used_bytes", "memory_allotted_bytes", MIB, 0.0),
    }
)


def named_by(target: str) -> re.Pattern[str]:
    """The names a controller gives its pods: a Deployment's `<name>-<hash>-<5 chars>` (its
    ReplicaSets', of any rollout), a StatefulSet's `<name>-<ordinal>`, else `<name>-<5
    chars>` (kube's generateName)."""
    kind, _, rest = target.partition("/")
    name = re.escape(rest.partition("/")[2])
    tail = {"Deployment": r"-[a-z0-9]{1,10}-[a-z0-9]{5}", "StatefulSet": r"-\d+"}
    return re.compile(name + tail.get(kind, r"-[a-z0-9]{5}"))


def steps(frame: pd.DataFrame, target: str, series: Series) -> pd.DataFrame:
    """Per sample time (the index, sorted): `replicas`, `demand`, `average` (what the HPA
    saw) and `allotted` (the median pod's allotment) of the target's pods with a value.
    A pod gone since (a replica scaled down) has no owner in the history (owners come from
    the pods there are now): it is the target's where its name is one the target gives."""
    ours = {o for o in frame["owner"].unique() if target in targets_of(str(o) or None)}
    namespace = target.split("/")[1] if target.count("/") == 2 else ""
    gone = (frame["owner"] == "") & (frame["namespace"] == namespace)
    pattern = named_by(target)  # matched once per name, not per row
    named = {p for p in frame.loc[gone, "pod"].unique() if pattern.fullmatch(str(p))}
    rows = frame[frame["owner"].isin(ours) | (gone & frame["pod"].isin(named))]
    allotted = rows[series.allotted]
    rows = rows.assign(allotted=allotted.where(allotted > 0, series.whole_card))
    by_pod = rows.groupby(["timestamp", "namespace", "pod"])
    pods = pd.DataFrame(
        {"value": by_pod[series.used].sum(min_count=1), "allotted": by_pod["allotted"].sum()}
    ).dropna(subset=["value"])
    by_step = pods.groupby(level="timestamp")
    out = pd.DataFrame(
        {
            "replicas": by_step["value"].count(),
            "demand": by_step["value"].sum(),
            "allotted": by_step["allotted"].median(),
        }
    ).sort_index()
    out["average"] = out["demand"] / out["replicas"]
    return out


def autoscaler_targets(
    history: object,
    cluster: Cluster,
    reaches: Sequence[Reach] | None = None,
    settings: RightsizingSettings | None = None,
) -> list[dict[str, Any]]:
    """An entry per autoscaler metric on an exporter per-pod series (one `not-applicable`
    entry for an autoscaler with none), in the order the cluster lists them. `reaches`:
    the autoscalers' reach (`core.autoscalers.reachable`; found here when not given)."""
    settings = settings or RightsizingSettings()
    frame = validate_history(history)
    window = float(frame["timestamp"].max() - frame["timestamp"].min()) if len(frame) else 0.0
    found = {r.autoscaler.name: r for r in (reachable(cluster) if reaches is None else reaches)}
    out = []
    for a in cluster.autoscalers:
        metrics = [m for m in a.metrics if m.pod_metric in SERIES]
        if not metrics:
            out.append(_not_applicable(a))
        for metric in metrics:
            r = found.get(a.name) or reach(cluster, a)
            out.append(_entry(frame, window, cluster, r, metric, settings))
    return out


def _base(a: Autoscaler, metric: PodMetric | None) -> dict[str, Any]:
    return {
        "name": a.name,
        "target": a.target,
        "metric": None if metric is None else metric.pod_metric,
        "current": {
            "target_average": None if metric is None else metric.target_average,
            "min_replicas": a.min_replicas,
            "max_replicas": a.max_replicas,
            "replicas": a.replicas,
        },
    }


def _not_applicable(a: Autoscaler) -> dict[str, Any]:
    return {
        **_base(a, None),
        "status": "not-applicable",
        "reason": f"no Pods metric on an exporter per-pod series ({', '.join(SERIES)})",
        "recommended": None,
        "confidence": None,
        "notes": [],
        "observed": None,
        "reachable_replicas": None,
        "evidence": None,
        "series": None,
    }


def _entry(
    frame: pd.DataFrame,
    window: float,
    cluster: Cluster,
    r: Reach,
    metric: PodMetric,
    settings: RightsizingSettings,
) -> dict[str, Any]:
    a = r.autoscaler
    series = SERIES[metric.pod_metric]
    seen = steps(frame, a.target, series)
    history = History.of(seen.index.to_numpy(dtype=float))
    short = not_enough(history, settings.min_samples, settings.min_history_s)
    entry = {
        **_base(a, metric),
        "status": "not-advised" if short else "advised",
        "reason": short,
        "recommended": None,
        "confidence": None,
        "notes": [],
        "observed": _observed(seen) if len(seen) else None,
        "reachable_replicas": None if r.template is None else a.replicas + (r.placeable or 0),
        "evidence": history_evidence(history),
        "series": {
            "timestamps": [float(t) for t in seen.index],
            "average": [round(float(v), 2) for v in seen["average"]],
            "replicas": [int(v) for v in seen["replicas"]],
        },
    }
    allotted = float(seen["allotted"].median()) if len(seen) else 0.0
    if short is not None:
        return entry
    if allotted <= 0:  # no allotment to aim at a share of
        entry.update(status="not-advised", reason="no allotment known for its pods")
        return entry
    demand = seen["demand"]
    p95, peak = float(demand.quantile(0.95)), float(demand.max())
    wanted = max(_replicas(peak, AIM * allotted), a.min_replicas, 1)
    r = _tried_up_to(cluster, r, wanted)
    ceiling = None if r.template is None else a.replicas + (r.placeable or 0)
    blocked = None if r.blocked is None else r.blocked.cause
    target, max_replicas, notes = recommend(p95, peak, allotted, ceiling, series.unit, a, blocked)
    if r.template is None:
        notes.append("no running pod to copy: the cluster's room for more replicas is unknown")
    low = _low_confidence(seen, history, window, a, settings)
    entry.update(
        recommended={"target_average": target, "max_replicas": max_replicas},
        confidence={"level": "low" if low else "high", "why": low},
        notes=notes,
        reachable_replicas=ceiling,
    )
    return entry


def _tried_up_to(cluster: Cluster, r: Reach, wanted: int) -> Reach:
    """The reach tried up to `wanted` replicas where every replica up to `max_replicas`
    placed and the peak wants more."""
    a = r.autoscaler
    if r.template is None or r.blocked is not None or wanted <= max(a.max_replicas, a.replicas):
        return r
    return reach(cluster, dataclasses.replace(a, max_replicas=wanted))


def _replicas(demand: float, target: float) -> int:
    """What the HPA asks: ceil(demand / target), float noise aside."""
    return math.ceil(round(demand / target, 9))


def recommend(
    p95: float,
    peak: float,
    allotted: float,
    ceiling: int | None,
    unit: int,
    a: Autoscaler,
    blocked: str | None = None,
) -> tuple[float, int, list[str]]:
    """`target_average`, `max_replicas` and notes, from the p95 and peak steps' demand, the
    median pod's allotment, the replicas the cluster places (None: unknown) and the cause
    that leaves the next one Pending."""
    notes = []
    target = AIM * allotted
    if ceiling is not None and _replicas(p95, target) > max(ceiling, 1):
        target = p95 / max(ceiling, 1)  # the lowest at which the p95 step fits
    most = max(math.floor(round(MOST * allotted / unit, 9)), 1) * unit  # at least one unit
    target = min(ceil_to(target, unit), most)
    if ceiling is not None and _replicas(p95, target) > max(ceiling, 1):
        notes.append(
            f"at p95 the load needs {_replicas(p95, target)} replicas even at the highest "
            f"target ({MOST:.0%} of a pod's allotment); the cluster places {ceiling}"
        )
    max_replicas = max(_replicas(peak, target), a.min_replicas, 1)
    if ceiling is not None and max_replicas > ceiling:
        notes.append(
            f"the peak needs {max_replicas} replicas at this target; capped at the "
            f"{ceiling} the cluster places"
            + (f" (the next stays Pending: {blocked})" if blocked else "")
        )
        max_replicas = max(ceiling, a.min_replicas, 1)
    return float(target), max_replicas, notes


def _observed(seen: pd.DataFrame) -> dict[str, Any]:
    average, demand, replicas = seen["average"], seen["demand"], seen["replicas"]
    return {
        "per_pod_allotted": round(float(seen["allotted"].median()), 2),
        "average_p95": round(float(average.quantile(0.95)), 2),
        "average_peak": round(float(average.max()), 2),
        "demand_p95": round(float(demand.quantile(0.95)), 2),
        "demand_peak": round(float(demand.max()), 2),
        "replicas_min": int(replicas.min()),
        "replicas_max": int(replicas.max()),
    }


def _low_confidence(
    seen: pd.DataFrame,
    history: History,
    window: float,
    a: Autoscaler,
    settings: RightsizingSettings,
) -> list[str]:
    """Why the recommendation stands on weaker ground; empty when it does not."""
    why = []
    coverage = (history.last - history.first) / window if window > 0 else 0.0
    if coverage < settings.overcommit_min_coverage:
        why.append(f"history covers {coverage:.0%} of the window")
    at_peak = int(seen["replicas"].iloc[int(seen["demand"].to_numpy().argmax())])
    if at_peak >= a.max_replicas:
        why.append(
            f"at its peak the target ran at max_replicas ({a.max_replicas}): "
            "the load may have been higher than seen"
        )
    return why
