"""The report JSON read into its typed form (`advisor.schemas.ReportJson`, what
`advisor.report.build_report` writes), tolerantly, like `read_diagnosis` and `read_plan`: the
report may come from an older or newer advisor, or be hand-edited, and it runs from cron, so
a missing or odd value becomes the neutral default the pages show ("?", 0, nothing) rather
than an exception. Everything after this reads typed values."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.render.common.cards import NodeView, node_views
from advisor.render.common.values import as_float, as_int, as_list, as_map, as_str
from advisor.render.diagnose.read import read_diagnosis
from advisor.render.plan.read import read_plan
from advisor.render.plan.script import kubectl_input
from advisor.render.report.data import view_of
from advisor.render.report.targets import read_targets
from advisor.schemas import (
    REPORT_SCHEMA,
    RIGHTSIZING_SCHEMA,
    FragmentationShapeJson,
    FragmentedNodeJson,
    HeadroomJson,
    OvercommitJson,
    PendingFitJson,
    ReportFragmentationJson,
    ReportJson,
    RightsizingJson,
    SizingBasisJson,
    SizingEvidenceJson,
    SizingFiguresJson,
    SizingSettingsJson,
    StaleJson,
    UsageJson,
    WorkloadSizingJson,
)


def read_report(raw: Mapping[str, Any]) -> ReportJson:
    """The report as the advisor writes it; a section the file lacks (or holds as something
    other than an object) is left out, and the pages say so."""
    return read_report_nodes(raw)[0]


def read_report_nodes(raw: Mapping[str, Any]) -> tuple[ReportJson, list[NodeView]]:
    """`read_report`, and the card view's nodes as it read them: the pages draw those, and on
    a large cluster reading the card view again is most of a page's time."""
    nodes: list[NodeView] = []
    report: ReportJson = {
        "schema": as_str(raw.get("schema"), REPORT_SCHEMA),
        "generated_at": as_str(raw.get("generated_at")),
        "source": as_str(raw.get("source"), "?"),
        "warnings": [str(w) for w in as_list(raw.get("warnings")) if w is not None],
        "stale": [_stale(entry) for entry in as_list(raw.get("stale"))],
        "rightsizing": read_rightsizing(raw.get("rightsizing")),
        "usage": _usage(as_map(raw.get("usage"))),
    }
    if diagnosis := as_map(raw.get("diagnosis")):
        report["diagnosis"] = read_diagnosis(diagnosis)
    if view := as_map(raw.get("view")):
        nodes = node_views(view)
        report["view"] = view_of(nodes)
    if plan := as_map(raw.get("plan")):
        report["plan"] = read_plan(plan)
    if frag := as_map(raw.get("fragmentation")):
        report["fragmentation"] = _fragmentation(frag)
    if room := as_map(raw.get("headroom")):
        report["headroom"] = _headroom(room)
    if (targets := read_targets(raw.get("autoscaler_targets"))) is not None:
        report["autoscaler_targets"] = targets
    if isinstance(run := raw.get("run"), Mapping):
        phases = as_map(run.get("phases"))
        report["run"] = {
            "duration_seconds": as_float(run.get("duration_seconds")),
            "phases": {
                str(name): seconds
                for name, value in phases.items()
                if (seconds := as_float(value)) is not None
            },
        }
    return report, nodes


def read_script_input(raw: Mapping[str, Any]) -> dict[str, Any]:
    """The report's plans as `kubectl_script` takes them: names checked as Kubernetes names
    and made shell-safe from the file itself, not from the page's reading of it."""
    return kubectl_input(as_map(raw.get("plan")))


def _stale(value: Any) -> StaleJson:
    if not isinstance(value, Mapping):
        return {"subject": str(value), "metric": "", "ended": False}
    return {
        "subject": as_str(value.get("subject"), "?"),
        "metric": as_str(value.get("metric")),
        "age_s": as_float(value.get("age_s")),
        "ended": value.get("ended") is True,
    }


def _usage(raw: Mapping[str, Any]) -> UsageJson | None:
    """The steps with every figure known, in the file's order; None when there are none."""
    series = [as_list(raw.get(k)) for k in ("timestamps", "allotted_bytes", "used_bytes")]
    usage: UsageJson = {"timestamps": [], "allotted_bytes": [], "used_bytes": []}
    for t, allotted, used in zip(*series, strict=False):
        values = (as_float(t), as_float(allotted), as_float(used))
        if values[0] is not None and values[1] is not None and values[2] is not None:
            usage["timestamps"].append(values[0])
            usage["allotted_bytes"].append(values[1])
            usage["used_bytes"].append(values[2])
    return usage if usage["timestamps"] else None


def _fragmentation(raw: Mapping[str, Any]) -> ReportFragmentationJson:
    shapes: list[FragmentationShapeJson] = [
        {
            "gpus": as_int(shape.get("gpus")),
            "card_memory_mib": as_float(shape.get("card_memory_mib")),
            "card_core_percent": as_int(shape.get("card_core_percent")),
            "share": as_float(shape.get("share")),
            "pods": as_int(shape.get("pods")),
        }
        for shape in map(as_map, as_list(raw.get("shapes")))
    ]
    nodes: list[FragmentedNodeJson] = [
        {
            "node": as_str(node.get("node"), "?"),
            "free_mib": as_float(node.get("free_mib")),
            "fragment_mib": as_float(node.get("fragment_mib")),
            "stranded_mib": as_float(node.get("stranded_mib")),
            "ratio": as_float(node.get("ratio")),
        }
        for node in map(as_map, as_list(raw.get("nodes")))
    ]
    omitted = raw.get("nodes_omitted")
    return {
        "free_mib": as_float(raw.get("free_mib")),
        "fragment_mib": as_float(raw.get("fragment_mib")),
        "stranded_mib": as_float(raw.get("stranded_mib")),
        "ratio": as_float(raw.get("ratio")),
        "stranded_ratio": as_float(raw.get("stranded_ratio")),
        "free_gpus": as_float(raw.get("free_gpus")),
        "fragment_gpus": as_float(raw.get("fragment_gpus")),
        "stranded_gpus": as_float(raw.get("stranded_gpus")),
        "shapes": shapes,
        "nodes": nodes,
        # a count: an int only (a float or a bool is no count of nodes)
        "nodes_omitted": max(omitted, 0) if type(omitted) is int else 0,
    }


def _headroom(raw: Mapping[str, Any]) -> HeadroomJson:
    return {
        "capacity_gpus": as_float(raw.get("capacity_gpus")),
        "peak_allotted_gpus": as_float(raw.get("peak_allotted_gpus")),
        "needed_gpus": as_float(raw.get("needed_gpus")),
        "spare_gpus": as_float(raw.get("spare_gpus")),
        "target_utilisation": as_float(raw.get("target_utilisation")),
        "redundancy": as_float(raw.get("redundancy")),
        "peak_used_gpus": as_float(raw.get("peak_used_gpus")),
        "needed_by_use_gpus": as_float(raw.get("needed_by_use_gpus")),
    }


def read_rightsizing(value: Any) -> RightsizingJson | None:
    """None when the report has no right-sizing (no history), or an empty one."""
    raw = as_map(value)
    if not raw:
        return None
    window = as_map(raw.get("window"))
    data: RightsizingJson = {
        "schema": as_str(raw.get("schema"), RIGHTSIZING_SCHEMA),
        "window": {
            "start": as_float(window.get("start")),
            "end": as_float(window.get("end")),
            "seconds": as_float(window.get("seconds")),
        },
        "settings": _settings(as_map(raw.get("settings"))),
        "workloads": [_workload(as_map(entry)) for entry in as_list(raw.get("workloads"))],
    }
    if isinstance(fit := raw.get("pending_fit"), Mapping):
        data["pending_fit"] = _pending_fit(fit)
    return data


