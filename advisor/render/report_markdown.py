"""`xgpu-advisor report` as Markdown: the HTML page's sections as text tables, for tickets.

Pending pods, cards and plans come from the diagnosis and plan reports' own sections
(`markdown`, `plan_markdown`); everything from the report passes through `escape_cell`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.core.diagnose import CAUSES
from advisor.render._common import as_list, as_map, as_str, headline, plural
from advisor.render.markdown import (
    advice_section,
    cards_section,
    escape_cell,
    markdown_table,
    pending_section,
)
from advisor.render.plan_data import kubectl_script
from advisor.render.plan_markdown import (
    held_table,
    not_triggered_table,
    pictures_section,
    plans_section,
    scale_down_table,
    scale_up_table,
    unresolved_section,
)
from advisor.render.report_data import (
    REPORT_SCHEMA,
    drawn_nodes,
    fmt_generated,
    fmt_time,
    pending_counts,
    policy_of,
    run_text,
    stale_rows,
    summary_tiles,
    view_of,
    warnings_of,
)
from advisor.render.report_findings import (
    NO_HISTORY,
    NO_SCALE_DOWN,
    NO_SCALE_UP,
    Usage,
    cluster_fragmentation,
    fragmented_node_rows,
    kubectl_input,
    pending_fit_text,
    shape_rows,
    sizing_rows,
    sizing_window,
    usage_of,
)
from advisor.render.report_plan_views import plan_view_pairs

MAX_PLAN_PICTURES = 10
USAGE_ROWS = 12
BAR_WIDTH = 24  # characters for the largest cause


def _note(text: str) -> list[str]:
    return [f"_{escape_cell(text)}_", ""]


def _header(report: Mapping[str, Any], title: str) -> list[str]:
    policy = policy_of(report)
    lines = [
        f"# {escape_cell(title)}",
        "",
        f"Generated {escape_cell(fmt_generated(report.get('generated_at')))} · source "
        f"{escape_cell(as_str(report.get('source'), '?'))} · run {escape_cell(run_text(report))}"
        + (f" · policy {escape_cell(policy)}" if policy else ""),
        "",
    ]
    warnings = warnings_of(report)
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


def _summary(report: Mapping[str, Any]) -> list[str]:
    counts = pending_counts(report)
    causes = ", ".join(f"{counts[c]} {c}" for c in CAUSES if counts[c]) or "none"
    pending = f"{counts['pending']}** ({causes})"
    if not as_map(report.get("diagnosis")):
        pending = "?**: No diagnosis in this report."
    lines = ["## Summary", "", f"- **Pending GPU pods: {pending}"]
    lines += [
        f"- **{tile.label}: {escape_cell(tile.value)}**: {escape_cell(tile.detail)}"
        for tile in summary_tiles(report)
    ]
    return [*lines, ""]


def _pending(report: Mapping[str, Any]) -> list[str]:
    diagnosis = as_map(report.get("diagnosis"))
    if not diagnosis:
        return ["## Pending by cause", "", *_note("No diagnosis in this report.")]
    counts = pending_counts(report)
    peak = max([counts[c] for c in CAUSES] + [1])
    rows = [[c, str(counts[c]), "█" * round(BAR_WIDTH * counts[c] / peak) or "·"] for c in CAUSES]
    return [
        "## Pending by cause",
        "",
        f"**{escape_cell(headline(diagnosis))}**",
        "",
        *markdown_table(["Cause", "Pods", ""], rows, right={1}),
        "",
        *pending_section(diagnosis),
        *advice_section(diagnosis),
    ]


def _cards(report: Mapping[str, Any]) -> list[str]:
    nodes, omitted = drawn_nodes(report)
    if not nodes:
        return ["## Cards after this cycle", "", *_note("No nodes in this report.")]
    lines = cards_section(view_of(nodes))
    if omitted:
        lines += _note(
            f"{plural(omitted, 'more node')} not listed; the JSON report has every node."
        )
    return lines


def _plans(report: Mapping[str, Any]) -> list[str]:
    plan = as_map(report.get("plan"))
    if not plan:
        return ["## Plans", "", *_note("No plan data in this report.")]
    lines = [*plans_section(plan), *unresolved_section(plan)]
    if as_list(plan.get("plans")):
        lines += [
            "## Commands",
            "",
            "```sh",
            kubectl_script(kubectl_input(plan)).rstrip("\n"),
            "```",
            "",
        ]
    return lines + pictures_section(plan_view_pairs(report, MAX_PLAN_PICTURES))


def _scaling(report: Mapping[str, Any]) -> list[str]:
    plan = as_map(report.get("plan"))
    if not plan:
        return ["## Scaling advice", "", *_note("No plan data in this report.")]
    lines = ["## Scaling advice", "", "### Scale up (for what stays Pending)", ""]
    lines += scale_up_table(plan) or _note(NO_SCALE_UP)
    lines += not_triggered_table(plan)
    lines += ["### Scale down", ""]
    lines += scale_down_table(plan) or _note(NO_SCALE_DOWN)
    return lines + held_table(plan)


def _fragmentation(report: Mapping[str, Any]) -> list[str]:
    frag = as_map(report.get("fragmentation"))
    if not frag:
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
    omitted = frag.get("nodes_omitted")
    if isinstance(omitted, int) and omitted > 0:
        lines += _note(f"{omitted} more nodes not listed.")
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


def _usage(report: Mapping[str, Any]) -> list[str]:
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


def _rightsizing(report: Mapping[str, Any]) -> list[str]:
    lines = ["## Right-sizing", ""]
    sizing = as_map(report.get("rightsizing"))
    if not sizing:
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
            *r.memory_cells(),
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
        lines += _note(f"{omitted} more workloads not listed.")
    return lines


def render_report_markdown(report: Mapping[str, Any], title: str = "xgpu-advisor report") -> str:
    """The report (`xgpu-advisor/report/v1`) as Markdown, sections as in the HTML page."""
    schema = as_str(report.get("schema"), REPORT_SCHEMA)
    lines = [
        *_header(report, title),
        *_summary(report),
        *_pending(report),
        *_cards(report),
        *_plans(report),
        *_scaling(report),
        *_fragmentation(report),
        *_usage(report),
        *_rightsizing(report),
        f"_Generated by xgpu-advisor · {escape_cell(schema)}_",
    ]
    return "\n".join(lines) + "\n"
