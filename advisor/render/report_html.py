"""`xgpu-advisor report`: the whole run as one self-contained HTML page (inline CSS and SVG,
no script, no external asset).

Cards, Pending pods and plans are drawn by the diagnosis and plan pages' own fragments
(through `report_fragments`); the charts are inline SVG (`report_svg`). Every value from the
report passes through `html.escape`; the only markup is ours.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.render._common import CAUSES, as_list, as_map, as_str, headline
from advisor.render._style import CAUSE_COLOURS, CSS
from advisor.render.plan_data import kubectl_script
from advisor.render.report_data import (
    REPORT_SCHEMA,
    Tile,
    as_float,
    drawn_nodes,
    fmt_generated,
    pending_counts,
    plural,
    policy_of,
    run_text,
    stale_rows,
    summary_tiles,
    warnings_of,
)
from advisor.render.report_findings import (
    NO_HISTORY,
    cluster_fragmentation,
    fragmented_node_rows,
    kubectl_input,
    pending_fit_text,
    scale_down_rows,
    scale_up_rows,
    shape_rows,
    sizing_rows,
    sizing_scale,
    sizing_window,
    usage_of,
)
from advisor.render.report_fragments import (
    PLAN_CSS,
    advice_html,
    card_legend_html,
    node_cards_html,
    pending_table_html,
    plan_html_panel,
    unresolved_html,
)
from advisor.render.report_fragments import escape as _e
from advisor.render.report_plan_views import plan_view_pairs
from advisor.render.report_style import REPORT_CSS
from advisor.render.report_svg import (
    ALLOTTED_COLOUR,
    USED_COLOUR,
    cause_bar_chart,
    sizing_bar,
    usage_line_chart,
)

MAX_PLAN_PICTURES = 10
SECTIONS = (
    ("pending", "Pending"),
    ("cards", "Cards"),
    ("plans", "Plans"),
    ("scaling", "Scaling"),
    ("fragmentation", "Fragmentation"),
    ("usage", "Usage"),
    ("rightsizing", "Right-sizing"),
)


def _percent(share: float) -> float:
    return min(max(share, 0.0), 1.0) * 100


def _note(text: str) -> str:
    return f'<section class="panel"><p class="none">{_e(text)}</p></section>'


def _heading(anchor: str, text: str) -> str:
    return f'<h2 class="section" id="{anchor}">{_e(text)}</h2>'


def _table(head: list[str], rows: list[list[str]], numeric: set[int] | None = None) -> str:
    """Cells must already be HTML; `numeric` columns are right-aligned."""
    right = numeric or set()

    def cell(tag: str, i: int, text: str) -> str:
        return f'<{tag} class="num">{text}</{tag}>' if i in right else f"<{tag}>{text}</{tag}>"

    header = "".join(cell("th", i, h) for i, h in enumerate(head))
    body = "".join(
        "<tr>" + "".join(cell("td", i, c) for i, c in enumerate(r)) + "</tr>" for r in rows
    )
    return f"<table><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"


# -- header and summary --------------------------------------------------------------------------


def _header(report: Mapping[str, Any], title: str) -> str:
    policy = policy_of(report)
    meta = (
        f"Generated {_e(fmt_generated(report.get('generated_at')))} · source "
        f'<span class="mono">{_e(as_str(report.get("source"), "?"))}</span> · run '
        f"{_e(run_text(report))}" + (f" · policy {_e(policy)}" if policy else "")
    )
    alerts = []
    warnings = warnings_of(report)
    if warnings:
        items = "".join(f"<li>{_e(w)}</li>" for w in warnings)
        alerts.append(
            f'<div class="alert warn"><strong>{_e(plural(len(warnings), "warning"))}</strong>'
            f"<ul>{items}</ul></div>"
        )
    stale = stale_rows(report)
    if stale:
        rows = [
            [f'<span class="mono">{_e(s.subject)}</span>', _e(s.metric), _e(s.newest)]
            for s in stale
        ]
        alerts.append(
            f'<div class="alert stale"><strong>Stale series LEFT OUT of the model ({len(stale)})'
            "</strong> Their newest samples were too old, so the findings below do not "
            "count these nodes, cards or pods."
            + _table(["Left out", "Series", "Newest sample"], rows)
            + "</div>"
        )
    nav = " · ".join(f'<a href="#{anchor}">{_e(text)}</a>' for anchor, text in SECTIONS)
    return (
        f'<header class="panel"><h1>{_e(title)}</h1><p class="meta top">{meta}</p>'
        f'{"".join(alerts)}<nav class="toc">{nav}</nav></header>'
    )


def _meter(plan: Mapping[str, Any]) -> str:
    """Rescued share against the ideal repack and the free-memory bound, on one bar."""
    summary, ideal = as_map(plan.get("summary")), as_map(plan.get("ideal"))
    shares = [
        as_float(summary.get("rescued_share")),
        as_float(ideal.get("repack_share")),
        as_float(ideal.get("upper_bound_share")),
    ]
    if None in shares:
        return ""
    got, repack, bound = (_percent(s or 0.0) for s in shares)
    return (
        '<div class="meter" title="rescued by plans, ideal repack, free-memory bound">'
        f'<i class="bound" style="width:{bound:.1f}%"></i>'
        f'<i class="ideal" style="width:{repack:.1f}%"></i>'
        f'<i class="got" style="width:{got:.1f}%"></i></div>'
        '<div class="meter-key"><span><i class="got"></i>plans</span>'
        '<span><i class="ideal"></i>ideal</span><span><i class="bound"></i>bound</span></div>'
    )


def _tile(tile: Tile, extra: str = "") -> str:
    return (
        f'<div class="tile {tile.tone}"><div class="label">{_e(tile.label)}</div>'
        f'<div class="value">{_e(tile.value)}</div>{extra}'
        f'<div class="detail">{_e(tile.detail)}</div></div>'
    )


def _summary(report: Mapping[str, Any]) -> str:
    counts = pending_counts(report)
    badges = "".join(
        f'<span class="badge{" zero" if counts[c] == 0 else ""}" '
        f'style="background:{CAUSE_COLOURS[c]}"><b>{counts[c]}</b>{_e(c)}</span>'
        for c in CAUSES
    )
    pending = (
        f'<div class="tile pending"><div class="label">Pending GPU pods</div>'
        f'<div class="value">{counts["pending"]}</div><div class="badges">{badges}</div></div>'
        if as_map(report.get("diagnosis"))
        else _tile(Tile("Pending GPU pods", "?", "No diagnosis in this report."))
    )
    rescue, frag, room = summary_tiles(report)
    tiles = [pending, _tile(rescue, _meter(as_map(report.get("plan")))), _tile(frag), _tile(room)]
    return f'<section class="panel summary"><div class="tiles">{"".join(tiles)}</div></section>'


# -- Pending, cards --------------------------------------------------------------------------------


def _pending(report: Mapping[str, Any]) -> str:
    diagnosis = as_map(report.get("diagnosis"))
    if not diagnosis:
        return _heading("pending", "Pending GPU pods") + _note("No diagnosis in this report.")
    counts = pending_counts(report)
    chart = cause_bar_chart([(c, counts[c], CAUSE_COLOURS[c]) for c in CAUSES])
    return (
        _heading("pending", "Pending GPU pods") + '<section class="panel"><h3>Pending by cause</h3>'
        f'<p class="headline">{_e(headline(diagnosis))}</p>{chart}</section>'
        + advice_html(diagnosis)
        + pending_table_html(diagnosis)
    )


def _cards(report: Mapping[str, Any]) -> str:
    nodes, omitted = drawn_nodes(report)
    heading = _heading("cards", "Card occupancy after this cycle")
    if not nodes:
        return heading + _note("No nodes in this report.")
    diagnosis = as_map(report.get("diagnosis"))
    more = (
        _note(f"{plural(omitted, 'more node')} not drawn; the JSON report has every node.")
        if omitted
        else ""
    )
    return (
        heading + card_legend_html() + "".join(node_cards_html(diagnosis, n) for n in nodes) + more
    )


# -- plans and scaling -----------------------------------------------------------------------------


def _plans(report: Mapping[str, Any]) -> str:
    heading = _heading("plans", "Rebalancing plans")
    plan = as_map(report.get("plan"))
    if not plan:
        return heading + _note("No plan data in this report.")
    plans = [as_map(p) for p in as_list(plan.get("plans"))]
    pairs = plan_view_pairs(report, MAX_PLAN_PICTURES)
    intro = (
        '<section class="panel"><p class="lead">Each plan is a set of pods to evict, checked by '
        "simulating the scheduler: every pod it rescues or evicts lands. Apply them in order; "
        "the advisor never evicts.</p>"
        + (
            ""
            if plans
            else '<p class="none">No plan found: no eviction set lets a Pending pod run.</p>'
        )
        + "</section>"
    )
    panels = [
        plan_html_panel(i, p, pairs[i - 1] if i <= len(pairs) else None)
        for i, p in enumerate(plans, 1)
    ]
    if len(plans) > len(pairs):
        panels.append(_note(f"Card pictures for the first {len(pairs)} plans only."))
    commands = (
        '<section class="panel"><h3>Commands</h3>'
        f'<pre class="cmds">{_e(kubectl_script(kubectl_input(plan)))}</pre></section>'
        if plans
        else ""
    )
    return heading + intro + "".join(panels) + unresolved_html(plan) + commands


def _scaling(report: Mapping[str, Any]) -> str:
    plan = as_map(report.get("plan"))
    if not plan:
        return _heading("scaling", "Scaling advice") + _note("No plan data in this report.")
    ups, downs = scale_up_rows(plan), scale_down_rows(plan)
    up = (
        _table(
            ["Nodes", "Node shape", "For", "Note"],
            [[_e(r.nodes), _e(r.shape), _names(r.pods), _e(r.note)] for r in ups],
            numeric={0},
        )
        if ups
        else '<p class="none">None: no unresolved pod needs new nodes.</p>'
    )
    down_rows = [
        [f'<span class="mono">{_e(r.node)}</span>', _e(r.utilisation), _names(r.moves)]
        for r in downs
    ]
    down = (
        _table(["Node", "Utilisation", "Its pods would move to"], down_rows, numeric={1})
        if downs
        else '<p class="none">None: no node below the threshold can be emptied.</p>'
    )
    return (
        _heading("scaling", "Scaling advice")
        + '<div class="two"><section class="panel"><h3>Scale up (for what stays Pending)</h3>'
        + up
        + '</section><section class="panel"><h3>Scale down</h3>'
        + down
        + "</section></div>"
    )


def _names(names: list[str]) -> str:
    return "<br>".join(f'<span class="mono">{_e(n)}</span>' for n in names) or "—"


# -- fragmentation, usage, right-sizing ------------------------------------------------------------


def _fragmentation(report: Mapping[str, Any]) -> str:
    heading = _heading("fragmentation", "Fragmentation")
    frag = as_map(report.get("fragmentation"))
    if not frag:
        return heading + _note("No fragmentation figures in this report.")
    figures = "".join(
        f"<div><dt>{_e(label)}</dt><dd>{_e(value)}</dd></div>"
        for label, value in cluster_fragmentation(frag)
    )
    shapes = shape_rows(frag)
    shapes_html = (
        _table(["Request per card", "Share", "Pods"], [[_e(c) for c in r] for r in shapes], {1, 2})
        if shapes
        else '<p class="none">No request shapes observed.</p>'
    )
    nodes = fragmented_node_rows(frag)
    node_rows = [
        [
            f'<span class="mono">{_e(name)}</span>',
            *(_e(c) for c in cells[:3]),
            f'{_e(cells[3])}<div class="ratio"><i style="width:{_percent(ratio):.1f}%"></i></div>',
        ]
        for name, cells, ratio in nodes
    ]
    omitted = as_float(frag.get("nodes_omitted")) or 0
    nodes_html = (
        _table(["Node", "Free MiB", "Fragment", "Stranded", "Ratio"], node_rows, {1, 2, 3, 4})
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


def _usage(report: Mapping[str, Any]) -> str:
    heading = _heading("usage", "Usage vs allotment over time")
    usage = usage_of(report)
    if usage is None:
        return heading + _note(NO_HISTORY)
    legend = (
        f'<div class="legend"><span><i class="sw" style="background:{ALLOTTED_COLOUR}"></i>'
        f'allotted vGPU memory</span><span><i class="sw" style="background:{USED_COLOUR}">'
        "</i>used vGPU memory</span><span>GiB, cluster total; time in UTC</span></div>"
    )
    chart = usage_line_chart(usage.times, usage.allotted_gib, usage.used_gib)
    return (
        heading + f'<section class="panel">{legend}{chart}<p class="meta">{_e(usage.summary())}</p>'
        "</section>"
    )


def _rightsizing(report: Mapping[str, Any]) -> str:
    heading = _heading("rightsizing", "Right-sizing")
    sizing = as_map(report.get("rightsizing"))
    if not sizing:
        return heading + _note("No history: right-sizing needs usage series.")
    rows, omitted = sizing_rows(sizing)
    body = []
    for row, scale in zip(rows, sizing_scale(rows), strict=True):
        picture = sizing_bar(
            row.allotted_mib, row.p95_mib, row.peak_mib, row.recommended_mib, scale
        )
        body.append(
            [
                f'<span class="mono wl">{_e(row.workload)}</span><div class="sub">'
                f"{_e(row.container)} · {_e(row.vgpus)} · {_e(row.mode)}</div>",
                picture,
                *(_e(c) for c in row.memory_cells()),
                _e(row.saving_text()),
                _e(row.core or "—"),
                _e(row.overcommit),
            ]
        )
    head = ["Workload", "Memory per vGPU", "Allotted", "Peak", "p95", "Recommended"]
    head += ["Saves", "Core", "Overcommit"]
    table = (
        _table(head, body, {2, 3, 4, 5, 6})
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
        + f'<section class="panel"><p class="fit">{_e(pending_fit_text(sizing))}</p>'
        + f'<p class="meta">{_e(sizing_window(sizing))}</p>{key}{table}{more}</section>'
    )


def render_report_html(report: Mapping[str, Any], title: str = "xgpu-advisor report") -> str:
    """The report (`xgpu-advisor/report/v1`) as a self-contained HTML page."""
    schema = as_str(report.get("schema"), REPORT_SCHEMA)
    body = "".join(
        [
            _header(report, title),
            _summary(report),
            _pending(report),
            _cards(report),
            _plans(report),
            _scaling(report),
            _fragmentation(report),
            _usage(report),
            _rightsizing(report),
            f"<footer>Generated by xgpu-advisor · {_e(schema)}</footer>",
        ]
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{CSS}{PLAN_CSS}{REPORT_CSS}</style></head>"
        f"<body><main>{body}</main></body></html>\n"
    )
