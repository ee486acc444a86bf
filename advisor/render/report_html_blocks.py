"""Small HTML building blocks that the report page's sections share: headings, notes, tables.

Text passes through `escape`; table cells are taken as HTML already (the caller escapes).
"""

from __future__ import annotations

from advisor.render.html import escape


def bar_percent(share: float) -> float:
    """A share as a bar width in per cent, clamped to 0..100."""
    return min(max(share, 0.0), 1.0) * 100


def note_panel(text: str) -> str:
    """A panel holding one muted line, for a section with nothing to show."""
    return f'<section class="panel"><p class="none">{escape(text)}</p></section>'


def section_heading(anchor: str, text: str) -> str:
    """A section's heading, the target of its link in the page's table of contents."""
    return f'<h2 class="section" id="{anchor}">{escape(text)}</h2>'


def html_table(head: list[str], rows: list[list[str]], numeric: set[int] | None = None) -> str:
    """Cells must already be HTML; `numeric` columns are right-aligned."""
    right = numeric or set()

    def cell(tag: str, i: int, text: str) -> str:
        return f'<{tag} class="num">{text}</{tag}>' if i in right else f"<{tag}>{text}</{tag}>"

    header = "".join(cell("th", i, h) for i, h in enumerate(head))
    body = "".join(
        "<tr>" + "".join(cell("td", i, c) for i, c in enumerate(r)) + "</tr>" for r in rows
    )
    return f"<table><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"
