"""The advice the report pages show is the one each pod's scale-up was decided with
(`advisor.core.remedy`): a pod advised to scale up is worded "scale up" and stands in the
scale-up proposals; no pod advised to consolidate does. Checked on the bundled demo and the
report sample, built by the real pipeline, and on the `plan` command's own output."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from advisor.cli import main
from advisor.render.common.advice import advice_key, cause_label, read_remedy
from advisor.render.diagnose.read import read_diagnosis
from advisor.render.report.html import render_report_html
from advisor.render.report.markdown import render_report_markdown
from advisor.report import ReportInputs, ReportOptions, build_report
from advisor.scenario import load_scenario
from advisor.schemas import PodDiagnosisJson, UnresolvedJson
from tests.advisor.render.sample_report import sample_report

CONSOLIDATE = {"fragmentation", "capacity-consolidate", "rebalance"}
DEMO = Path(str(resources.files("advisor") / "examples" / "demo.yaml"))


def demo_report() -> dict[str, Any]:
    inputs = ReportInputs(load_scenario(DEMO), f"scenario {DEMO.name}", 1_764_491_400.0)
    return build_report(inputs, ReportOptions(time_budget_s=10), lambda: 0.0).data


@pytest.fixture(scope="module", params=["demo", "sample"])
def report(request: pytest.FixtureRequest) -> dict[str, Any]:
    return demo_report() if request.param == "demo" else sample_report()


def section(text: str, heading: str) -> str:
    """The Markdown from `heading` to the next heading of any level."""
    start = text.index(f"\n{heading}\n") + len(heading) + 2
    rest = text[start:]
    ends = [i for i in (rest.find("\n## "), rest.find("\n### ")) if i >= 0]
    return rest[: min(ends)] if ends else rest


def advised(report: dict[str, Any]) -> dict[str, str]:
    return {pod["pod"]: pod["advice"]["key"] for pod in report["diagnosis"]["pods"]}


def test_both_reports_have_a_pod_advised_to_scale_up(report: dict[str, Any]) -> None:
    # Guards the fixtures: the checks below mean something only if such a pod is there.
    # (The cards that could hold ml/finetune-0 have 39,936 MiB free of the 40,960 it needs.)
    assert advised(report)["ml/finetune-0"] == "capacity-scale-up"
    assert report["diagnosis"]["pods"][4]["cause"] == "capacity"


def test_a_pod_advised_to_scale_up_is_in_the_scale_up_and_worded_so(
    report: dict[str, Any],
) -> None:
    text = render_report_markdown(report)
    scale_up = section(text, "### Scale up (for what stays Pending)")
    proposed = {name for step in report["plan"]["scale_up"] for name in step["for"]}
    for pod, key in advised(report).items():
        if key in ("no-plan", "capacity-scale-up"):
            assert pod in proposed
            assert pod in scale_up
    pending = section(text, "## Pending pods")
    assert "| ml/finetune-0 |" in pending
    assert "capacity (scale up)" in pending
    assert "capacity (consolidate)" not in text
    what_to_do = section(text, "## What to do")
    assert "- **Capacity, scale up** (ml/finetune-0): The cards that could hold these lack" in (
        what_to_do
    )
    assert "Capacity, consolidation would help" not in what_to_do
    assert "| ml/finetune-0 | capacity (scale up) |" in section(text, "## Still Pending")


def test_no_pod_advised_to_consolidate_is_in_the_scale_up(report: dict[str, Any]) -> None:
    proposed = {name for step in report["plan"]["scale_up"] for name in step["for"]}
    text = section(render_report_markdown(report), "### Scale up (for what stays Pending)")
    consolidating = [pod for pod, key in advised(report).items() if key in CONSOLIDATE]
    assert consolidating  # web/infer-2: fragmentation, rescued by plan 1
    for pod in consolidating:
        assert pod not in proposed
        assert pod not in text


def test_html_words_the_advice_as_the_markdown_does(report: dict[str, Any]) -> None:
    page = render_report_html(report)
    assert "<strong>Capacity, scale up</strong>" in page
    assert '<span class="who mono">ml/finetune-0</span>' in page
    # the tag of a pod advised to scale up is coloured so (#b91c1c), not as capacity
    assert '<span class="tag" style="background:#b91c1c">capacity (scale up)</span>' in page
    assert "capacity (consolidate)" not in page
    assert "Capacity, consolidation would help" not in page


def test_plan_command_json_carries_the_advice(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--scenario", str(DEMO), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    keys = {entry["pod"]: entry["advice"]["key"] for entry in data["unresolved"]}
    # the same advice as the report's (demo_report): one function decides both
    report = demo_report()
    assert keys == {e["pod"]: e["advice"]["key"] for e in report["plan"]["unresolved"]}
    assert keys["ml/finetune-0"] == "capacity-scale-up"
    assert keys["web/odd-size"] == "invalid"
    assert main(["plan", "--scenario", str(DEMO), "--format", "markdown"]) == 0
    assert "| ml/finetune-0 | capacity (scale up) |" in capsys.readouterr().out


def entry(cause: str, **extra: Any) -> UnresolvedJson:
    value: dict[str, Any] = {"pod": "ns/p", "cause": cause, **extra}
    return value  # type: ignore[return-value]


@pytest.mark.parametrize(
    ("given", "key", "label"),
    [
        (entry("capacity", cluster_free_sufficient=True), "capacity-consolidate",
         "capacity (consolidate)"),
        (entry("capacity", cluster_free_sufficient=False), "capacity-scale-up",
         "capacity (scale up)"),
        (entry("capacity"), "capacity", "capacity"),
        # the advice wins over the older field: the plans decided it
        (entry("capacity", cluster_free_sufficient=True,
               advice={"key": "no-plan", "scale_up": True, "why": ""}),
         "no-plan", "capacity (no plan, scale up)"),
        (entry("fragmentation", advice={"key": "no-plan", "scale_up": True, "why": ""}),
         "no-plan", "fragmentation (no plan, scale up)"),
        (entry("node-resources", advice={"key": "rebalance", "scale_up": False, "why": ""}),
         "rebalance", "node-resources (a plan makes room)"),
        (entry("fragmentation", advice={"key": "fragmentation", "scale_up": False, "why": ""}),
         "fragmentation", "fragmentation"),
    ],
)  # fmt: skip
def test_advice_key_and_label(given: UnresolvedJson, key: str, label: str) -> None:
    assert advice_key(given) == key
    assert cause_label(given) == label


def test_a_saved_file_keeps_its_advice_and_drops_a_broken_one() -> None:
    pods: list[dict[str, Any]] = [
        {"pod": "a/x", "cause": "capacity", "advice": {"key": "no-plan", "scale_up": True}},
        {"pod": "a/y", "cause": "capacity", "advice": {"scale_up": True}},
        {"pod": "a/z", "cause": "capacity", "advice": "no-plan"},
    ]
    read: list[PodDiagnosisJson] = read_diagnosis({"pods": pods})["pods"]
    assert read[0]["advice"] == {"key": "no-plan", "scale_up": True, "why": ""}
    assert "advice" not in read[1]
    assert "advice" not in read[2]
    assert read_remedy({"key": "rebalance", "scale_up": "yes"}) == {
        "key": "rebalance",
        "scale_up": False,  # only a JSON true is true
        "why": "",
    }
