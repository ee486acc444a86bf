"""The report's autoscaler targets from history (docs/design.md §12.2): read tolerantly from
the file, and their wording: a line each in the Markdown ("Autoscaler targets"), the same
parts in the columns of the HTML page's table. The per-step series is not read: no page
draws it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

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


def advice_text(t: AutoscalerTargetJson) -> str:
    """'target_average 60 % → 35 %, max_replicas 4 → 2', or why there is no advice:
    'not advised: …', 'not applicable: …'."""
    if t["status"] == "not-applicable":
        return f"not applicable: {t['reason'] or '?'}"
    now, rec, metric = t["current"], t["recommended"], t["metric"]
    if rec is None:
        return f"not advised: {t['reason'] or '?'}"
    return (
        f"target_average {amount(metric, now['target_average'])} → "
        f"{amount(metric, rec['target_average'])}, max_replicas {now['max_replicas']} → "
        f"{rec['max_replicas']}"
    )


def observed_text(t: AutoscalerTargetJson) -> str | None:
    """What the HPA saw: '30 % at p95 (peak 30 %) over 2–2 replicas'; None where unknown."""
    seen, metric = t["observed"], t["metric"]
    if seen is None:
        return None
    return (
        f"{amount(metric, seen['average_p95'])} at p95 (peak "
        f"{amount(metric, seen['average_peak'])}) over {seen['replicas_min']}–"
        f"{seen['replicas_max']} replicas"
    )


def evidence_text(t: AutoscalerTargetJson) -> str | None:
    """'24 h, 288 samples': the history the advice rests on."""
    evidence = t["evidence"]
    return None if evidence is None else f"{evidence['window']}, {evidence['samples']} samples"


def confidence_text(t: AutoscalerTargetJson) -> str | None:
    """'high', or 'low (why; why)'."""
    confidence = t["confidence"]
    if confidence is None:
        return None
    why = "; ".join(confidence["why"])
    return confidence["level"] + (f" ({why})" if why else "")


def notes_text(t: AutoscalerTargetJson) -> str:
    """The notes as one sentence, capitalised; "" where none."""
    notes = "; ".join(t["notes"])
    return f"{notes[:1].upper()}{notes[1:]}"


class TargetParts(NamedTuple):
    """What a target's line says, part by part (None or "": the line leaves it out); the
    HTML table's columns."""

    advice: str
    seen: str | None
    evidence: str | None
    confidence: str | None
    notes: str


def target_parts(t: AutoscalerTargetJson) -> TargetParts:
    """Without advice, the line says only why: no figures, history, confidence or notes."""
    if t["recommended"] is None or t["status"] == "not-applicable":
        return TargetParts(advice_text(t), None, None, None, "")
    return TargetParts(
        advice_text(t), observed_text(t), evidence_text(t), confidence_text(t), notes_text(t)
    )


def target_line(t: AutoscalerTargetJson) -> str:
    """'web/infer-hpa on xgpu_core_percentage_used: target_average 60 % → 35 %, max_replicas
    4 → 2; the HPA saw 30 % at p95 (peak 30 %) over 2–2 replicas; 24 h, 288 samples;
    confidence high'."""
    metric, parts = t["metric"], target_parts(t)
    if t["status"] == "not-applicable":
        return f"{t['name']}: {parts.advice}"
    text = t["name"] + (f" on {metric}" if metric else "") + f": {parts.advice}"
    text += f"; the HPA saw {parts.seen}" if parts.seen else ""
    text += f"; {parts.evidence}" if parts.evidence else ""
    text += f"; confidence {parts.confidence}" if parts.confidence else ""
    return text + (f". {parts.notes}" if parts.notes else "")


def targets_section(targets: list[AutoscalerTargetJson] | None) -> list[str]:
    """The "Autoscaler targets" section, a line each (no lines where the report has none)."""
    lines = [f"- {escape_cell(target_line(t))}" for t in targets or []]
    return ["## Autoscaler targets", "", *lines, ""] if lines else []
