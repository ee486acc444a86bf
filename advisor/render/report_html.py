"""`xgpu-advisor report`: the whole run as one self-contained HTML page (inline CSS and SVG,
no script, no external asset).

Cards, Pending pods and plans are drawn by the diagnosis and plan pages' own fragments
(`html`, `plan_html`); the findings sections are `report_html_findings`'s and the charts are
inline SVG (`report_svg`). Every value from the report passes through `escape`; the only
markup is ours.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.core.diagnose import CAUSES
from advisor.render._common import as_list, as_map, as_str, headline, plural
from advisor.render._style import CAUSE_COLOURS, CSS
from advisor.render.html import advice_panel, card_legend, escape, node_panel, pending_table
from advisor.render.plan_data import kubectl_script
from advisor.render.plan_html import PLAN_CSS, caps_panel, plan_panel, unresolved_panel
from advisor.render.report_data import (
    REPORT_SCHEMA,
    Tile,
    as_float,
    drawn_nodes,
    fmt_generated,
    pending_counts,
    policy_of,
    run_text,
    stale_rows,
    summary_tiles,
    warnings_of,
)
from advisor.render.report_findings import kubectl_input
from advisor.render.report_html_blocks import bar_percent, html_table, note_panel, section_heading
from advisor.render.report_html_findings import (
    fragmentation_section,
    rightsizing_section,
    scaling_section,
    usage_section,
)
from advisor.render.report_plan_views import plan_view_pairs
from advisor.render.report_style import REPORT_CSS
from advisor.render.report_svg import cause_bar_chart

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


# -- header and summary --------------------------------------------------------------------------


def _header(report: Mapping[str, Any], title: str) -> str:
    policy = policy_of(report)
    meta = (
        f"Generated {escape(fmt_generated(report.get('generated_at')))} · source "
        f'<span class="mono">{escape(as_str(report.get("source"), "?"))}</span> · run '
        f"{escape(run_text(report))}" + (f" · policy {escape(policy)}" if policy else "")
    )
    alerts = []
    warnings = warnings_of(report)
    if warnings:
        items = "".join(f"<li>{escape(w)}</li>" for w in warnings)
        alerts.append(
            f'<div class="alert warn"><strong>{escape(plural(len(warnings), "warning"))}</strong>'
            f"<ul>{items}</ul></div>"
        )
    stale = stale_rows(report)
    if stale:
        rows = [
            [f'<span class="mono">{escape(s.subject)}</span>', escape(s.metric), escape(s.newest)]
            for s in stale
        ]
        alerts.append(
            f'<div class="alert stale"><strong>Stale series LEFT OUT of the model ({len(stale)})'
            "</strong> Their newest samples were too old, so the findings below do not "
            "count these nodes, cards or pods."
            + html_table(["Left out", "Series", "Newest sample"], rows)
            + "</div>"
        )
    nav = " · ".join(f'<a href="#{anchor}">{escape(text)}</a>' for anchor, text in SECTIONS)
    return (
        f'<header class="panel"><h1>{escape(title)}</h1><p class="meta top">{meta}</p>'
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
    got, repack, bound = (bar_percent(s or 0.0) for s in shares)
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
        f'<div class="tile {tile.tone}"><div class="label">{escape(tile.label)}</div>'
        f'<div class="value">{escape(tile.value)}</div>{extra}'
        f'<div class="detail">{escape(tile.detail)}</div></div>'
    )


def _summary(report: Mapping[str, Any]) -> str:
    counts = pending_counts(report)
    badges = "".join(
        f'<span class="badge{" zero" if counts[c] == 0 else ""}" '
        f'style="background:{CAUSE_COLOURS[c]}"><b>{counts[c]}</b>{escape(c)}</span>'
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
    heading = section_heading("pending", "Pending GPU pods")
    diagnosis = as_map(report.get("diagnosis"))
    if not diagnosis:
        return heading + note_panel("No diagnosis in this report.")
    counts = pending_counts(report)
    chart = cause_bar_chart([(c, counts[c], CAUSE_COLOURS[c]) for c in CAUSES])
    return (
        heading + '<section class="panel"><h3>Pending by cause</h3>'
        f'<p class="headline">{escape(headline(diagnosis))}</p>{chart}</section>'
        + advice_panel(diagnosis)
        + pending_table(diagnosis)
    )


def _cards(report: Mapping[str, Any]) -> str:
    nodes, omitted = drawn_nodes(report)
    heading = section_heading("cards", "Card occupancy after this cycle")
    if not nodes:
        return heading + note_panel("No nodes in this report.")
    diagnosis = as_map(report.get("diagnosis"))
    more = (
        note_panel(f"{plural(omitted, 'more node')} not drawn; the JSON report has every node.")
        if omitted
        else ""
    )
    return heading + card_legend() + "".join(node_panel(diagnosis, n) for n in nodes) + more


# -- plans -----------------------------------------------------------------------------------------


def _plans(report: Mapping[str, Any]) -> str:
    heading = section_heading("plans", "Rebalancing plans")
    plan = as_map(report.get("plan"))
    if not plan:
        return heading + note_panel("No plan data in this report.")
    plans = [as_map(p) for p in as_list(plan.get("plans"))]
    pairs = plan_view_pairs(report, MAX_PLAN_PICTURES)
    intro = (
        '<section class="panel"><p class="lead">Each plan is a set of pods to evict, checked by '
        "simulating the scheduler: every pod it rescues or evicts lands. Apply them in order; "
        "the advisor never evicts.</p></section>" + caps_panel(plan)
    )
    panels = [
        plan_panel(i, p, pairs[i - 1] if i <= len(pairs) else None) for i, p in enumerate(plans, 1)
    ]
    if len(plans) > len(pairs):
        panels.append(note_panel(f"Card pictures for the first {len(pairs)} plans only."))
    commands = (
        '<section class="panel"><h3>Commands</h3>'
        f'<pre class="cmds">{escape(kubectl_script(kubectl_input(plan)))}</pre></section>'
        if plans
        else ""
    )
    return heading + intro + "".join(panels) + unresolved_panel(plan) + commands


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
            scaling_section(report),
            fragmentation_section(report),
            usage_section(report),
            rightsizing_section(report),
            f"<footer>Generated by xgpu-advisor · {escape(schema)}</footer>",
        ]
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}{PLAN_CSS}{REPORT_CSS}</style></head>"
        f"<body><main>{body}</main></body></html>\n"
    )
