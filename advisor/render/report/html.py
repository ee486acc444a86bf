"""`xgpu-advisor report`: the whole run as one self-contained HTML page (inline CSS and SVG,
no script, no external asset).

Cards, Pending pods and plans are drawn by the diagnosis and plan pages' own fragments
(`html`, `plan_html`); the findings sections are `report_html_findings`'s and the charts are
inline SVG (`report_svg`). Every value from the report passes through `escape`; the only
markup is ours.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from advisor.core.diagnosis import shown_causes
from advisor.render.common.cards import NodeView
from advisor.render.common.cards_html import card_legend
from advisor.render.common.html import (
    bar_percent,
    escape,
    html_table,
    note_panel,
    page,
    section_heading,
)
from advisor.render.common.mig import mig_profiles_html, repartition_html, repartitions
from advisor.render.common.style import CAUSE_COLOURS
from advisor.render.diagnose.data import headline
from advisor.render.diagnose.html import (
    advice_panel,
    autoscalers_panel,
    node_panel,
    pending_table,
)
from advisor.render.diagnose.read import read_diagnosis
from advisor.render.plan.html import caps_panel, plan_panel, unresolved_panel
from advisor.render.plan.script import kubectl_script
from advisor.render.report.data import (
    Tile,
    drawn_nodes,
    fmt_generated,
    pending_counts,
    policy_of,
    run_text,
    stale_rows,
    summary_tiles,
)
from advisor.render.report.html_findings import (
    fragmentation_section,
    rightsizing_section,
    scaling_section,
    targets_section,
    usage_section,
)
from advisor.render.report.plan_views import plan_view_pairs
from advisor.render.report.read import read_report_nodes, read_script_input
from advisor.render.report.svg import cause_bar_chart
from advisor.schemas import PlanJson, ReportJson
from advisor.words import plural

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
TARGETS = ("targets", "Autoscaler targets")  # linked only where the report has them


# -- header and summary --------------------------------------------------------------------------


def _header(report: ReportJson, title: str) -> str:
    policy = policy_of(report)
    meta = (
        f"Generated {escape(fmt_generated(report['generated_at']))} · source "
        f'<span class="mono">{escape(report["source"])}</span> · run '
        f"{escape(run_text(report))}" + (f" · policy {escape(policy)}" if policy else "")
    )
    alerts = []
    warnings = report["warnings"]
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
    sections = (*SECTIONS, TARGETS) if report.get("autoscaler_targets") else SECTIONS
    nav = " · ".join(f'<a href="#{anchor}">{escape(text)}</a>' for anchor, text in sections)
    return (
        f'<header class="panel"><h1>{escape(title)}</h1><p class="meta top">{meta}</p>'
        f'{"".join(alerts)}<nav class="toc">{nav}</nav></header>'
    )


def _meter(plan: PlanJson | None) -> str:
    """Rescued share against the ideal and the memory bound, on one bar."""
    if plan is None:
        return ""
    summary, ideal = plan["summary"], plan["ideal"]
    shares = [summary["rescued_share"], ideal["repack_share"], ideal["upper_bound_share"]]
    if None in shares:
        return ""
    got, repack, bound = (bar_percent(s or 0.0) for s in shares)
    return (
        '<div class="meter" title="rescued by plans, ideal arrangement, memory bound">'
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


def _summary(report: ReportJson) -> str:
    counts = pending_counts(report)
    badges = "".join(
        f'<span class="badge{" zero" if counts[c] == 0 else ""}" '
        f'style="background:{CAUSE_COLOURS[c]}"><b>{counts[c]}</b>{escape(c)}</span>'
        for c in shown_causes(counts)
    )
    pending = (
        f'<div class="tile pending"><div class="label">Pending GPU pods</div>'
        f'<div class="value">{counts["pending"]}</div><div class="badges">{badges}</div></div>'
        if "diagnosis" in report
        else _tile(Tile("Pending GPU pods", "?", "No diagnosis in this report."))
    )
    rescue, frag, room = summary_tiles(report)
    tiles = [pending, _tile(rescue, _meter(report.get("plan"))), _tile(frag), _tile(room)]
    return f'<section class="panel summary"><div class="tiles">{"".join(tiles)}</div></section>'


# -- Pending, cards --------------------------------------------------------------------------------


def _pending(report: ReportJson) -> str:
    heading = section_heading("pending", "Pending GPU pods")
    diagnosis = report.get("diagnosis")
    if diagnosis is None:
        return heading + note_panel("No diagnosis in this report.")
    counts = diagnosis["summary"]
    chart = cause_bar_chart([(c, counts[c], CAUSE_COLOURS[c]) for c in shown_causes(counts)])
    return (
        heading + '<section class="panel"><h3>Pending by cause</h3>'
        f'<p class="headline">{escape(headline(diagnosis))}</p>{chart}</section>'
        + advice_panel(diagnosis)
        + repartition_html(repartitions(diagnosis["pods"]))
        + mig_profiles_html(diagnosis.get("mig_profiles", []))
        + pending_table(diagnosis)
        + autoscalers_panel(diagnosis)
    )


def _cards(report: ReportJson, read: Sequence[NodeView]) -> str:
    nodes, omitted = drawn_nodes(report, nodes=read)
    heading = section_heading("cards", "Card occupancy after this cycle")
    if not nodes:
        return heading + note_panel("No nodes in this report.")
    diagnosis = report.get("diagnosis") or read_diagnosis({})  # no pods: panels say so
    more = (
        note_panel(f"{plural(omitted, 'more node')} not drawn; the JSON report has every node.")
        if omitted
        else ""
    )
    return heading + card_legend() + "".join(node_panel(diagnosis, n) for n in nodes) + more


# -- plans -----------------------------------------------------------------------------------------


def _plans(report: ReportJson, read: Sequence[NodeView], script_input: Mapping[str, Any]) -> str:
    heading = section_heading("plans", "Rebalancing plans")
    plan = report.get("plan")
    if plan is None:
        return heading + note_panel("No plan data in this report.")
    plans = plan["plans"]
    pairs = plan_view_pairs(report, MAX_PLAN_PICTURES, read)
    intro = (
        '<section class="panel"><p class="lead">Each plan is a set of pods to evict, checked by '
        "simulating the scheduler: every pod it rescues or evicts lands. Apply them in order; "
        "the advisor never evicts.</p></section>" + caps_panel(plan)
    )
    panels = [
        plan_panel(i, p, pairs[i - 1] if i <= len(pairs) else None) for i, p in enumerate(plans, 1)
    ]
    if len(plans) > len(pairs):
        panels.append(note_panel(f"Card pictures for the first {plural(len(pairs), 'plan')} only."))
    script = kubectl_script(script_input)  # names made shell-safe
    commands = (
        '<section class="panel"><h3>Commands</h3>'
        f'<pre class="cmds">{escape(script)}</pre></section>'
        if plans
        else ""
    )
    return heading + intro + "".join(panels) + unresolved_panel(plan) + commands


def render_report_html(raw: Mapping[str, Any], title: str = "xgpu-advisor report") -> str:
    """The report (`xgpu-advisor/report/v1`, as written or as a file holds it) as a
    self-contained HTML page."""
    report, nodes = read_report_nodes(raw)
    return html_page(report, nodes, read_script_input(raw), title)


def html_page(
    report: ReportJson,
    nodes: Sequence[NodeView],
    script_input: Mapping[str, Any],
    title: str = "xgpu-advisor report",
) -> str:
    """The HTML page of a report already read (`read.read_report_nodes`, `read_script_input`)."""
    body = "".join(
        [
            _header(report, title),
            _summary(report),
            _pending(report),
            _cards(report, nodes),
            _plans(report, nodes, script_input),
            scaling_section(report),
            fragmentation_section(report),
            usage_section(report),
            rightsizing_section(report),
            targets_section(report),
        ]
    )
    return page(title, ("base", "plan", "report"), body, report["schema"])
