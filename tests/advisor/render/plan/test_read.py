"""render.plan.read: the advisor's own plan JSON reads back unchanged, and a saved one with odd
values renders with "?" where the values were, instead of failing or echoing them."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from advisor.core.diagnose import diagnose
from advisor.core.plan import PlanOptions, plan
from advisor.core.scaling import scaling_advice
from advisor.output.plan import plan_json
from advisor.render.plan.html import render_plan_html
from advisor.render.plan.markdown import render_plan_markdown
from advisor.render.plan.read import read_plan
from advisor.scenario import load_scenario

EXAMPLES = Path(__file__).parents[4] / "advisor" / "examples"


def _written(scenario: str) -> dict[str, Any]:
    """The plan JSON as `xgpu-advisor plan --format json` writes it (through JSON, as a file)."""
    cluster = load_scenario(EXAMPLES / scenario)
    diagnosis = diagnose(cluster, node_detail_limit=0)
    report = plan(cluster, PlanOptions(time_budget_s=10), clock=lambda: 0.0, diagnosis=diagnosis)
    data = plan_json(report, cluster, *scaling_advice(cluster, report, diagnosis))
    loaded: dict[str, Any] = json.loads(json.dumps(data))
    return loaded


@pytest.mark.parametrize(
    "scenario", ["demo.yaml", "hami.yaml", "report-sample.yaml", "training.yaml"]
)
def test_the_advisors_own_plan_reads_back_unchanged(scenario: str) -> None:
    written = _written(scenario)
    assert written["plans"] or written["scale_up"] or written["scale_down"]  # not an empty plan
    assert read_plan(written) == written


def test_odd_values_render_as_question_marks_not_as_themselves_or_a_failure() -> None:
    odd = copy.deepcopy(_written("demo.yaml"))
    assert odd["plans"], "the demo has a plan"
    odd["summary"]["rescued_share"] = "x"  # float("x") used to raise
    odd["plans"][0]["rescues"] = [{"a": 1}]  # an unhashable name used to raise
    odd["plans"][0]["cost"] = True  # a bool is not a cost
    odd["scale_up"] = [{"nodes": 1, "shape": {"cards": 2, "memory_mib": float("nan")}}]
    text = render_plan_markdown(odd, [])
    page = render_plan_html(odd, [])
    assert "| 1 | ? → ?\\[\\] |" in text  # the odd name, and the placement no entry names
    assert "2 × ? cards, any model" in text
    assert "Plan 1: 1 eviction, 0.5 GPUs rescued, cost ?</h2>" in page
    # the panels show "?"; the script, which reads the raw JSON, only comments the odd name out
    assert "{&#x27;a&#x27;: 1}" not in page[: page.index("<h3>Commands</h3>")]
    assert "# Plan 1: rescues {'a': 1}" in text
    assert "(0.0%)" in text  # an unknown share reads as none rescued
