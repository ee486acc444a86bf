"""The report renderers on a full report (tests/advisor/render/sample_report.py): every section, in
order, with the figures of the run; the plan pictures against the plan renderer's own views."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from typing import Any

import pytest

from advisor.core.plan import PlanOptions, plan
from advisor.render.common.cards import node_views
from advisor.render.plan.data import plan_views
from advisor.render.report.html import render_report_html
from advisor.render.report.markdown import render_report_markdown
from advisor.render.report.plan_views import plan_view_pairs
from advisor.render.report.read import read_report
from advisor.schemas import REPORT_SCHEMA
from tests.advisor.render.sample_report import sample_cluster, sample_report

SECTION_IDS = ("pending", "cards", "plans", "scaling", "fragmentation", "usage", "rightsizing")


@pytest.fixture(scope="module")
def report() -> dict[str, Any]:
    return sample_report()


@pytest.fixture(scope="module")
def page(report: dict[str, Any]) -> str:
    return render_report_html(report)


@pytest.fixture(scope="module")
def text(report: dict[str, Any]) -> str:
    return render_report_markdown(report)


def test_the_sample_has_every_section_filled(report: dict[str, Any]) -> None:
    # Guards the fixture itself: the checks below mean something only if these are there.
    assert report["plan"]["plans"]
    assert report["plan"]["scale_up"]
    assert report["plan"]["scale_down"]
    assert report["rightsizing"]["pending_fit"]["newly_schedulable"] == ["web/infer-2"]
    assert len(report["usage"]["timestamps"]) == 288
    assert report["stale"]
    assert report["warnings"]


def test_html_sections_come_in_order(page: str) -> None:
    positions = [page.index(f'id="{anchor}"') for anchor in SECTION_IDS]
    assert positions == sorted(positions)
    assert page.index('class="panel summary"') < positions[0]
    for anchor in SECTION_IDS:
        assert f'href="#{anchor}"' in page


def test_html_header_shows_when_what_and_what_was_left_out(page: str) -> None:
    assert "Generated 2025-11-30 08:30:00 UTC" in page
    assert "prometheus http://prometheus.monitoring:9090" in page
    assert "nvml collector failed" in page
    stale = page[page.index('class="alert stale"') :]
    stale = stale[: stale.index("</div>")]
    assert "LEFT OUT of the model (1)" in stale
    assert "node gpu-old-7" in stale
    assert "xgpu_node_info" in stale
    assert "21 min ago" in stale


def test_html_summary_strip_figures(page: str) -> None:
    strip = page[page.index('class="panel summary"') : page.index('id="pending"')]
    assert '<div class="value">7</div>' in strip
    assert "<b>3</b>schedulable" in strip
    assert "<b>1</b>fragmentation" in strip
    assert '<div class="value">1 of 3 pods</div>' in strip
    assert "0.5 of 19 GPUs (2.6%)" in strip
    assert "memory bounds any at 4.625 (24.3%)" in strip
    assert "1 GPU = " in strip  # the unit of every GPU figure, named
    # the sample strands nothing: a good tile, fragmentation its secondary line
    stranded = '<div class="tile good"><div class="label">Stranded memory</div>'
    assert stranded + '<div class="value">0 MiB</div>' in strip
    assert "Fragmentation 68.5%: of 90,112 MiB free" in strip
    # GPUs of memory of the commonest card, 16,384 MiB: 270,336 MiB of healthy cards
    assert '<div class="value">2.5 GPUs short</div>' in strip
    assert "16.5 GPUs of memory in the cluster (1 GPU: the commonest card); 19 needed" in strip
    # the meter: plans, ideal repack and bound as widths of one bar
    assert 'class="bound" style="width:24.3%"' in strip
    assert 'class="got" style="width:2.6%"' in strip


def test_html_pending_chart_and_every_pending_pod(report: dict[str, Any], page: str) -> None:
    section = page[page.index('id="pending"') : page.index('id="cards"')]
    chart = section[section.index('<svg class="chart cause-chart"') : section.index("</svg>")]
    bars = re.findall(r'width="([\d.]+)" height="22" rx="4" fill="(#[0-9a-f]{6})"', chart)
    assert len(bars) == 6 + 5  # a track per cause, and a bar per non-zero cause
    filled = [float(w) for w, colour in bars if colour != "#f1f5f9"]
    assert filled[0] == pytest.approx(3 * filled[1], abs=0.2)  # 3 schedulable, 1 of each other
    for pod in report["diagnosis"]["pods"]:
        assert pod["pod"] in section


def test_html_cards_reuse_the_diagnosis_bars(report: dict[str, Any], page: str) -> None:
    section = page[page.index('id="cards"') : page.index('id="plans"')]
    cards = sum(len(n["cards"]) for n in report["view"]["nodes"])
    assert section.count('class="bar"') == cards == 12
    for node in report["view"]["nodes"]:
        assert f'id="node-{node["name"]}"' in section


def test_html_plans_with_pictures_and_commands(page: str) -> None:
    section = page[page.index('id="plans"') : page.index('id="scaling"')]
    assert "Plan 1: 1 eviction, 0.5 GPUs rescued" in section
    assert "<h3>Before</h3>" in section
    assert "<h3>After</h3>" in section
    assert "kubectl create --raw /api/v1/namespaces/ml/pods/train-a/eviction -f -" in section
    unresolved = section[section.index("Still Pending") :]
    for pod in ("ml/finetune-0", "ml/pretrain-0", "web/odd-size"):
        assert pod in unresolved


def test_html_scaling_fragmentation_usage_rightsizing(page: str) -> None:
    scaling = page[page.index('id="scaling"') : page.index('id="fragmentation"')]
    assert "8 × 32,768 MiB cards, any model (a new node shape)" in scaling
    assert "ml/tiny → v100-node-1[0]" in scaling
    assert "6.2%" in scaling
    assert "<th>Other pods, also moved</th>" in scaling
    assert '<span class="mono">ml/dashboard</span>' in scaling
    frag = page[page.index('id="fragmentation"') : page.index('id="usage"')]
    assert "61,696 MiB (3.766 GPUs of memory), 68.5% of free" in frag
    assert "2 × 28,672 MiB + 60 % core" in frag
    assert frag.index("a100-node-1") < frag.index("t4-spare")  # most fragmented first
    usage = page[page.index('id="usage"') : page.index('id="rightsizing"')]
    points = re.search(r'class="allotted-line" points="([^"]+)"', usage)
    assert points is not None
    assert len(points.group(1).split()) == 288
    assert ">GiB</text>" in usage
    assert ">11-30</text>" in usage
    assert "allotted peaks at 176.0 GiB" in usage
    sizing = page[page.index('id="rightsizing"') :]
    assert "newly: web/infer-2" in sizing
    assert sizing.count('<svg class="sizing"') == 9
    assert sizing.index("Deployment/infer/embed") < sizing.index("Job/ml/train-a")  # saving


def test_markdown_has_the_same_sections_as_tables(text: str) -> None:
    headings = [line for line in text.splitlines() if line.startswith("## ")]
    wanted = [
        "## Summary",
        "## Pending by cause",
        "## Pending pods",
        "## Cards after this cycle",
        "## Plans",
        "## Still Pending",
        "## Commands",
        "## Cards before and after each plan",
        "## Scaling advice",
        "## Fragmentation",
        "## Usage vs allotment over time",
        "## Right-sizing",
    ]
    assert [h for h in headings if h in wanted] == wanted
    assert "| node gpu-old-7 | xgpu_node_info | 21 min ago |" in text
    assert "- **Headroom: 2.5 GPUs short**" in text
    assert "| schedulable | 3 | " + "█" * 24 + " |" in text
    assert "| 1 | 8 × 32,768 MiB cards, any model (a new node shape) | ml/pretrain-0 |" in text
    assert "| a100-node-1 | 39,936 | 31,680 | 0 | 79.3% |" in text
    assert "| t4-idle | 6.2% | ml/tiny → v100-node-1\\[0\\] | ml/dashboard |" in text
    assert "| 2025-11-30 08:30 UTC | 176.0 |" in text
    assert "| Deployment/infer/embed | main | 1 pod, 1 vGPU | memory | 24,576 |" in text


def test_output_is_deterministic(report: dict[str, Any], page: str, text: str) -> None:
    again = json.loads(json.dumps(report))  # a fresh dict, as a reader of the JSON has it
    assert render_report_html(again) == page
    assert render_report_markdown(copy.deepcopy(report)) == text
    assert render_report_html(sample_report()) == page


def _card_set(view: Mapping[str, Any]) -> dict[tuple[str, int], tuple[Any, ...]]:
    return {
        (node.name, card.index): (
            card.mode,
            card.vgpus,
            card.core_allotted_percent,
            sorted((a.pod, a.memory_mib, a.core_percent, a.pending) for a in card.allotments),
        )
        for node in node_views(view)
        for card in node.cards
    }


def test_plan_pictures_match_the_plan_renderers_views(report: dict[str, Any]) -> None:
    """Rebuilt from the JSON alone, they equal what plan_data draws from the model."""
    cluster = sample_cluster()
    planned = plan(cluster, PlanOptions(time_budget_s=10), clock=lambda: 0.0)
    expected = plan_views(cluster, planned)
    got = plan_view_pairs(read_report(report), max_plans=10)
    assert len(got) == len(expected) == 1
    for mine, theirs in zip(got, expected, strict=True):
        assert _card_set(mine["before"]) == _card_set(theirs["before"])
        assert _card_set(mine["after"]) == _card_set(theirs["after"])
    after = _card_set(got[0]["after"])
    assert ("web/infer-2", 4096, 0, True) in after[("cce-node-1", 0)][3]
    assert ("ml/train-a", 12288, 0, False) in after[("t4-spare", 0)][3]


def test_the_report_and_its_pages_name_one_schema(report: dict[str, Any], page: str) -> None:
    assert report["schema"] == REPORT_SCHEMA == "xgpu-advisor/report/v1"
    assert f"Generated by xgpu-advisor · {REPORT_SCHEMA}</footer>" in page
    # a report that names none is rendered under the same id
    assert f"Generated by xgpu-advisor · {REPORT_SCHEMA}</footer>" in render_report_html({})
