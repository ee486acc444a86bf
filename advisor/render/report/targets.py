"""The report's autoscaler targets from history (docs/design.md §12.2): read tolerantly from
the file, and a line each for the Markdown ("Autoscaler targets"; the HTML page does not
show them yet). The per-step series is not read: no page draws it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor import metricnames as M
from advisor.render.common.markdown import escape_cell
from advisor.render.common.values import as_float, as_int, as_list, as_map, as_str
from advisor.schemas import (
    AutoscalerTargetJson,
    HistoryEvidenceJson,
    TargetConfidenceJson,
    TargetObservedJson,
    TargetSettingsJson,
)

MIB = 2**20


def read_targets(value: Any) -> list[AutoscalerTargetJson] | None:
    """None where the report has none (no autoscalers, or no history)."""
    if not isinstance(value, list):
        return None
    return [_target(as_map(entry)) for entry in value]


def _settings(raw: Mapping[str, Any]) -> TargetSettingsJson:
    out: TargetSettingsJson = {
        "target_average": as_float(raw.get("target_average")),
        "max_replicas": as_int(raw.get("max_replicas")),
    }
    if "min_replicas" in raw:
        out["min_replicas"] = as_int(raw["min_replicas"])
    if "replicas" in raw:
        out["replicas"] = as_int(raw["replicas"])
    return out


def _target(raw: Mapping[str, Any]) -> AutoscalerTargetJson:
    recommended, confidence = as_map(raw.get("recommended")), as_map(raw.get("confidence"))
    observed, evidence = as_map(raw.get("observed")), as_map(raw.get("evidence"))
    reachable = raw.get("reachable_replicas")
    return {
        "name": as_str(raw.get("name"), "?"),
        "target": as_str(raw.get("target"), "?"),
        "metric": as_str(raw.get("metric")) or None,
        "status": as_str(raw.get("status"), "?"),
        "reason": as_str(raw.get("reason")) or None,
        "current": _settings(as_map(raw.get("current"))),
        "recommended": _settings(recommended) if recommended else None,
        "confidence": _confidence(confidence) if confidence else None,
        "notes": [as_str(n, "?") for n in as_list(raw.get("notes"))],
        "observed": _observed(observed) if observed else None,
        "reachable_replicas": None if reachable is None else as_int(reachable),
        "evidence": _evidence(evidence) if evidence else None,
    }


def _confidence(raw: Mapping[str, Any]) -> TargetConfidenceJson:
    return {
        "level": as_str(raw.get("level"), "?"),
        "why": [as_str(w, "?") for w in as_list(raw.get("why"))],
    }


def _observed(raw: Mapping[str, Any]) -> TargetObservedJson:
    return {
        "per_pod_allotted": as_float(raw.get("per_pod_allotted")),
        "average_p95": as_float(raw.get("average_p95")),
        "average_peak": as_float(raw.get("average_peak")),
        "demand_p95": as_float(raw.get("demand_p95")),
        "demand_peak": as_float(raw.get("demand_peak")),
        "replicas_min": as_int(raw.get("replicas_min")),
        "replicas_max": as_int(raw.get("replicas_max")),
    }


def _evidence(raw: Mapping[str, Any]) -> HistoryEvidenceJson:
    return {
        "first": as_float(raw.get("first")),
        "last": as_float(raw.get("last")),
        "window_seconds": as_float(raw.get("window_seconds")),
        "window": as_str(raw.get("window"), "?"),
        "step_seconds": as_float(raw.get("step_seconds")),
        "samples": as_int(raw.get("samples")),
    }


def amount(metric: str | None, value: float | None) -> str:
    """A figure of the metric in its unit: core in %, memory in MiB; "?" when unknown."""
    if value is None:
        return "?"
    if metric == M.MEMORY_USED.name:
        return f"{value / MIB:,.0f} MiB"
    return f"{value:g} %" if metric == M.CORE_USED.name else f"{value:g}"


def target_line(t: AutoscalerTargetJson) -> str:
    """'web/infer-hpa on xgpu_core_percentage_used: target_average 60 % → 35 %, max_replicas
    4 → 2; the HPA saw 30 % at p95 (peak 30 %) over 2–2 replicas; 24 h, 288 samples;
    confidence high'."""
    metric = t["metric"]
    head = t["name"] + (f" on {metric}" if metric else "")
    if t["status"] == "not-applicable":
        return f"{t['name']}: not applicable: {t['reason'] or '?'}"
    if t["recommended"] is None:
        return f"{head}: not advised: {t['reason'] or '?'}"
    now, rec = t["current"], t["recommended"]
    text = (
        f"{head}: target_average {amount(metric, now['target_average'])} → "
        f"{amount(metric, rec['target_average'])}, max_replicas {now['max_replicas']} → "
        f"{rec['max_replicas']}"
    )
    seen = t["observed"]
    if seen is not None:
        text += (
            f"; the HPA saw {amount(metric, seen['average_p95'])} at p95 (peak "
            f"{amount(metric, seen['average_peak'])}) over {seen['replicas_min']}–"
            f"{seen['replicas_max']} replicas"
        )
    evidence = t["evidence"]
    if evidence is not None:
        text += f"; {evidence['window']}, {evidence['samples']} samples"
    confidence = t["confidence"]
    if confidence is not None:
        why = "; ".join(confidence["why"])
        text += f"; confidence {confidence['level']}" + (f" ({why})" if why else "")
    notes = "; ".join(t["notes"])
    return text + (f". {notes[:1].upper()}{notes[1:]}" if notes else "")


def targets_section(targets: list[AutoscalerTargetJson] | None) -> list[str]:
    """The "Autoscaler targets" section, a line each (no lines where the report has none)."""
    lines = [f"- {escape_cell(target_line(t))}" for t in targets or []]
    return ["## Autoscaler targets", "", *lines, ""] if lines else []
