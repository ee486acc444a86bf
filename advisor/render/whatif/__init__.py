"""The what-if page (`xgpu-advisor whatif`): Markdown only (its JSON is the other format)."""

from __future__ import annotations

from advisor.render.whatif.markdown import render_schedulers_markdown, render_whatif_markdown

__all__ = ["render_schedulers_markdown", "render_whatif_markdown"]
