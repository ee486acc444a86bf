"""`xgpu-advisor diagnose --format markdown`: a report for terminals and tickets."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.render.common.advice import cause_label
from advisor.render.common.cards import mode_name, node_views
from advisor.render.common.markdown import escape_cell, markdown_table
from advisor.render.common.mig import (
    mig_profiles_markdown,
    repartition_markdown,
    repartitions,
)
from advisor.render.diagnose.advice import grouped_advice
from advisor.render.diagnose.data import (
    any_age,
    blocked_text,
    explanation,
    headline,
    judged_by,
    oldest_first,
    placeable_text,
    pod_request_text,
    waited,
)
from advisor.render.diagnose.read import read_diagnosis
from advisor.render.plan.room import ROOM_LEAD, room_lines
from advisor.schemas import AutoscalerJson, DiagnosisJson


def pending_section(diagnosis: DiagnosisJson) -> list[str]:
    """The "Pending pods" section as a table, the oldest first, with how long each has
    waited where that is known (no lines when no pod is Pending)."""
    aged = any_age(diagnosis)
    rows = []
    for pod in oldest_first(diagnosis):
        cells = [
            pod["pod"],
            *([waited(pod)] if aged else []),
            str(pod["priority"]),
            pod_request_text(pod),
            cause_label(pod),
            explanation(pod),
        ]
        rows.append([escape_cell(cell) for cell in cells])
    if not rows:
        return []
    header = [
        "Pod",
        *(["Waiting"] if aged else []),
        "Priority",
        "Request (per card)",
        "Cause",
        "Where it fits / why not",
    ]
    right = {1, 2} if aged else {1}
    return ["## Pending pods", "", *markdown_table(header, rows, right=right), ""]


def advice_section(diagnosis: DiagnosisJson) -> list[str]:
    """The "What to do" section, advice grouped with its pods (no lines when none)."""
    lines = []
    for advice, pods in grouped_advice(diagnosis):
        names = ", ".join(escape_cell(name) for name in pods)
        lines.append(f"- **{advice.title}** ({names}): {advice.text}")
    return ["## What to do", "", *lines, ""] if lines else []


def autoscalers_section(diagnosis: DiagnosisJson) -> list[str]:
    """The "Autoscalers" section, a line each, and under a blocked one what would make room
    for its replicas left Pending (no lines when the cluster lists none)."""
    lines = []
    for a in diagnosis.get("autoscalers", []):
        lines.append(f"- {escape_cell(autoscaler_line(a))}")
        room = a.get("remedy")
        if room is not None:
            lines.append(f"  - {ROOM_LEAD}")
            lines += [f"    - {escape_cell(line)}" for line in room_lines(room)]
    return ["## Autoscalers", "", *lines, ""] if lines else []


def autoscaler_line(a: AutoscalerJson) -> str:
    """'web/hpa (Deployment/web/infer): 3 of 4 more replicas place; the next stays Pending
    (capacity: 0/2 nodes are unavailable: …)'."""
    text = f"{a['name']} ({a['target']}): {placeable_text(a)}"
    if a["placeable"] is None:
        return f"{text} (unknown-template)"
    why = blocked_text(a)
    return text if why is None else f"{text}; the next stays Pending ({why})"


def cards_section(view: Mapping[str, Any]) -> list[str]:
    """The "Cards after this cycle" section, a row per card (no lines when no card)."""
    rows = []
    pending_seen = False
    mig: list[str] = []
    for node in node_views(view):
        for card in node.cards:
            if card.mig is not None:  # its instances, listed below the table
                cells = [node.name, str(card.index), card.model, "MIG", "", "", ""]
                rows.append([*(escape_cell(c) for c in cells), "yes" if card.healthy else "**NO**"])
                held = " · ".join(s.text for s in card.mig) or "no instance"
                mig.append(f"- {escape_cell(node.name)} card {card.index}: {escape_cell(held)}")
                continue
            memory = f"{card.allotted_mib} / {card.memory_mib}"
            if card.pending_mib:
                pending_seen = True
                memory += f" (+{card.pending_mib} pending)"
            core = f"{card.core_allotted_percent} %" if card.mode == 1 else ""
            cells = [node.name, str(card.index), card.model, mode_name(card.mode), memory, core]
            cells.append(str(card.vgpus))
            escaped = [escape_cell(cell) for cell in cells]
            rows.append([*escaped, "yes" if card.healthy else "**NO**"])
    if not rows:
        return []
    header = ["Node", "Card", "Model", "Mode", "Allotted / total MiB", "Core", "vGPUs", "Healthy"]
    lines = ["## Cards after this cycle", "", *markdown_table(header, rows, right={1, 4, 5, 6}), ""]
    if pending_seen:
        lines += ['"pending" is memory that this cycle\'s schedulable pods would take.', ""]
    if mig:
        lines += ["MIG cards, as their instances (profile@first slice, holder):", "", *mig, ""]
    return lines + node_fit_lines(view)


def node_fit_lines(view: Mapping[str, Any]) -> list[str]:
    """Each node's cpu, memory, taints and cordon, where the view knows any (kube-scheduler
    filters on them before it looks at cards)."""
    noted = [(node.name, node.fit.notes()) for node in node_views(view)]
    items = [f"- {escape_cell(name)}: {escape_cell(' · '.join(n))}" for name, n in noted if n]
    return (
        ["Node resources and taints (checked before the cards):", "", *items, ""] if items else []
    )


def render_markdown(diagnosis: Mapping[str, Any], view: Mapping[str, Any]) -> str:
    """The diagnosis as Markdown: headline, Pending pods, what to do, cards per node."""
    data = read_diagnosis(diagnosis)
    lines = [
        f"**{headline(data)}** ({escape_cell(judged_by(data))})",
        "",
        *pending_section(data),
        *advice_section(data),
        *repartition_markdown(repartitions(data["pods"])),
        *mig_profiles_markdown(data.get("mig_profiles", [])),
        *autoscalers_section(data),
        *cards_section(view),
    ]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"
