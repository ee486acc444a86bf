"""The report page's findings sections: scaling advice, fragmentation, usage, right-sizing.

Their figures come from `report_findings`, the charts from `report_svg`; every value from the
report passes through `escape`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.render._common import as_map
from advisor.render.html import escape
from advisor.render.node_templates import (
    NOT_TRIGGERED_HEADER,
    NOT_TRIGGERED_TITLE,
    not_triggered_rows,
)
from advisor.render.report_data import as_float
from advisor.render.report_findings import (
    HELD_HEADER,
    HELD_TITLE,
    NO_HISTORY,
    NO_SCALE_DOWN,
    NO_SCALE_UP,
    also_moves_cell,
    cluster_fragmentation,
    fragmented_node_rows,
    held_more_text,
    held_rows,
    pending_fit_text,
    scale_down_header,
    scale_down_rows,
    scale_up_rows,
    shape_rows,
    sizing_rows,
    sizing_scale,
    sizing_window,
    usage_of,
)
from advisor.render.report_html_blocks import bar_percent, html_table, note_panel, section_heading
from advisor.render.report_svg import ALLOTTED_COLOUR, USED_COLOUR, sizing_bar, usage_line_chart


def scaling_section(report: Mapping[str, Any]) -> str:
    """Scale-up advice for what stays Pending, and the nodes that could be emptied."""
    heading = section_heading("scaling", "Scaling advice")
    plan = as_map(report.get("plan"))
    if not plan:
        return heading + note_panel("No plan data in this report.")
    up = (scale_up_html(plan) or f'<p class="none">{escape(NO_SCALE_UP)}</p>') + (
        not_triggered_html(plan)
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


def scale_up_html(plan: Mapping[str, Any]) -> str:
    """The scale-up entries as a table ("" when none)."""
    ups = scale_up_rows(plan)
    if not ups:
        return ""
    return html_table(
        ["Nodes", "Node shape", "For", "Note"],
        [[escape(r.nodes), escape(r.shape), _names(r.pods), escape(r.note)] for r in ups],
        numeric={0},
    )


def not_triggered_html(plan: Mapping[str, Any]) -> str:
    """The pods no node group would help, with why, under a heading ("" when none)."""
    rows = [
        [f'<span class="mono">{escape(pod)}</span>', escape(why)]
        for pod, why in not_triggered_rows(plan)
    ]
    if not rows:
        return ""
    return f"<h3>{escape(NOT_TRIGGERED_TITLE)}</h3>" + html_table(NOT_TRIGGERED_HEADER, rows)


def scale_down_html(plan: Mapping[str, Any]) -> str:
    """The scale-down entries as a table ("" when none): where each node's GPU pods would
    move and, when known, its other pods that would move too."""
    downs = scale_down_rows(plan)
    if not downs:
        return ""
    header = scale_down_header(downs)
    rows = []
    for r in downs:
        cells = [f'<span class="mono">{escape(r.node)}</span>', escape(r.utilisation)]
        cells.append(_names(r.moves))
        if len(header) > len(cells):
            cells.append(_names(also_moves_cell(r)))
        rows.append(cells)
    return html_table(header, rows, numeric={1})


def held_html(plan: Mapping[str, Any]) -> str:
    """The idle nodes scale-down keeps, with why, under a heading ("" when none)."""
    held, omitted = held_rows(plan)
    if not held:
        return ""
    rows = [
        [
            f'<span class="mono">{escape(r.node)}</span>',
            escape(r.utilisation),
            f'<span class="mono">{escape(r.reason)}</span>',
            escape(r.detail),
        ]
        for r in held
    ]
    more = f'<p class="none">{escape(held_more_text(omitted))}</p>' if omitted else ""
    return f"<h3>{HELD_TITLE}</h3>" + html_table(HELD_HEADER, rows, numeric={1}) + more


def _names(names: list[str]) -> str:
    return "<br>".join(f'<span class="mono">{escape(n)}</span>' for n in names) or "—"


def fragmentation_section(report: Mapping[str, Any]) -> str:
    """Cluster fragmentation figures, the typical request shapes, the most fragmented nodes."""
    heading = section_heading("fragmentation", "Fragmentation")
    frag = as_map(report.get("fragmentation"))
    if not frag:
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
    omitted = as_float(frag.get("nodes_omitted")) or 0
    nodes_html = (
        html_table(["Node", "Free MiB", "Fragment", "Stranded", "Ratio"], node_rows, {1, 2, 3, 4})
        if nodes
        else '<p class="none">No node listed.</p>'
    ) + (f'<p class="none">{int(omitted)} more nodes not listed.</p>' if omitted else "")
    return (
        heading
        + f'<section class="panel"><dl class="figures">{figures}</dl></section>'
        + '<div class="two"><section class="panel"><h3>Typical request shapes (the weights)</h3>'
        + shapes_html
        + '</section><section class="panel"><h3>Most fragmented nodes</h3>'
        + nodes_html
        + "</section></div>"
    )


def usage_section(report: Mapping[str, Any]) -> str:
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


def rightsizing_section(report: Mapping[str, Any]) -> str:
    """Per workload: allotted memory against its peak and p95 use, and what to ask for."""
    heading = section_heading("rightsizing", "Right-sizing")
    sizing = as_map(report.get("rightsizing"))
    if not sizing:
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
                *(escape(c) for c in row.memory_cells()),
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
    more = f'<p class="none">{omitted} more workloads not listed.</p>' if omitted else ""
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
