"""The plan page (`xgpu-advisor plan`): Markdown, one-file HTML with before/after card
pictures, and the kubectl script; all from the §8 plan JSON (`advisor.output.plan.plan_json`)."""

from __future__ import annotations

from advisor.render.plan.data import plan_views
from advisor.render.plan.html import render_plan_html
from advisor.render.plan.markdown import render_plan_markdown
from advisor.render.plan.script import kubectl_script

__all__ = ["kubectl_script", "plan_views", "render_plan_html", "render_plan_markdown"]
