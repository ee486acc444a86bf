"""Text from elsewhere (pod names, annotations, error bodies of Prometheus or an exporter,
strings of a scenario file) made safe to print on a terminal.

A control character reaching a terminal is an instruction to it, not text: an escape
sequence can move the cursor, rewrite what was printed before, retitle the window or, on
some terminals, answer back into the input. Bidirectional overrides reorder what the reader
sees. So every such character is printed as a visible escape (`\\x1b`, `\\u202e`), and the
one-line form also escapes line breaks, so that a message stays the one line it claims to be.
Printable text, non-ASCII letters included, is left as it is.
"""

from __future__ import annotations

import re

# C0 and C1 controls and DEL; bidirectional marks, embeddings, overrides and isolates;
# the Unicode line and paragraph separators.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


# A message quotes what it is about; a 100 KB label value from a hostile server would make
# it a 100 KB line. Far above any message's own length (paths, URLs, series names).
MAX_LINE_CHARS = 2_000


def escape_controls(text: object) -> str:
    """`text` with every control character escaped, line breaks and tabs included, whole:
    for a log field, which keeps a traceback however long."""
    return _UNSAFE.sub(lambda m: _escape(m.group()), str(text))


def one_line(text: object) -> str:
    """`text` with every control character escaped, line breaks and tabs included, and cut
    at MAX_LINE_CHARS: for a message on stderr."""
    line = escape_controls(text)
    if len(line) <= MAX_LINE_CHARS:
        return line
    return f"{line[:MAX_LINE_CHARS]}... ({len(line) - MAX_LINE_CHARS:,} more characters)"


def terminal_text(text: str) -> str:
    """`text` with every control character escaped except newlines and tabs: for a document
    (Markdown) printed to stdout."""
    return _UNSAFE.sub(lambda m: m.group() if m.group() in "\n\t" else _escape(m.group()), text)
