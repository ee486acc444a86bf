"""The report page's findings sections: scaling advice, fragmentation, usage, right-sizing.

Their figures come from `report.findings`, the charts from `report.svg`; every value from the
report passes through `escape`.
"""

from __future__ import annotations

from advisor.render.common.html import bar_percent, escape, html_table, note_panel, section_heading
from advisor.render.plan.scaling import NO_SCALE_DOWN, NO_SCALE_UP
from advisor.render.plan.scaling_html import (
    held_html,
    not_triggered_html,
    relief_html,
    scale_down_html,
    scale_up_html,
)
from advisor.render.report.findings import (
    NO_HISTORY,
    cluster_fragmentation,
    fragmented_node_rows,
    pending_fit_text,
    shape_rows,
    sizing_rows,
    sizing_scale,
    sizing_window,
    usage_of,
)
from advisor.render.report.svg import ALLOTTED_COLOUR, USED_COLOUR, sizing_bar, usage_line_chart
from advisor.render.report.targets import target_parts
from advisor.schemas import ReportJson
from advisor.words import plural


def scaling_section(report: ReportJson) -> str:
    """Scale-up advice for what stays Pending, and the nodes that could be emptied."""
    heading = section_heading("scaling", "Scaling advice")
    plan = report.get("plan")
    if plan is None:
        return heading + note_panel("No plan data in this report.")
    up = (scale_up_html(plan) or f'<p class="none">{escape(NO_SCALE_UP)}</p>') + (
        not_triggered_html(plan) + relief_html(plan)
    )
    down = scale_down_html(plan) or f'<p class="none">{escape(NO_SCALE_DOWN)}</p>'
    return (
        heading
        + '<div class="two"><section class="panel"><h3>Scale up (for what stays Pending)</h3>'
        + up
        + '</section><section class="panel"><h3>Scale down</h3>'
        + down
        + held_html(plan)
        + "</section></div>"
    )


def fragmentation_section(report: ReportJson) -> str:
    """Cluster fragmentation figures, the typical request shapes, the most fragmented nodes."""
    heading = section_heading("fragmentation", "Fragmentation")
    frag = report.get("fragmentation")
    if frag is None:
        return heading + note_panel("No fragmentation figures in this report.")
    figures = "".join(
        f"<div><dt>{escape(label)}</dt><dd>{escape(value)}</dd></div>"
        for label, value in cluster_fragmentation(frag)
    )
    shapes = shape_rows(frag)
    shapes_html = (
        html_table(
            ["Request per card", "Share", "Pods"], [[escape(c) for c in r] for r in shapes], {1, 2}
        )
        if shapes
        else '<p class="none">No request shapes observed.</p>'
    )
    nodes = fragmented_node_rows(frag)
    node_rows = [
        [
            f'<span class="mono">{escape(name)}</span>',
            *(escape(c) for c in cells[:3]),
            f'{escape(cells[3])}<div class="ratio">'
            f'<i style="width:{bar_percent(ratio):.1f}%"></i></div>',
        ]
        for name, cells, ratio in nodes
    ]
    omitted = frag["nodes_omitted"]
    nodes_html = (
        html_table(["Node", "Free MiB", "Fragment", "Stranded", "Ratio"], node_rows, {1, 2, 3, 4})
        if nodes
        else '<p class="none">No node listed.</p>'
    ) + (f'<p class="none">{plural(omitted, "more node")} not listed.</p>' if omitted else "")
    return (
        heading
        + f'<section class="panel"><dl class="figures">{figures}</dl></section>'
        + '<div class="two"><section class="panel"><h3>Typical request shapes (the weights)</h3>'
        + shapes_html
        + '</section><section class="panel"><h3>Most fragmented nodes</h3>'
        + nodes_html
        + "</section></div>"
    )


