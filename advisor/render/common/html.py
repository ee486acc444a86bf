"""HTML building blocks every page shares: escaping, figures, headings, notes, tables and the
page skeleton (`assets/page.html`, one self-contained file: inline CSS, no scripts).

Text passes through `escape`; table cells are taken as HTML already (the caller escapes).
"""

from __future__ import annotations

import html
from string import Template

from advisor.render.common.style import asset, stylesheet


def escape(text: object) -> str:
    """`text` as HTML-safe text, quotes included (safe in attribute values too)."""
    return html.escape(str(text), quote=True)


def format_mib(value: int) -> str:
    """Thousands grouped by a narrow no-break space: 81 920 MiB."""
    return f"{value:,}".replace(",", "\u202f") + "\u00a0MiB"


def with_code(text: str) -> str:
    """Escaped text with `backticked` spans set as <code>."""
    parts = text.split("`")
    return "".join(f"<code>{escape(p)}</code>" if i % 2 else escape(p) for i, p in enumerate(parts))


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


def page(title: str, styles: tuple[str, ...], body: str, schema: str) -> str:
    """A whole page: `body` (HTML already) under `title`, with the named stylesheets inline
    and a footer naming the JSON schema the page was rendered from."""
    return Template(asset("page.html")).substitute(
        title=escape(title), style=stylesheet(*styles), body=body, schema=escape(schema)
    )
