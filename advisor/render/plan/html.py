"""`xgpu-advisor plan --format html`: one self-contained page with before/after card pictures.

The card bars are the diagnosis page's (`render.common.cards_html`); in "after", the pods a
plan rescued are drawn hatched, as the diagnosis draws the pods its cycle places.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from advisor.render.common.cards import NodeView, node_views
from advisor.render.common.cards_html import card_row
from advisor.render.common.html import escape, format_mib, page
from advisor.render.common.mig import repartition_html, repartitions
from advisor.render.common.parts import profile_of
from advisor.render.common.style import MODE_PALETTES, MODE_TAGS
from advisor.render.common.values import as_map
from advisor.render.plan.data import unresolved_causes, unresolved_reasons
from advisor.render.plan.read import read_plan
from advisor.render.plan.scaling import (
    NO_SCALE_DOWN,
    NO_SCALE_UP,
    SCALE_DOWN_INTRO,
    SCALE_UP_INTRO,
)
from advisor.render.plan.scaling_html import (
    held_html,
    not_triggered_html,
    relief_html,
    scale_down_html,
    scale_up_html,
)
from advisor.render.plan.script import kubectl_script
from advisor.render.plan.text import (
    caps_line,
    cost_text,
    held_back_lines,
    no_plan_text,
    stop_line,
    unit_text,
)
from advisor.schemas import PlacementJson, PlanEntryJson, PlanJson
from advisor.words import noun_for, plural


def _where(placement: PlacementJson | None) -> str:
    if placement is None:
        return "? []"
    return f"{placement['node']} [{', '.join(map(str, placement['cards']))}]"


def _header(data: PlanJson, title: str) -> str:
    s, ideal, policy = data["summary"], data["ideal"], data["policy"]
    share = s["rescued_share"] or 0.0
    badges = [
        f'<span class="badge total"><b>{s["pending"]}</b>Pending</span>',
        f'<span class="badge plan"><b>{s["plans"]}</b>{noun_for(s["plans"], "plan")}</span>',
        f'<span class="badge plan"><b>{s["rescued_pods"]}</b>'
        f"{noun_for(s['rescued_pods'], 'pod')} rescued</span>",
        f'<span class="badge plan"><b>{escape(s["rescued_gpus"])}</b>GPUs ({share:.1%})</span>',
        f'<span class="badge evict"><b>{s["evictions"]}</b>'
        f"{noun_for(s['evictions'], 'eviction')}</span>",
        f'<span class="badge ideal"><b>{ideal["repack_share"] or 0.0:.1%}</b>ideal</span>',
    ]
    per_gpu = s["evictions_per_gpu"]
    profile = profile_of(data)
    meta = (
        (f"Scheduler: {escape(profile)} · " if profile else "")
        + f"Policy: node {escape(policy['node'])}, card {escape(policy['card'])} · "
        f"{escape(s['pending_gpus'])} GPUs Pending"
        + (f" · {escape(per_gpu)} evictions per rescued GPU" if per_gpu is not None else "")
        + f" · ideal ({escape(ideal['method'])}): {escape(ideal['repack_gpus'])} "
        f"GPUs; memory bounds any at {escape(ideal['upper_bound_gpus'])}"
        + f" · {escape(unit_text(data))}"
        + (f" · disruption cost {escape(cost_text(s['cost']))}" if "cost" in s else "")
        + (
            f" · {s.get('simulations', 0):,} {noun_for(s.get('simulations', 0), 'plan')} "
            f"simulated, {s['work']:,} {noun_for(s['work'], 'placement')} of work"
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


def plan_panel(number: int, plan: PlanEntryJson, pair: Mapping[str, Any] | None) -> str:
    """One plan: what it rescues and evicts, with before/after card pictures when given."""
    placements, origins = plan["placements"], plan["evicted_from"]
    items = [
        f'<li>rescues <span class="mono">{escape(n)}</span> → '
        f"{escape(_where(placements.get(n)))}</li>"
        for n in plan["rescues"]
    ]
    why = {c["pod"]: f" · cost {cost_text(c['cost'])}: {c['why']}" for c in plan.get("costs", [])}
    items += [
        f'<li>evicts <span class="mono">{escape(n)}</span> from '
        f"{escape(_where(origins.get(n)))}, it comes back on "
        f"{escape(_where(placements.get(n)))}{escape(why.get(n, ''))}</li>"
        for n in plan["evict"]
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
        f"{plural(plan['evictions'], 'eviction')}, "
        f"{escape(plan['rescued_gpus'])} GPUs rescued"
        + (f", cost {escape(cost_text(plan['cost']))}" if "cost" in plan else "")
        + f'</h2><ul class="moves">{"".join(items)}</ul>{pictures}</section>'
    )


def caps_panel(data: PlanJson) -> str:
    """The plans above a cap, each with the flag to raise; with no plan at all, why (empty
    when there are plans and none above a cap)."""
    held = "".join(f"<li>{escape(line)}</li>" for line in held_back_lines(data))
    held_list = f'<ul class="moves">{held}</ul>' if held else ""
    if data["plans"]:
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


def unresolved_panel(data: PlanJson) -> str:
    """The pods no plan rescues, with their causes (empty when there are none)."""
    rows = [
        f'<tr><td class="pod mono">{escape(pod)}</td><td>{escape(cause)}</td></tr>'
        for pod, cause in unresolved_causes(data)
    ]
    if not rows:
        return ""
    reasons = "".join(f"<p>{escape(r)}</p>" for r in unresolved_reasons(data))
    return (
        '<section class="panel"><h3>Still Pending</h3><table><thead><tr><th>Pod</th>'
        f"<th>Cause</th></tr></thead><tbody>{''.join(rows)}</tbody></table>{reasons}</section>"
    )


def scale_up_panel(data: PlanJson) -> str:
    """The node shapes to add for the pods no plan rescues, and the pods no new node would
    help (empty when neither)."""
    table, helpless, freed = scale_up_html(data), not_triggered_html(data), relief_html(data)
    if not table and not helpless and not freed:
        return ""
    intro = SCALE_UP_INTRO if table else NO_SCALE_UP
    return (
        '<section class="panel"><h3>Nodes to add</h3>'
        f'<p class="meta">{escape(intro)}</p>{table}{helpless}{freed}</section>'
    )


def scale_down_panel(data: PlanJson) -> str:
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
    plan = read_plan(data)
    plans = plan["plans"]
    sections = [
        plan_panel(i, entry, views[i - 1] if i <= len(views) else None)
        for i, entry in enumerate(plans, 1)
    ]
    if len(views) < len(plans):
        sections.append(
            f'<section class="panel"><p class="none">Pictures for the first '
            f"{plural(len(views), 'plan')} only.</p></section>"
        )
    commands = ""
    if plans:
        commands = (
            '<section class="panel"><h3>Commands</h3>'
            f'<pre class="cmds">{escape(kubectl_script(data))}</pre></section>'
        )
    body = "".join(
        [
            _header(plan, title),
            _legend() if views else "",
            caps_panel(plan),
            *sections,
            unresolved_panel(plan),
            repartition_html(repartitions(plan["unresolved"])),
            scale_up_panel(plan),
            scale_down_panel(plan),
            commands,
        ]
    )
    return page(title, ("base", "plan"), body, plan["schema"])
