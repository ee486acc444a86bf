"""`xgpu-advisor diagnose --format html`: one self-contained page (inline CSS, no scripts).

Every value from the input passes through `html.escape`; the only markup is ours.
"""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Mapping
from typing import Any

from advisor.core.diagnose import CAUSES
from advisor.render._common import (
    MODE_NAMES,
    CardView,
    NodeView,
    advice_key,
    as_int,
    as_list,
    as_map,
    as_str,
    cause_label,
    explanation,
    format_cards,
    grouped_advice,
    headline,
    mode_name,
    node_views,
    pod_request_text,
    pods_for_node,
    pods_of,
    policy_text,
    profile_of,
    summary_counts,
)
from advisor.render._style import CAUSE_COLOURS, CSS, MODE_PALETTES, MODE_TAGS, pod_colour

# Below these shares of a bar a segment's text cannot fit; the tooltip still has it.
_NARROW_SEGMENT = 0.07
_NARROW_FREE = 0.09


def escape(text: object) -> str:
    """`text` as HTML-safe text, quotes included (safe in attribute values too)."""
    return html.escape(str(text), quote=True)


def format_mib(value: int) -> str:
    """Thousands grouped by a narrow no-break space: 81 920 MiB."""
    return f"{value:,}".replace(",", "\u202f") + "\u00a0MiB"


def _with_code(text: str) -> str:
    """Escaped text with `backticked` spans set as <code>."""
    parts = text.split("`")
    return "".join(f"<code>{escape(p)}</code>" if i % 2 else escape(p) for i, p in enumerate(parts))


def _cause_tag(pod: Mapping[str, Any]) -> str:
    colour = CAUSE_COLOURS.get(advice_key(pod), "#334155")
    return f'<span class="tag" style="background:{colour}">{escape(cause_label(pod))}</span>'


def _header(diagnosis: Mapping[str, Any], view_nodes: list[NodeView], title: str) -> str:
    counts = summary_counts(diagnosis)
    badges = [f'<span class="badge total"><b>{counts["pending"]}</b>Pending</span>']
    for cause in CAUSES:
        zero = " zero" if counts[cause] == 0 else ""
        badges.append(
            f'<span class="badge{zero}" style="background:{CAUSE_COLOURS[cause]}">'
            f"<b>{counts[cause]}</b>{escape(cause)}</span>"
        )
    cards = [card for node in view_nodes for card in node.cards]
    total = sum(card.memory_mib for card in cards)
    allotted = sum(min(card.allotted_mib, card.memory_mib) for card in cards)
    share = f" ({allotted * 100 // total} %)" if total else ""
    profile = profile_of(diagnosis)
    meta = (
        (f"Scheduler: {escape(profile)} · " if profile else "")
        + f"Policy: {escape(policy_text(diagnosis))} · {len(view_nodes)} nodes · "
        f"{len(cards)} cards · {format_mib(allotted)} of {format_mib(total)} "
        f"allotted after this cycle{share}"
    )
    return (
        f'<header class="panel"><h1>{escape(title)}</h1>'
        f'<p class="headline">{escape(headline(diagnosis))}</p>'
        f'<div class="badges">{"".join(badges)}</div><p class="meta">{meta}</p></header>'
    )


def advice_panel(diagnosis: Mapping[str, Any]) -> str:
    """The "What to do" panel, advice grouped with its pods (empty when no pod is Pending)."""
    items = []
    for advice, pods in grouped_advice(diagnosis):
        colour = CAUSE_COLOURS.get(advice.key, "#334155")
        who = ", ".join(escape(name) for name in pods)
        items.append(
            f'<div style="border-color:{colour}"><strong>{escape(advice.title)}</strong> '
            f'<span class="who mono">{who}</span><p>{_with_code(advice.text)}</p></div>'
        )
    if not items:
        return ""
    return (
        '<section class="panel"><h3>What to do</h3>'
        f'<div class="advice">{"".join(items)}</div></section>'
    )


