"""`xgpu-advisor diagnose --format html`: one self-contained page (inline CSS, no scripts).

Every value from the input passes through `html.escape`; the only markup is ours.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from advisor.core.diagnosis import shown_causes
from advisor.render.common.advice import advice_key, cause_label
from advisor.render.common.cards import NodeView, node_views
from advisor.render.common.cards_html import card_legend, card_row
from advisor.render.common.html import escape, format_mib, page, with_code
from advisor.render.common.mig import mig_profiles_html, repartition_html, repartitions
from advisor.render.common.parts import profile_of
from advisor.render.common.style import CAUSE_COLOURS
from advisor.render.diagnose.advice import grouped_advice
from advisor.render.diagnose.data import (
    NO_TEMPLATE,
    any_age,
    explanation,
    format_cards,
    headline,
    more_replicas,
    oldest_first,
    pod_request_text,
    pods_for_node,
    policy_text,
    waited,
)
from advisor.render.diagnose.read import read_diagnosis
from advisor.render.plan.room import ROOM_LEAD, room_lines
from advisor.schemas import AutoscalerJson, DiagnosisJson, PodDiagnosisJson
from advisor.words import plural


def _cause_tag(pod: PodDiagnosisJson) -> str:
    colour = CAUSE_COLOURS.get(advice_key(pod)) or CAUSE_COLOURS.get(pod["cause"], "#334155")
    return f'<span class="tag" style="background:{colour}">{escape(cause_label(pod))}</span>'


def _header(diagnosis: DiagnosisJson, view_nodes: list[NodeView], title: str) -> str:
    counts = diagnosis["summary"]
    badges = [f'<span class="badge total"><b>{counts["pending"]}</b>Pending</span>']
    for cause in shown_causes(counts):
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
        + f"Policy: {escape(policy_text(diagnosis))} · {plural(len(view_nodes), 'node')} · "
        f"{plural(len(cards), 'card')} · {format_mib(allotted)} of {format_mib(total)} "
        f"allotted after this cycle{share}"
    )
    return (
        f'<header class="panel"><h1>{escape(title)}</h1>'
        f'<p class="headline">{escape(headline(diagnosis))}</p>'
        f'<div class="badges">{"".join(badges)}</div><p class="meta">{meta}</p></header>'
    )


def advice_panel(diagnosis: DiagnosisJson) -> str:
    """The "What to do" panel, advice grouped with its pods (empty when no pod is Pending)."""
    items = []
    for advice, pods in grouped_advice(diagnosis):
        colour = CAUSE_COLOURS.get(advice.key, "#334155")
        who = ", ".join(escape(name) for name in pods)
        items.append(
            f'<div style="border-color:{colour}"><strong>{escape(advice.title)}</strong> '
            f'<span class="who mono">{who}</span><p>{with_code(advice.text)}</p></div>'
        )
    if not items:
        return ""
    return (
        '<section class="panel"><h3>What to do</h3>'
        f'<div class="advice">{"".join(items)}</div></section>'
    )


def _node_pod(pod: PodDiagnosisJson, node: str) -> str:
    placement = pod["placement"]
    if placement is not None and placement["node"] == node:
        reasons = [f"placed by this cycle on {format_cards(placement['cards'])}"]
    else:
        reasons = pod["nodes"].get(node, [])
    items = "".join(f"<li>{escape(reason)}</li>" for reason in reasons)
    return (
        f'<div class="pp"><div class="pod mono">{escape(pod["pod"])}</div>'
        f"{_cause_tag(pod)} "
        f'<span class="req">{escape(pod_request_text(pod))}</span>'
        f"<ul>{items}</ul></div>"
    )


def node_panel(diagnosis: DiagnosisJson, node: NodeView) -> str:
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


def _nodes_detail(pod: PodDiagnosisJson) -> str:
    nodes, omitted = pod["nodes"], pod["nodes_omitted"]
    if not nodes and not omitted:
        return ""
    more = f", {omitted} more not listed" if omitted else ""
    items = "".join(
        f'<li><span class="mono">{escape(name)}</span>: '
        + "; ".join(escape(reason) for reason in nodes[name])
        + "</li>"
        for name in sorted(nodes)
    )
    return (
        f"<details><summary>{len(nodes)} node{'' if len(nodes) == 1 else 's'}{more}</summary>"
        f"<ul>{items}</ul></details>"
    )


def pending_table(diagnosis: DiagnosisJson) -> str:
    """The table of Pending pods, the oldest first: how long each has waited (where known),
    request, cause, and where each fits or why not."""
    aged = any_age(diagnosis)
    rows = []
    for pod in oldest_first(diagnosis):
        age = f'<td class="num">{escape(waited(pod))}</td>' if aged else ""
        rows.append(
            f'<tr><td class="pod mono">{escape(pod["pod"])}</td>{age}'
            f'<td class="num">{pod["priority"]}</td>'
            f"<td>{escape(pod_request_text(pod))}</td>"
            f"<td>{_cause_tag(pod)}</td>"
            f"<td>{escape(explanation(pod))}{_nodes_detail(pod)}</td></tr>"
        )
    if not rows:
        return '<section class="panel"><h3>Pending pods</h3><p class="none">None.</p></section>'
    titles = ("Pod", *(("Waiting",) if aged else ()), "Priority", "Request", "Cause")
    head = "".join(f"<th>{h}</th>" for h in (*titles, "Where it fits / why not"))
    return (
        f'<section class="panel"><h3>Pending pods</h3><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></section>"
    )


# An autoscaler's status as a tag: blocked ones take their cause's colour (as a Pending
# pod's tag does), so a fragmentation-blocked HPA reads like a fragmentation-Pending pod.
_STATUS_COLOURS = {"reachable": CAUSE_COLOURS["schedulable"], "unknown-template": "#64748b"}


def autoscalers_panel(diagnosis: DiagnosisJson) -> str:
    """The "Autoscalers" table (docs/design.md §12.2): how many of the replicas each HPA may
    still add place now, why the next stays Pending, and under a blocked one what would make
    room for its replicas (empty when none is listed)."""
    rows = "".join(_autoscaler_row(a) for a in diagnosis.get("autoscalers", []))
    if not rows:
        return ""
    head = (  # _room's colspan counts these
        '<th>Autoscaler</th><th>Target</th><th class="num">Replicas</th>'
        '<th class="num">Max</th><th class="num">More that place</th><th>Status</th>'
        "<th>Why the next stays Pending</th>"
    )
    return (
        '<section class="panel" id="autoscalers"><h3>Autoscalers</h3>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
        '<p class="none">Each replica up to max is shaped like the target\'s newest running '
        "pod and tried in this cycle, one by one, after the Pending pods queued before it."
        "</p></section>"
    )


def _autoscaler_row(a: AutoscalerJson) -> str:
    placeable, blocked, more = a["placeable"], a["blocked"], more_replicas(a)
    status = a["status"] if blocked is None else blocked["cause"]
    colour = CAUSE_COLOURS.get(status) or _STATUS_COLOURS.get(status, "#334155")
    if placeable is None:
        reach, why = "?", NO_TEMPLATE
    else:
        reach = f"{placeable} of {more}" if more else "none to add"
        why = (blocked["node_summary"] if blocked is not None else None) or ""
    room = _room(a)
    led = ' class="led"' if room else ""
    return (
        f'<tr{led}><td class="pod mono">{escape(a["name"])}</td>'
        f'<td class="name mono">{escape(a["target"])}</td>'
        f'<td class="num">{a["replicas"]}</td><td class="num">{a["max_replicas"]}</td>'
        f'<td class="num">{reach}</td>'
        f'<td><span class="tag" style="background:{colour}">{escape(status)}</span></td>'
        f"<td>{escape(why)}</td></tr>{room}"
    )


def _room(a: AutoscalerJson) -> str:
    """A row under a blocked autoscaler's: what would make room for its replicas, in the
    Markdown's sentences (`room_lines`); "" where it has no remedy."""
    room = a.get("remedy")
    if room is None:
        return ""
    items = "".join(f"<li>{escape(line)}</li>" for line in room_lines(room))
    return f'<tr class="room"><td colspan="7">{escape(ROOM_LEAD)}<ul>{items}</ul></td></tr>'


def render_html(
    diagnosis: Mapping[str, Any], view: Mapping[str, Any], title: str = "xgpu-advisor diagnosis"
) -> str:
    """The diagnosis as a self-contained HTML page: counts, cards per node, Pending pods."""
    data, nodes = read_diagnosis(diagnosis), node_views(view)
    body = "".join(
        [
            _header(data, nodes, title),
            advice_panel(data),
            repartition_html(repartitions(data["pods"])),
            mig_profiles_html(data.get("mig_profiles", [])),
            card_legend() if nodes else "",
            *(node_panel(data, node) for node in nodes),
            pending_table(data),
            autoscalers_panel(data),
        ]
    )
    return page(title, ("base",), body, data["schema"])
