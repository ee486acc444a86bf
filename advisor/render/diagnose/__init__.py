"""The diagnosis page (`xgpu-advisor diagnose`): Markdown for terminals and tickets, one-file
HTML for people.

Both take the §5 diagnosis JSON (with the per-pod extras the CLI adds) and the card view
after the simulated cycle, as plain JSON-ready mappings.
"""

from __future__ import annotations

from advisor.render.diagnose.html import render_html
from advisor.render.diagnose.markdown import render_markdown

__all__ = ["render_html", "render_markdown"]
