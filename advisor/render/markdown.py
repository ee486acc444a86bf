"""`xgpu-advisor diagnose --format markdown`: a report for terminals and tickets."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from advisor.render._common import (
    as_int,
    as_str,
    cause_label,
    explanation,
    grouped_advice,
    headline,
    judged_by,
    mode_name,
    node_views,
    pod_request_text,
    pods_of,
)

# Characters that would end a table cell or start inline markup. Underscores are left
# alone: GFM does not emphasise inside words, and names like max_vgpus read better bare.
_MARKDOWN_SPECIALS = str.maketrans(
    {c: "\\" + c for c in "\\|*`<>[]"} | {"\r": " ", "\n": " ", "\t": " "}
)


def escape_cell(text: str) -> str:
    """Text safe inside a GFM table cell (and in running text)."""
    return text.translate(_MARKDOWN_SPECIALS)


def markdown_table(
    header: Sequence[str], rows: Iterable[Sequence[str]], right: set[int]
) -> list[str]:
    """A GFM table; cells must already be escaped (escape_cell)."""
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|" + "|".join("---:" if i in right else "---" for i in range(len(header))) + "|")
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def pending_section(diagnosis: Mapping[str, Any]) -> list[str]:
    """The "Pending pods" section as a table (no lines when no pod is Pending)."""
    rows = []
    for pod in pods_of(diagnosis):
        cells = [
            as_str(pod.get("pod"), "?"),
            str(as_int(pod.get("priority"))),
            pod_request_text(pod),
            cause_label(pod),
            explanation(pod),
        ]
        rows.append([escape_cell(cell) for cell in cells])
    if not rows:
        return []
    header = ["Pod", "Priority", "Request (per card)", "Cause", "Where it fits / why not"]
    return ["## Pending pods", "", *markdown_table(header, rows, right={1}), ""]


def advice_section(diagnosis: Mapping[str, Any]) -> list[str]:
    """The "What to do" section, advice grouped with its pods (no lines when none)."""
    lines = []
    for advice, pods in grouped_advice(diagnosis):
        names = ", ".join(escape_cell(name) for name in pods)
        lines.append(f"- **{advice.title}** ({names}): {advice.text}")
    return ["## What to do", "", *lines, ""] if lines else []


def cards_section(view: Mapping[str, Any]) -> list[str]:
    """The "Cards after this cycle" section, a row per card (no lines when no card)."""
    rows = []
    pending_seen = False
    for node in node_views(view):
        for card in node.cards:
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
    lines = [
        f"**{headline(diagnosis)}** ({escape_cell(judged_by(diagnosis))})",
        "",
        *pending_section(diagnosis),
        *advice_section(diagnosis),
        *cards_section(view),
    ]
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"
