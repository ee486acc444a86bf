"""Markdown building blocks every page shares: escaped cells and GFM tables."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

# Characters that would end a table cell or start inline markup (`&` an entity, `~`
# strikethrough). Line breaks become spaces: a cell or a list item is one line.
_MARKDOWN_SPECIALS = str.maketrans(
    {c: "\\" + c for c in "\\|*`<>[]~&"} | {"\r": " ", "\n": " ", "\t": " "}
)
# Underscores inside a word are left alone (GFM does not emphasise there, and names like
# max_vgpus read better bare); one at either edge of a word could open or close emphasis.
_EDGE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")
# GFM's extended autolinks need no markup: a URL's scheme or "www." in plain text is a link.
# A backslash before its ":" or "." keeps the text and loses the link.
_URL_START = re.compile(r"(?i)\b(https?|ftp|www)(:|\.)")
# An e-mail address is a link too, and backslashes do not stop it (cmark-gfm finds it in the
# text once escapes are undone): an empty HTML comment before the "@" splits the text.
_EMAIL_AT = re.compile(r"(?<=[A-Za-z0-9.+_-])@(?=[A-Za-z0-9_-]+\.[A-Za-z0-9])")


def escape_cell(text: str) -> str:
    """Text safe inside a GFM table cell (and in running text): it shows as written, makes
    no markup, no link and no extra column."""
    text = _EDGE_UNDERSCORE.sub(r"\\_", text.translate(_MARKDOWN_SPECIALS))
    return _EMAIL_AT.sub("<!-- -->@", _URL_START.sub(r"\1\\\2", text))


def markdown_table(
    header: Sequence[str], rows: Iterable[Sequence[str]], right: set[int]
) -> list[str]:
    """A GFM table; cells must already be escaped (escape_cell)."""
    lines = ["| " + " | ".join(header) + " |"]
    lines.append("|" + "|".join("---:" if i in right else "---" for i in range(len(header))) + "|")
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines
