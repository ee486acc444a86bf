"""The scaling advice as HTML tables, for the plan's and the report's pages (every value
passes through `escape`)."""

from __future__ import annotations

from advisor.render.common.html import escape, html_table
from advisor.render.plan.scaling import (
    HELD_HEADER,
    HELD_TITLE,
    NOT_TRIGGERED_TITLE,
    RELIEF_HEADER,
    RELIEF_TITLE,
    also_moves_cell,
    held_more_text,
    held_rows,
    not_triggered_header,
    not_triggered_rows,
    relief_rows,
    scale_down_header,
    scale_down_rows,
    scale_up_note,
    scale_up_rows,
)
from advisor.schemas import PlanJson


def scale_up_html(plan: PlanJson) -> str:
    """The scale-up entries as a table ("" when none)."""
    ups = scale_up_rows(plan)
    if not ups:
        return ""
    note = scale_up_note(plan)
    return html_table(
        ["Nodes", "Node shape", "For", "Note"],
        [[escape(r.nodes), escape(r.shape), names_html(r.pods), escape(r.note)] for r in ups],
        numeric={0},
    ) + (f'<p class="meta">{escape(note)}.</p>' if note else "")


def not_triggered_html(plan: PlanJson) -> str:
    """The pods no node group would help, with why, under a heading ("" when none)."""
    return _pods_with_text(
        NOT_TRIGGERED_TITLE, not_triggered_header(plan), not_triggered_rows(plan)
    )


def relief_html(plan: PlanJson) -> str:
    """The pods short of cpu or memory, not of GPUs, with what frees it ("" when none)."""
    return _pods_with_text(RELIEF_TITLE, RELIEF_HEADER, relief_rows(plan))


def _pods_with_text(title: str, header: list[str], pods: list[tuple[str, str]]) -> str:
    """A heading and a table of (pod, text) rows ("" when none)."""
    if not pods:
        return ""
    rows = [[f'<span class="mono">{escape(pod)}</span>', escape(text)] for pod, text in pods]
    return f"<h3>{escape(title)}</h3>" + html_table(header, rows)


def scale_down_html(plan: PlanJson) -> str:
    """The scale-down entries as a table ("" when none): where each node's GPU pods would
    move and, when known, its other pods that would move too."""
    downs = scale_down_rows(plan)
    if not downs:
        return ""
    header = scale_down_header(downs)
    rows = []
    for r in downs:
        cells = [f'<span class="mono">{escape(r.node)}</span>', escape(r.utilisation)]
        cells.append(names_html(r.moves))
        if len(header) > len(cells):
            cells.append(names_html(also_moves_cell(r)))
        rows.append(cells)
    return html_table(header, rows, numeric={1})


def held_html(plan: PlanJson) -> str:
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


def names_html(names: list[str]) -> str:
    return "<br>".join(f'<span class="mono">{escape(n)}</span>' for n in names) or "—"
