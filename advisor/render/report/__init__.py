"""The report page (`xgpu-advisor report`): the whole run (`xgpu-advisor/report/v1`, built
by `advisor.report`) as Markdown and as one self-contained HTML page with inline SVG charts.
The diagnosis, plan and scaling panels are the diagnose and plan pages' own."""

from __future__ import annotations

from advisor.render.report.html import render_report_html
from advisor.render.report.markdown import render_report_markdown

__all__ = ["render_report_html", "render_report_markdown"]