def _settings(raw: Mapping[str, Any]) -> SizingSettingsJson:
    settings: SizingSettingsJson = {
        "headroom": as_float(raw.get("headroom")),
        "memory_basis": as_str(raw.get("memory_basis"), "?"),
        "core_basis": as_str(raw.get("core_basis"), "?"),
    }
    if (history := as_float(raw.get("min_history_s"))) is not None:
        settings["min_history_s"] = history
    if "min_samples" in raw:
        settings["min_samples"] = as_int(raw["min_samples"])
    if (margin := as_float(raw.get("peak_margin"))) is not None:
        settings["peak_margin"] = margin
    return settings


def _figures(raw: Mapping[str, Any]) -> SizingFiguresJson:
    return {
        "allotted": as_float(raw.get("allotted")),
        "used_peak": as_float(raw.get("used_peak")),
        "used_p95": as_float(raw.get("used_p95")),
        "recommended": as_float(raw.get("recommended")),
    }


def _workload(raw: Mapping[str, Any]) -> WorkloadSizingJson:
    over = as_map(raw.get("overcommit"))
    overcommit: OvercommitJson = {
        "ratio": as_float(over.get("ratio")),
        "reason": as_str(over.get("reason")),
    }
    entry: WorkloadSizingJson = {
        "workload": as_str(raw.get("workload"), "?"),
        "container": as_str(raw.get("container"), "?"),
        "pods": as_int(raw.get("pods")),
        "vgpus": as_int(raw.get("vgpus")),
        "samples": as_int(raw.get("samples")),
        "mode": as_str(raw.get("mode"), "?"),
        "memory_mib": _figures(as_map(raw.get("memory_mib"))),
        "core_percent": _figures(as_map(raw.get("core_percent"))),
        "overcommit": overcommit,
    }
    if isinstance(advised := raw.get("advised"), bool):
        entry["advised"] = advised
    if "not_advised" in raw:
        entry["not_advised"] = as_str(raw["not_advised"]) or None
    if evidence := as_map(raw.get("evidence")):
        entry["evidence"] = _evidence(evidence)
    return entry


def _basis(raw: Mapping[str, Any]) -> SizingBasisJson:
    return {
        "percentile": as_int(raw.get("percentile")),
        "basis": as_float(raw.get("basis")),
        "peak": as_float(raw.get("peak")),
        "floor": as_float(raw.get("floor")),
    }


def _evidence(raw: Mapping[str, Any]) -> SizingEvidenceJson:
    core = as_map(raw.get("core_percent"))
    return {
        "first": as_float(raw.get("first")),
        "last": as_float(raw.get("last")),
        "window_seconds": as_float(raw.get("window_seconds")),
        "window": as_str(raw.get("window"), "?"),
        "step_seconds": as_float(raw.get("step_seconds")),
        "samples": as_int(raw.get("samples")),
        "headroom": as_float(raw.get("headroom")),
        "peak_margin": as_float(raw.get("peak_margin")),
        "memory_mib": _basis(as_map(raw.get("memory_mib"))),
        "core_percent": _basis(core) if core else None,
    }


def _pending_fit(raw: Mapping[str, Any]) -> PendingFitJson:
    return {
        "pending": as_int(raw.get("pending")),
        "schedulable_now": as_int(raw.get("schedulable_now")),
        "schedulable_after": as_int(raw.get("schedulable_after")),
        "newly_schedulable": [as_str(p, "?") for p in as_list(raw.get("newly_schedulable"))],
        "no_longer_schedulable": [
            as_str(p, "?") for p in as_list(raw.get("no_longer_schedulable"))
        ],
        "running_shrunk": as_int(raw.get("running_shrunk")),
        "memory_freed_mib": as_float(raw.get("memory_freed_mib")),
    }