def card_legend() -> str:
    """The key to the card bars: isolation modes, free memory, placed pods, unhealthy cards."""

    def mode_tag(mode: int) -> str:
        colour = MODE_PALETTES[mode][0]
        return f'<span class="tag" style="background:{colour}">{MODE_TAGS[mode]}</span>'

    swatches = [f"<span>{mode_tag(mode)}{escape(MODE_NAMES[mode])}</span>" for mode in (0, 1)]
    hatch = f"repeating-linear-gradient(135deg,{MODE_PALETTES[0][0]} 0 6px,#fff 6px 9px)"
    swatches += [
        f"<span>{mode_tag(2)}no vGPU yet: an empty bar</span>",
        '<span><i class="sw" style="background:#f8fafc;border:1px solid #cbd5e1"></i>'
        "free memory</span>",
        f'<span><i class="sw" style="background:{hatch};box-shadow:inset 0 0 0 2px '
        f'{MODE_PALETTES[0][0]}"></i>Pending pod placed by this cycle</span>',
        '<span><i class="sw" style="border:2px solid #dc2626;background:repeating-linear-gradient'
        '(45deg,#fee2e2 0 6px,#fff 6px 12px)"></i>unhealthy card</span>',
    ]
    return (
        '<section class="panel"><h3>Cards: one bar per card, one segment per pod, width by MiB'
        f'</h3><div class="legend">{"".join(swatches)}</div></section>'
    )


def _segment(card: CardView, pod: str, mib: int, core: int, pending: bool, scale: int) -> str:
    share = mib / scale
    classes = (
        "seg" + (" pending" if pending else "") + (" narrow" if share < _NARROW_SEGMENT else "")
    )
    tip = f"{pod}: {mib} MiB" + (f", {core} % core" if core else "")
    if pending:
        tip += " (Pending, placed by this cycle)"
    core_text = f" · {core}\u00a0%" if core else ""
    return (
        f'<div class="{classes}" style="width:{share * 100:.3f}%;--c:{pod_colour(pod, card.mode)}"'
        f' title="{escape(tip)}"><span class="name">{escape(pod)}</span>'
        f'<span class="mib">{format_mib(mib)}{core_text}</span></div>'
    )


def card_row(card: CardView, show_model: bool) -> str:
    """One card as a bar, a segment per pod and one for free memory, with its figures."""
    scale = max(card.memory_mib, card.allotted_mib, 1)
    segments = [
        _segment(card, a.pod, a.memory_mib, a.core_percent, a.pending, scale)
        for a in card.allotments
        if a.memory_mib > 0
    ]
    free = card.free_mib
    if free or not segments:
        narrow = " narrow" if free / scale < _NARROW_FREE else ""
        what = "unhealthy" if not card.healthy else "free"
        segments.append(
            f'<div class="free{narrow}" title="{escape(f"{free} MiB free")}">'
            f'<span class="mib">{what}</span><span class="mib">{format_mib(free)}</span></div>'
        )
    mode_colour = MODE_PALETTES.get(card.mode, MODE_PALETTES[2])[0]
    tag = (
        f'<span class="tag" style="background:{mode_colour}" '
        f'title="{escape(mode_name(card.mode))}">'
        f"{escape(MODE_TAGS.get(card.mode, mode_name(card.mode)))}</span>"
    )
    model = f" · {escape(card.model)}" if show_model and card.model else ""
    core = f" · core {card.core_allotted_percent}\u00a0%" if card.mode == 1 else ""
    vgpus = f"{card.vgpus} vGPU" + ("" if card.vgpus == 1 else "s")
    sick = "" if card.healthy else '<span class="sick-text">unhealthy</span> · '
    row_class = "card" + ("" if card.healthy else " unhealthy")
    used = f"{card.allotted_mib:,}".replace(",", "\u202f")
    return (
        f'<div class="{row_class}" title="{escape(card.model)}"><div class="card-label">'
        f"<strong>GPU {card.index}</strong><br>{tag}</div>"
        f'<div class="bar">{"".join(segments)}</div>'
        f'<div class="card-stats">{used} / {format_mib(card.memory_mib)}'
        f'<div class="sub">{sick}{vgpus}{core}{model}</div></div></div>'
    )


def _node_pod(pod: Mapping[str, Any], node: str) -> str:
    placement = as_map(pod.get("placement"))
    if placement.get("node") == node:
        reasons = [f"placed by this cycle on {format_cards(as_list(placement.get('cards')))}"]
    else:
        reasons = [as_str(r) for r in as_list(as_map(pod.get("nodes")).get(node))]
    items = "".join(f"<li>{escape(reason)}</li>" for reason in reasons)
    return (
        f'<div class="pp"><div class="pod mono">{escape(as_str(pod.get("pod"), "?"))}</div>'
        f"{_cause_tag(pod)} "
        f'<span class="req">{escape(pod_request_text(pod))}</span>'
        f"<ul>{items}</ul></div>"
    )


