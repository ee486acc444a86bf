"""Markdown building blocks every page shares: escaped cells and GFM tables."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

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