def usage_section(report: ReportJson) -> str:
    """Cluster vGPU memory allotted and used over the history window, as a line chart."""
    heading = section_heading("usage", "Usage vs allotment over time")
    usage = usage_of(report)
    if usage is None:
        return heading + note_panel(NO_HISTORY)
    legend = (
        f'<div class="legend"><span><i class="sw" style="background:{ALLOTTED_COLOUR}"></i>'
        f'allotted vGPU memory</span><span><i class="sw" style="background:{USED_COLOUR}">'
        "</i>used vGPU memory</span><span>GiB, cluster total; time in UTC</span></div>"
    )
    chart = usage_line_chart(usage.times, usage.allotted_gib, usage.used_gib)
    return (
        heading
        + f'<section class="panel">{legend}{chart}<p class="meta">{escape(usage.summary())}</p>'
        "</section>"
    )


def _evidence(text: str) -> str:
    return f'<div class="sub">{escape(text)}</div>' if text else ""


def rightsizing_section(report: ReportJson) -> str:
    """Per workload: allotted memory against its peak and p95 use, and what to ask for."""
    heading = section_heading("rightsizing", "Right-sizing")
    sizing = report["rightsizing"]
    if sizing is None:
        return heading + note_panel("No history: right-sizing needs usage series.")
    rows, omitted = sizing_rows(sizing)
    body = []
    for row, scale in zip(rows, sizing_scale(rows), strict=True):
        picture = sizing_bar(
            row.allotted_mib, row.p95_mib, row.peak_mib, row.recommended_mib, scale
        )
        body.append(
            [
                f'<span class="mono wl">{escape(row.workload)}</span><div class="sub">'
                f"{escape(row.container)} · {escape(row.vgpus)} · {escape(row.mode)}</div>",
                picture,
                *(escape(c) for c in row.memory_cells()[:3]),
                escape(row.memory_cells()[3]) + _evidence(row.evidence),
                escape(row.saving_text()),
                escape(row.core or "—"),
                escape(row.overcommit),
            ]
        )
    head = ["Workload", "Memory per vGPU", "Allotted", "Peak", "p95", "Recommended"]
    head += ["Saves", "Core", "Overcommit"]
    table = (
        html_table(head, body, {2, 3, 4, 5, 6})
        if body
        else '<p class="none">No workload had samples in the window.</p>'
    )
    more = f'<p class="none">{plural(omitted, "more workload")} not listed.</p>' if omitted else ""
    key = (
        '<div class="legend"><span><i class="sw" style="background:#e2e8f0;border:1px solid '
        f'#94a3b8"></i>allotted</span><span><i class="sw" style="background:{USED_COLOUR}"></i>'
        'p95 used</span><span><i class="sw tick"></i>peak used</span><span><i class="sw dash">'
        "</i>recommended</span><span>MiB per vGPU; Saves: over all the workload's vGPUs"
        "</span></div>"
    )
    return (
        heading
        + f'<section class="panel"><p class="fit">{escape(pending_fit_text(sizing))}</p>'
        + f'<p class="meta">{escape(sizing_window(sizing))}</p>{key}{table}{more}</section>'
    )


TARGETS_HEAD = ["Autoscaler", "Metric", "Advice", "What the HPA saw", "History", "Confidence"]


def targets_section(report: ReportJson) -> str:
    """The autoscaler targets from history (docs/design.md §12.2), a row each in the words of
    the Markdown's lines (`report.targets`); "" where the report has none, as there."""
    targets = report.get("autoscaler_targets")
    if not targets:
        return ""
    rows = []
    for t in targets:
        parts = target_parts(t)
        advice = escape(parts.advice)
        advice += f'<div class="sub">{escape(parts.notes)}</div>' if parts.notes else ""
        rows.append(
            [
                f'<span class="mono">{escape(t["name"])}</span>',
                f'<span class="mono">{escape(t["metric"] or "")}</span>',
                advice,
                *(escape(text or "") for text in (parts.seen, parts.evidence, parts.confidence)),
            ]
        )
    return (
        section_heading("targets", "Autoscaler targets")
        + f'<section class="panel">{html_table(TARGETS_HEAD, rows)}</section>'
    )
