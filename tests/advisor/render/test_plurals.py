"""Counts agree with their nouns ("1 pod", "2 pods") in every output: each command's every
format, the report's pages with right-sizing history of one and two samples, the command's
stderr line and the demo's summary, on scenarios that make the counts 1 and 2."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.core.model import Cluster
from advisor.demo import DEFAULT_SCENARIO, summary
from advisor.render.report.html import render_report_html
from advisor.render.report.markdown import render_report_markdown
from advisor.scenario.write import save_scenario
from tests.advisor.commands.test_plan import cce_cluster
from tests.advisor.core.test_plan_checker import build, node, pending, running, two_dependent_plans
from tests.advisor.render.sample_report import sample_cluster, sample_history, sample_report

NOUNS = "pod|plan|eviction|node|card|workload|sample|vGPU|warning|exporter"
BEFORE = r"(?:more |running |Pending |Pending GPU |simulated |idle )?"
ONE_WITH_PLURAL = re.compile(rf"(?<![\d.,/])1 {BEFORE}(?:{NOUNS})s\b")
MANY_WITH_SINGULAR = re.compile(rf"(?<![\d.,])(?:0|[2-9]|\d\d+) {BEFORE}(?:{NOUNS})\b(?![-/:(])")
ONE_SHAPE_CARDS = re.compile(r"(?<![\d.,])1 × [\d,]+ MiB cards\b")
MAYBE_PLURAL = re.compile(r"\b\w+\(s\)")  # kube-scheduler's own "node(s) had ..." is quoted


def single() -> Cluster:
    """One node, one card, one running pod and one Pending pod that fits nowhere."""
    return build(
        [node("only", 16)],
        [running("a/one", "only", [0], 12, owner="Job/a/one"), pending("a/wait", 1, 16)],
    )


def text_of(page: str) -> str:
    """What a reader sees: tags are gaps, entities their characters."""
    return html.unescape(re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page)))


def problems(where: str, text: str) -> list[str]:
    """Each disagreement, with the words around it."""
    found = []
    for pattern in (ONE_WITH_PLURAL, MANY_WITH_SINGULAR, ONE_SHAPE_CARDS, MAYBE_PLURAL):
        for match in pattern.finditer(text):
            if match[0] != "node(s)":
                found.append(f"{where}: {text[max(match.start() - 30, 0) : match.end() + 20]!r}")
    return found


def command_outputs(scenario: Path, out: Path, capfd: pytest.CaptureFixture[str]) -> dict[str, str]:
    """Every format of every command that reads a scenario, and the report's files."""
    texts = {}
    runs = [("diagnose", f) for f in ("markdown", "html")]
    runs += [("plan", f) for f in ("markdown", "html", "kubectl")] + [("whatif", "markdown")]
    for command, fmt in runs:
        assert main([command, "--scenario", str(scenario), "--format", fmt]) in (0, 1)
        texts[f"{command} {fmt}"] = capfd.readouterr().out
    assert main(["report", "--scenario", str(scenario), "--output-dir", str(out)]) == 0
    texts["report stderr"] = capfd.readouterr().err
    texts["report md"] = (out / "report.md").read_text(encoding="utf-8")
    texts["report html"] = (out / "report.html").read_text(encoding="utf-8")
    texts["demo summary"] = summary(out)
    return texts


@pytest.mark.parametrize("name", ["single", "one plan", "two plans", "demo"])
def test_no_count_disagrees_with_its_noun(
    name: str, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "scenario.yaml"
    if name == "demo":
        scenario = DEFAULT_SCENARIO
    else:
        clusters = {"single": single, "one plan": cce_cluster, "two plans": two_dependent_plans}
        save_scenario(scenario, clusters[name]())
    texts = command_outputs(scenario, tmp_path / "out", capfd)
    found = [p for where, text in texts.items() for p in problems(where, text_of(text))]
    assert found == []


@pytest.mark.parametrize("samples", [1, 2])
def test_right_sizing_counts_agree_with_few_samples(samples: int) -> None:
    """A workload seen once or twice: its reasons count samples in the right number."""
    cluster = sample_cluster()
    history = sample_history(cluster)
    history = history[history["timestamp"] >= sorted(set(history["timestamp"]))[-samples]]
    report = sample_report(cluster, history)
    texts = {"html": render_report_html(report), "markdown": render_report_markdown(report)}
    found = [p for where, text in texts.items() for p in problems(where, text_of(text))]
    assert found == []
    assert f"{samples} sample" in texts["markdown"]
