"""Public names for the diagnosis and plan pages' fragments that the report reuses.

The diagnosis renderers (`html`, `markdown`) and the plan renderers (`plan_html`,
`plan_markdown`) keep these private; the report composes them through this one thin layer so
that the report draws cards, pods and plans exactly as those pages do, and a rename there
is mended here only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.render import html as diagnosis_html
from advisor.render import markdown as diagnosis_markdown
from advisor.render import plan_html, plan_markdown
from advisor.render._common import NodeView

# -- HTML ----------------------------------------------------------------------------------------


def escape(text: object) -> str:
    return diagnosis_html._e(text)


def advice_html(diagnosis: Mapping[str, Any]) -> str:
    """The "What to do" panel (empty when no pod is Pending)."""
    return diagnosis_html._advice(diagnosis)


def card_legend_html() -> str:
    return diagnosis_html._legend()


def node_cards_html(diagnosis: Mapping[str, Any], node: NodeView) -> str:
    """One node's panel: a bar per card, a segment per pod, and its Pending pods."""
    return diagnosis_html._node(diagnosis, node)


def pending_table_html(diagnosis: Mapping[str, Any]) -> str:
    return diagnosis_html._pods_table(diagnosis)


def plan_html_panel(number: int, plan: Mapping[str, Any], pair: Mapping[str, Any] | None) -> str:
    """One plan: what it rescues and evicts, with before/after card pictures when given."""
    return plan_html._plan(number, plan, pair)


def unresolved_html(plan: Mapping[str, Any]) -> str:
    return plan_html._unresolved(plan)


PLAN_CSS = plan_html.PLAN_CSS

# -- Markdown ------------------------------------------------------------------------------------


def escape_cell(text: str) -> str:
    return diagnosis_markdown.escape_cell(text)


def pending_markdown(diagnosis: Mapping[str, Any]) -> list[str]:
    return diagnosis_markdown._pods_section(diagnosis)


def advice_markdown(diagnosis: Mapping[str, Any]) -> list[str]:
    return diagnosis_markdown._advice_section(diagnosis)


def cards_markdown(view: Mapping[str, Any]) -> list[str]:
    return diagnosis_markdown._cards_section(view)


def plans_markdown(plan: Mapping[str, Any]) -> list[str]:
    return plan_markdown._plans(plan)


def unresolved_markdown(plan: Mapping[str, Any]) -> list[str]:
    return plan_markdown._unresolved(plan)


def plan_pictures_markdown(pairs: list[dict[str, Any]]) -> list[str]:
    return plan_markdown._pictures(pairs)
