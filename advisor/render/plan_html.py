"""`xgpu-advisor plan --format html`: one self-contained page with before/after card pictures.

The card bars are the diagnosis report's (`advisor.render.html`); in "after", the pods a
plan rescued are drawn hatched, as the diagnosis draws the pods its cycle places.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from advisor.render._common import (
    NodeView,
    as_int,
    as_list,
    as_map,
    as_str,
    node_views,
    profile_of,
)
from advisor.render._style import CSS, MODE_PALETTES, MODE_TAGS
from advisor.render.html import card_row, escape, format_mib
from advisor.render.plan_data import kubectl_script, unresolved_causes
from advisor.render.plan_text import (
    caps_line,
    cost_text,
    held_back_lines,
    no_plan_text,
    stop_line,
)
from advisor.render.report_findings import (
    NO_SCALE_DOWN,
    NO_SCALE_UP,
    SCALE_DOWN_INTRO,
    SCALE_UP_INTRO,
)
from advisor.render.report_html_findings import (
    held_html,
    not_triggered_html,
    scale_down_html,
    scale_up_html,
)

PLAN_CSS = """
.ba { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 18px; }
.ba h3 { margin-top: 4px; }
.ba .node-name { font-weight: 600; margin: 8px 0 2px; }
.ba .card { grid-template-columns: 64px minmax(0, 1fr) 132px; }
.ba .card-stats { font-size: 11.5px; }
.moves { margin: 0 0 10px; padding-left: 18px; }
pre.cmds { background: #0f172a; color: #e2e8f0; padding: 12px 14px; border-radius: 8px;
           overflow-x: auto; font-size: 12.5px; line-height: 1.5; }
