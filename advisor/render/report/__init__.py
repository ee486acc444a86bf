"""The report page (`xgpu-advisor report`): the whole run (`xgpu-advisor/report/v1`, built
by `advisor.report`) as Markdown and as one self-contained HTML page with inline SVG charts.
The diagnosis, plan and scaling panels are the diagnose and plan pages' own."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.render.report.html import html_page, render_report_html
from advisor.render.report.markdown import markdown_page, render_report_markdown
from advisor.render.report.read import read_report_nodes, read_script_input

__all__ = ["render_report_html", "render_report_markdown", "render_report_pages"]


def render_report_pages(raw: Mapping[str, Any]) -> tuple[str, str]:
    """The Markdown and the HTML page of one report, read once: on a large cluster reading
    the card view is much of the rendering."""
    report, nodes = read_report_nodes(raw)
    script_input = read_script_input(raw)
    return markdown_page(report, nodes, script_input), html_page(report, nodes, script_input)