def node_panel(diagnosis: Mapping[str, Any], node: NodeView) -> str:
    """One node's panel: a bar per card and the Pending pods that involve the node."""
    total = sum(card.memory_mib for card in node.cards)
    free = sum(card.free_mib for card in node.cards if card.healthy)
    models = Counter(card.model or "unknown model" for card in node.cards)
    shape = ", ".join(f"{n} × {model}" for model, n in sorted(models.items())) or "no cards"
    sick = sum(1 for card in node.cards if not card.healthy)
    warn = f'<span class="warn">{sick} unhealthy</span>' if sick else ""
    fit = "".join(f'<span class="stat">{escape(note)}</span>' for note in node.fit.notes())
    mixed = len(models) > 1
    rows = "".join(card_row(card, show_model=mixed) for card in node.cards)
    pods = [_node_pod(pod, node.name) for pod in pods_for_node(diagnosis, node.name)]
    pods_html = "".join(pods) or '<p class="none">No Pending pod involves this node.</p>'
    return (
        f'<section class="panel node" id="node-{escape(node.name)}"><div class="node-head">'
        f'<h2 class="mono">{escape(node.name)}</h2><span class="stat">{escape(shape)}</span>'
        f'<span class="stat">{format_mib(free)} free on healthy cards of {format_mib(total)}'
        f"</span>{fit}{warn}</div>"
        f'<div class="node-body"><div class="cards">{rows}</div>'
        f'<aside class="node-pods"><h3>Pending pods here</h3>{pods_html}</aside></div></section>'
    )


def _nodes_detail(pod: Mapping[str, Any]) -> str:
    nodes = as_map(pod.get("nodes"))
    omitted = as_int(pod.get("nodes_omitted"))
    if not nodes and not omitted:
        return ""
    more = f", {omitted} more not listed" if omitted else ""
    items = "".join(
        f'<li><span class="mono">{escape(name)}</span>: '
        + "; ".join(escape(as_str(reason)) for reason in as_list(nodes[name]))
        + "</li>"
        for name in sorted(nodes)
    )
    return (
        f"<details><summary>{len(nodes)} node{'' if len(nodes) == 1 else 's'}{more}</summary>"
        f"<ul>{items}</ul></details>"
    )


def pending_table(diagnosis: Mapping[str, Any]) -> str:
    """The table of Pending pods: request, cause, and where each fits or why not."""
    rows = []
    for pod in pods_of(diagnosis):
        rows.append(
            f'<tr><td class="pod mono">{escape(as_str(pod.get("pod"), "?"))}</td>'
            f'<td class="num">{as_int(pod.get("priority"))}</td>'
            f"<td>{escape(pod_request_text(pod))}</td>"
            f"<td>{_cause_tag(pod)}</td>"
            f"<td>{escape(explanation(pod))}{_nodes_detail(pod)}</td></tr>"
        )
    if not rows:
        return '<section class="panel"><h3>Pending pods</h3><p class="none">None.</p></section>'
    head = "".join(
        f"<th>{h}</th>" for h in ("Pod", "Priority", "Request", "Cause", "Where it fits / why not")
    )
    return (
        f'<section class="panel"><h3>Pending pods</h3><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></section>"
    )


def render_html(
    diagnosis: Mapping[str, Any], view: Mapping[str, Any], title: str = "xgpu-advisor diagnosis"
) -> str:
    """The diagnosis as a self-contained HTML page: counts, cards per node, Pending pods."""
    nodes = node_views(view)
    schema = as_str(diagnosis.get("schema"), "xgpu-advisor/diagnosis/v1")
    body = "".join(
        [
            _header(diagnosis, nodes, title),
            advice_panel(diagnosis),
            card_legend() if nodes else "",
            *(node_panel(diagnosis, node) for node in nodes),
            pending_table(diagnosis),
            f"<footer>Generated by xgpu-advisor · {escape(schema)}</footer>",
        ]
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head>"
        f"<body><main>{body}</main></body></html>\n"
    )
