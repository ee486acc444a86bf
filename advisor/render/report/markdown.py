"""`xgpu-advisor report` as Markdown: the HTML page's sections as text tables, for tickets.

Pending pods, cards and plans come from the diagnosis and plan reports' own sections
(`markdown`, `plan_markdown`); everything from the report passes through `escape_cell`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from advisor.core.diagnosis import shown_causes
from advisor.render.common.cards import NodeView
from advisor.render.common.markdown import escape_cell, markdown_table
from advisor.render.common.mig import (
    mig_profiles_markdown,
    repartition_markdown,
    repartitions,
)
from advisor.render.diagnose.data import headline
from advisor.render.diagnose.markdown import (
    advice_section,
    autoscalers_section,
    cards_section,
    pending_section,
)
from advisor.render.plan.markdown import (
    held_table,
    not_triggered_table,
    pictures_section,
    plans_section,
    relief_table,
    scale_down_table,
    scale_up_table,
    unresolved_section,
)
from advisor.render.plan.scaling import NO_SCALE_DOWN, NO_SCALE_UP
from advisor.render.plan.script import kubectl_script
from advisor.render.report.data import (
    drawn_nodes,
    fmt_generated,
    fmt_time,
    pending_counts,
    policy_of,
    run_text,
    stale_rows,
    summary_tiles,
    view_of,
)
from advisor.render.report.findings import (
    NO_HISTORY,
    Usage,
    cluster_fragmentation,
    fragmented_node_rows,
    pending_fit_text,
    shape_rows,
    sizing_rows,
    sizing_window,
    usage_of,
)
from advisor.render.report.plan_views import plan_view_pairs
from advisor.render.report.read import read_report_nodes, read_script_input
from advisor.render.report.targets import targets_section
from advisor.schemas import ReportJson
from advisor.words import plural

MAX_PLAN_PICTURES = 10
USAGE_ROWS = 12
BAR_WIDTH = 24  # characters for the largest cause


def _note(text: str) -> list[str]:
    return [f"_{escape_cell(text)}_", ""]


def _header(report: ReportJson, title: str) -> list[str]:
    policy = policy_of(report)
    lines = [
        f"# {escape_cell(title)}",
        "",
        f"Generated {escape_cell(fmt_generated(report['generated_at']))} · source "
        f"{escape_cell(report['source'])} · run {escape_cell(run_text(report))}"
        + (f" · policy {escape_cell(policy)}" if policy else ""),
        "",
    ]
    warnings = report["warnings"]
    if warnings:
        lines += [f"> **{plural(len(warnings), 'warning')}**", ">"]
        lines += [f"> - {escape_cell(w)}" for w in warnings]
        lines.append("")
    stale = stale_rows(report)
    if stale:
        rows = [[escape_cell(s.subject), escape_cell(s.metric), s.newest] for s in stale]
        lines += [
            f"**Stale series LEFT OUT of the model ({len(stale)}).** Their newest samples were "
            "too old, so the findings below do not count these nodes, cards or pods.",
            "",
            *markdown_table(["Left out", "Series", "Newest sample"], rows, right=set()),
            "",
        ]
    return lines


def _summary(report: ReportJson) -> list[str]:
    counts = pending_counts(report)
    causes = ", ".join(f"{counts[c]} {c}" for c in shown_causes(counts) if counts[c]) or "none"
    pending = f"{counts['pending']}** ({causes})"
    if "diagnosis" not in report:
        pending = "?**: No diagnosis in this report."
    lines = ["## Summary", "", f"- **Pending GPU pods: {pending}"]
    lines += [
        f"- **{tile.label}: {escape_cell(tile.value)}**: {escape_cell(tile.detail)}"
        for tile in summary_tiles(report)
    ]
    return [*lines, ""]


def _pending(report: ReportJson) -> list[str]:
    diagnosis = report.get("diagnosis")
    if diagnosis is None:
        return ["## Pending by cause", "", *_note("No diagnosis in this report.")]
    counts = diagnosis["summary"]
    causes = shown_causes(counts)
    peak = max([counts[c] for c in causes] + [1])
    rows = [[c, str(counts[c]), "█" * round(BAR_WIDTH * counts[c] / peak) or "·"] for c in causes]
    return [
        "## Pending by cause",
        "",
        f"**{escape_cell(headline(diagnosis))}**",
        "",
        *markdown_table(["Cause", "Pods", ""], rows, right={1}),
        "",
        *pending_section(diagnosis),
        *advice_section(diagnosis),
        *repartition_markdown(repartitions(diagnosis["pods"])),
        *mig_profiles_markdown(diagnosis.get("mig_profiles", [])),
        *autoscalers_section(diagnosis),
    ]


def _cards(report: ReportJson, read: Sequence[NodeView]) -> list[str]:
    nodes, omitted = drawn_nodes(report, nodes=read)
    if not nodes:
        return ["## Cards after this cycle", "", *_note("No nodes in this report.")]
    lines = cards_section(view_of(nodes))
    if omitted:
        lines += _note(
            f"{plural(omitted, 'more node')} not listed; the JSON report has every node."
        )
    return lines


def _plans(
    report: ReportJson, read: Sequence[NodeView], script_input: Mapping[str, Any]
) -> list[str]:
    plan = report.get("plan")
    if plan is None:
        return ["## Plans", "", *_note("No plan data in this report.")]
    lines = [*plans_section(plan), *unresolved_section(plan)]
    if plan["plans"]:
        lines += [
            "## Commands",
            "",
            "```sh",
            kubectl_script(script_input).rstrip("\n"),
            "```",
            "",
        ]
    return lines + pictures_section(plan_view_pairs(report, MAX_PLAN_PICTURES, read))


def _scaling(report: ReportJson) -> list[str]:
    plan = report.get("plan")
    if plan is None:
        return ["## Scaling advice", "", *_note("No plan data in this report.")]
    lines = ["## Scaling advice", "", "### Scale up (for what stays Pending)", ""]
    lines += scale_up_table(plan) or _note(NO_SCALE_UP)
    lines += not_triggered_table(plan)
    lines += relief_table(plan)
    lines += ["### Scale down", ""]
    lines += scale_down_table(plan) or _note(NO_SCALE_DOWN)
    return lines + held_table(plan)


def _fragmentation(report: ReportJson) -> list[str]:
    frag = report.get("fragmentation")
    if frag is None:
        return ["## Fragmentation", "", *_note("No fragmentation figures in this report.")]
    lines = ["## Fragmentation", ""]
    lines += [f"- {label}: **{value}**" for label, value in cluster_fragmentation(frag)]
    lines += ["", "### Typical request shapes", ""]
    shapes = shape_rows(frag)
    if shapes:
        lines += [*markdown_table(["Request per card", "Share", "Pods"], shapes, right={1, 2}), ""]
    else:
        lines += _note("No request shapes observed.")
    lines += ["### Most fragmented nodes", ""]
    nodes = [[escape_cell(name), *cells] for name, cells, _ in fragmented_node_rows(frag)]
    if nodes:
        header = ["Node", "Free MiB", "Fragment MiB", "Stranded MiB", "Ratio"]
        lines += [*markdown_table(header, nodes, right={1, 2, 3, 4}), ""]
    else:
        lines += _note("No node listed.")
    omitted = frag["nodes_omitted"]
    if omitted > 0:
        lines += _note(f"{plural(omitted, 'more node')} not listed.")
    return lines


def _usage_rows(usage: Usage) -> list[list[str]]:
    """At most USAGE_ROWS samples, evenly spaced, first and last included."""
    n = len(usage.times)
    picks = sorted({round(i * (n - 1) / (USAGE_ROWS - 1)) for i in range(USAGE_ROWS)})
    rows = []
    for i in picks[:n]:
        allotted, used = usage.allotted_gib[i], usage.used_gib[i]
        share = f"{used / allotted:.0%}" if allotted > 0 else "?"
        rows.append([fmt_time(usage.times[i]), f"{allotted:,.1f}", f"{used:,.1f}", share])
    return rows


def _usage(report: ReportJson) -> list[str]:
    lines = ["## Usage vs allotment over time", ""]
    usage = usage_of(report)
    if usage is None:
        return lines + _note(NO_HISTORY)
    header = ["Time", "Allotted GiB", "Used GiB", "Used / allotted"]
    return [
        *lines,
        escape_cell(usage.summary()),
        "",
        *markdown_table(header, _usage_rows(usage), right={1, 2, 3}),
        "",
    ]


def _rightsizing(report: ReportJson) -> list[str]:
    lines = ["## Right-sizing", ""]
    sizing = report["rightsizing"]
    if sizing is None:
        return lines + _note("No history: right-sizing needs usage series.")
    lines += [
        f"**{escape_cell(pending_fit_text(sizing))}**",
        "",
        escape_cell(sizing_window(sizing)),
    ]
    rows, omitted = sizing_rows(sizing)
    if not rows:
        return [*lines, "", *_note("No workload had samples in the window.")]
    header = ["Workload", "Container", "vGPUs", "Mode", "Allotted", "Peak", "p95"]
    header += ["Recommended", "Saves (all vGPUs)", "Core", "Overcommit"]
    cells = [
        [
            escape_cell(r.workload),
            escape_cell(r.container),
            r.vgpus,
            escape_cell(r.mode),
            *r.memory_cells()[:3],
            escape_cell(r.recommended_text()),
            r.saving_text(),
            escape_cell(r.core or "-"),
            escape_cell(r.overcommit),
        ]
        for r in rows
    ]
    lines += [
        "",
        "Memory in MiB per vGPU:",
        "",
        *markdown_table(header, cells, right={4, 5, 6, 7, 8}),
        "",
    ]
    if omitted:
        lines += _note(f"{plural(omitted, 'more workload')} not listed.")
    return lines


def render_report_markdown(raw: Mapping[str, Any], title: str = "xgpu-advisor report") -> str:
    """The report (`xgpu-advisor/report/v1`, as written or as a file holds it) as Markdown,
    sections as in the HTML page."""
    report, nodes = read_report_nodes(raw)
    return markdown_page(report, nodes, read_script_input(raw), title)


def markdown_page(
    report: ReportJson,
    nodes: Sequence[NodeView],
    script_input: Mapping[str, Any],
    title: str = "xgpu-advisor report",
) -> str:
    """The Markdown of a report already read (`read.read_report_nodes`, `read_script_input`)."""
    lines = [
        *_header(report, title),
        *_summary(report),
        *_pending(report),
        *_cards(report, nodes),
        *_plans(report, nodes, script_input),
        *_scaling(report),
        *_fragmentation(report),
        *_usage(report),
        *_rightsizing(report),
        *targets_section(report.get("autoscaler_targets")),
        f"_Generated by xgpu-advisor · {escape_cell(report['schema'])}_",
    ]
    return "\n".join(lines) + "\n"