.badge.plan { background: #15803d; }
.badge.evict { background: #b45309; }
.badge.ideal { background: #334155; }
"""


def _where(placement: Mapping[str, Any]) -> str:
    cards = ", ".join(str(as_int(c)) for c in as_list(placement.get("cards")))
    return f"{as_str(placement.get('node'), '?')} [{cards}]"


def _header(data: Mapping[str, Any], title: str) -> str:
    s, ideal = as_map(data.get("summary")), as_map(data.get("ideal"))
    policy = as_map(data.get("policy"))
    share = float(s.get("rescued_share") or 0)
    badges = [
        f'<span class="badge total"><b>{as_int(s.get("pending"))}</b>Pending</span>',
        f'<span class="badge plan"><b>{as_int(s.get("plans"))}</b>plans</span>',
        f'<span class="badge plan"><b>{as_int(s.get("rescued_pods"))}</b>pods rescued</span>',
        f'<span class="badge plan"><b>{escape(s.get("rescued_gpus"))}</b>GPUs ({share:.1%})</span>',
        f'<span class="badge evict"><b>{as_int(s.get("evictions"))}</b>evictions</span>',
        f'<span class="badge ideal"><b>{float(ideal.get("repack_share") or 0):.1%}</b>'
        "ideal repack</span>",
    ]
    per_gpu = s.get("evictions_per_gpu")
    profile = profile_of(data)
    meta = (
        (f"Scheduler: {escape(profile)} · " if profile else "")
        + f"Policy: node {escape(as_str(policy.get('node'), 'binpack'))}, card "
        f"{escape(as_str(policy.get('card'), 'binpack'))} · "
        f"{escape(s.get('pending_gpus'))} GPUs Pending"
        + (f" · {escape(per_gpu)} evictions per rescued GPU" if per_gpu is not None else "")
        + f" · ideal: {escape(as_str(ideal.get('method')))} places "
        f"{escape(ideal.get('repack_gpus'))} "
        f"GPUs; free memory bounds it at {escape(ideal.get('upper_bound_gpus'))}"
        + (f" · disruption cost {escape(cost_text(s.get('cost')))}" if "cost" in s else "")
        + (
            f" · {as_int(s.get('simulations')):,} plans simulated, "
            f"{as_int(s.get('work')):,} placements of work"
            if "work" in s
            else ""
        )
    )
    notes = "".join(
        f'<p class="meta">{escape(line)}</p>' for line in (caps_line(data), stop_line(data)) if line
    )
    return (
        f'<header class="panel"><h1>{escape(title)}</h1>'
        '<p class="headline">Each plan is a set of pods to evict; it was simulated through the '
        "scheduler and every pod it rescues or evicts lands. Apply them in order.</p>"
        f'<div class="badges">{"".join(badges)}</div><p class="meta">{meta}</p>{notes}</header>'
    )


def _legend() -> str:
    def tag(mode: int, text: str) -> str:
        colour = MODE_PALETTES[mode][0]
        badge = f'<span class="tag" style="background:{colour}">{MODE_TAGS[mode]}</span>'
        return f"<span>{badge}{text}</span>"

    hatch = f"repeating-linear-gradient(135deg,{MODE_PALETTES[0][0]} 0 6px,#fff 6px 9px)"
    swatches = [
        tag(0, "memory isolation"),
        tag(1, "memory+core isolation"),
        tag(2, "no vGPU: an empty bar"),
        '<span><i class="sw" style="background:#f8fafc;border:1px solid #cbd5e1"></i>'
        "free memory</span>",
        f'<span><i class="sw" style="background:{hatch};box-shadow:inset 0 0 0 2px '
        f'{MODE_PALETTES[0][0]}"></i>a Pending pod the plan rescues</span>',
    ]
    return (
        '<section class="panel"><h3>Cards: one bar per card, one segment per pod, width by MiB;'
        f' the nodes each plan touches, before and after it</h3><div class="legend">'
        f"{''.join(swatches)}</div></section>"
    )


def _nodes(nodes: list[NodeView]) -> str:
    parts = []
    for node in nodes:
        rows = "".join(card_row(card, show_model=False) for card in node.cards)
        free = sum(card.free_mib for card in node.cards if card.healthy)
        parts.append(
            f'<div class="node-name mono">{escape(node.name)} '
            f'<span class="stat">· {format_mib(free)} free</span></div>{rows}'
        )
    return "".join(parts)


def plan_panel(number: int, plan: Mapping[str, Any], pair: Mapping[str, Any] | None) -> str:
    """One plan: what it rescues and evicts, with before/after card pictures when given."""
    placements = as_map(plan.get("placements"))
    origins = as_map(plan.get("evicted_from"))
    items = [
        f'<li>rescues <span class="mono">{escape(n)}</span> → '
        f"{escape(_where(as_map(placements.get(n))))}</li>"
        for n in as_list(plan.get("rescues"))
    ]
    why = {
        as_str(c.get("pod"), "?"): f" · cost {cost_text(c.get('cost'))}: {as_str(c.get('why'))}"
        for c in (as_map(raw) for raw in as_list(plan.get("costs")))
    }
    items += [
        f'<li>evicts <span class="mono">{escape(n)}</span> from '
        f"{escape(_where(as_map(origins.get(n))))}, it comes back on "
        f"{escape(_where(as_map(placements.get(n))))}{escape(why.get(as_str(n), ''))}</li>"
        for n in as_list(plan.get("evict"))
    ]
    pictures = ""
    if pair is not None:
        before = _nodes(node_views(as_map(pair.get("before"))))
        after = _nodes(node_views(as_map(pair.get("after"))))
        pictures = (
            f'<div class="ba"><div><h3>Before</h3>{before}</div>'
            f"<div><h3>After</h3>{after}</div></div>"
        )
    return (
        f'<section class="panel" id="plan-{number}"><h2>Plan {number}: '
        f"{as_int(plan.get('evictions'))} eviction(s), "
        f"{escape(plan.get('rescued_gpus'))} GPUs rescued"
        + (f", cost {escape(cost_text(plan.get('cost')))}" if "cost" in plan else "")
        + f'</h2><ul class="moves">{"".join(items)}</ul>{pictures}</section>'
    )


def caps_panel(data: Mapping[str, Any]) -> str:
    """The plans above a cap, each with the flag to raise; with no plan at all, why (empty
    when there are plans and none above a cap)."""
    held = "".join(f"<li>{escape(line)}</li>" for line in held_back_lines(data))
    held_list = f'<ul class="moves">{held}</ul>' if held else ""
    if as_list(data.get("plans")):
        if not held:
            return ""
        return (
            f'<section class="panel"><h3>Above the caps, after these plans</h3>{held_list}'
            "</section>"
        )
    return (
        f'<section class="panel"><p class="none">{escape(no_plan_text(data))}</p>{held_list}'
        "</section>"
    )


def unresolved_panel(data: Mapping[str, Any]) -> str:
    """The pods no plan rescues, with their causes (empty when there are none)."""
    rows = [
        f'<tr><td class="pod mono">{escape(pod)}</td><td>{escape(cause)}</td></tr>'
        for pod, cause in unresolved_causes(data)
    ]
    if not rows:
        return ""
    return (
        '<section class="panel"><h3>Still Pending</h3><table><thead><tr><th>Pod</th>'
        f"<th>Cause</th></tr></thead><tbody>{''.join(rows)}</tbody></table></section>"
    )


def scale_up_panel(data: Mapping[str, Any]) -> str:
    """The node shapes to add for the pods no plan rescues, and the pods no new node would
    help (empty when neither)."""
    table, helpless = scale_up_html(data), not_triggered_html(data)
    if not table and not helpless:
        return ""
    intro = SCALE_UP_INTRO if table else NO_SCALE_UP
    return (
        '<section class="panel"><h3>Nodes to add</h3>'
        f'<p class="meta">{escape(intro)}</p>{table}{helpless}</section>'
    )


def scale_down_panel(data: Mapping[str, Any]) -> str:
    """The nodes that could go, with where their pods would move, and the idle nodes kept
    with why (empty when neither)."""
    table, held = scale_down_html(data), held_html(data)
    if not table and not held:
        return ""
    intro = (
        f'<p class="meta">{escape(SCALE_DOWN_INTRO)}</p>{table}'
        if table
        else f'<p class="none">{escape(NO_SCALE_DOWN)}</p>'
    )
    return f'<section class="panel"><h3>Nodes that could go</h3>{intro}{held}</section>'


def render_plan_html(
    data: Mapping[str, Any],
    views: Sequence[Mapping[str, Any]],
    title: str = "xgpu-advisor rebalancing plans",
) -> str:
    plans = [as_map(p) for p in as_list(data.get("plans"))]
    sections = [
        plan_panel(i, plan, views[i - 1] if i <= len(views) else None)
        for i, plan in enumerate(plans, 1)
    ]
    if len(views) < len(plans):
        sections.append(
            f'<section class="panel"><p class="none">Pictures for the first {len(views)} plans '
            "only.</p></section>"
        )
    commands = ""
    if plans:
        commands = (
            '<section class="panel"><h3>Commands</h3>'
            f'<pre class="cmds">{escape(kubectl_script(data))}</pre></section>'
        )
    empty = caps_panel(data)
    schema = as_str(data.get("schema"), "xgpu-advisor/plan/v1")
    body = "".join(
        [
            _header(data, title),
            _legend() if views else "",
            empty,
            *sections,
            unresolved_panel(data),
            scale_up_panel(data),
            scale_down_panel(data),
            commands,
            f"<footer>Generated by xgpu-advisor · {escape(schema)}</footer>",
        ]
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}{PLAN_CSS}</style></head>"
        f"<body><main>{body}</main></body></html>\n"
    )
