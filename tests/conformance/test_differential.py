"""The differential test (docs/conformance.md): kube-scheduler v1.35.3's own filter plugins
beside the advisor's filters on generated clusters and on every scenario in
advisor/examples. Without Go on PATH the tests skip, saying why; the first run builds the
harness (several minutes cold, cached in conformance/.build)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance import compare, harness, placements, session_preempt, volcano_compare
from conformance.generate import generate
from conformance.session_compare import EXPLAINED
from tests.advisor.core import (
    test_upstream_nodeaffinity as nodeaffinity,
)
from tests.advisor.core import (
    test_upstream_noderesources_fit as noderesources_fit,
)
from tests.advisor.core import (
    test_upstream_nodeunschedulable as nodeunschedulable,
)
from tests.advisor.core import (
    test_upstream_tainttoleration as tainttoleration,
)
from tests.advisor.core.upstream_helpers import Case, scenario_of
from tests.conformance.test_volcano_compare import SCENARIO, UPSTREAM

pytestmark = pytest.mark.realservices  # the Go harness runs as a process

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((REPO / "advisor" / "examples").glob("*.yaml"))

skip_without_go = pytest.mark.skipif(
    harness.go_missing() is not None, reason=str(harness.go_missing())
)


@pytest.fixture(scope="module")
def built() -> Path:
    return harness.binary("kube")


@skip_without_go
@pytest.mark.timeout(900)  # a cold build compiles k8s.io/kubernetes' scheduler packages
def test_generated_clusters_agree(built: Path) -> None:
    clusters, pods, agree, _, written = compare.run_generated(50, 0, None)
    assert clusters == 50
    assert pods > 50
    assert agree == pods, f"{pods - agree} of {pods} pods disagree (python -m conformance.cli)"
    assert written == []


@skip_without_go
def test_the_advisors_cycle_places_pods_only_where_kube_scheduler_would(built: Path) -> None:
    steps, agree, placed, refused, diffs = placements.check([generate(i) for i in range(50)])
    assert placed > 10
    assert (agree, refused, diffs) == (steps, 0, [])


@skip_without_go
@pytest.mark.timeout(900)  # a cold build of Volcano's device package and kube's plugins
def test_volcano_vgpu_cards_and_nodes_agree_with_volcanos_device_code() -> None:
    datas = [generate(i, profile="volcano-vgpu") for i in range(50)]
    rows = volcano_compare.check(datas)
    assert sum(n for n, _ in rows) > 50
    assert [d for _, diffs in rows for d in diffs] == []


@skip_without_go
def test_volcanos_device_code_gives_the_worked_answer(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(SCENARIO))
    (result,) = harness.run("volcano-cards", [path])
    keys = ("pod", "node", "cards", "tied")
    got = [{k: p[k] for k in keys} for p in result["pods"]]
    assert got == [{k: p.get(k) for k in keys} for p in UPSTREAM["pods"]]
    assert result["pods"][1]["reason"].startswith("0/2 nodes are unavailable: ")


@skip_without_go
def test_examples_agree(built: Path) -> None:
    pods, agree, _, diffs = compare.run_files(EXAMPLES)
    assert pods > 0
    assert (agree, diffs) == (pods, [])


@skip_without_go
def test_the_volcano_examples_agree_with_volcanos_session(built: Path) -> None:
    """The examples of profile volcano-vgpu (the training cluster: gangs, queues, preempt
    and reclaim) through Volcano's own session: placements, gang states and preemption.
    The training cluster's rolled-back gang leaves v1.14.1 holding its cards (`leaked`,
    conformance/session_compare.py), so its later preemption verdict is counted explained."""
    files, pods, diffs = session_preempt.run_files(EXAMPLES)
    assert files >= 1
    assert pods > 0
    # explained: where v1.14.1 departs from v1.15.1 or upstream draws (docs/conformance.md)
    assert [d for d in diffs if not d.startswith(EXPLAINED)] == []


def _tables() -> list[tuple[str, Case]]:
    """The filter cases the suite converted from kube-scheduler's tests, and its own."""
    out = []
    for module in (nodeaffinity, noderesources_fit, nodeunschedulable, tainttoleration):
        for table in ("UPSTREAM", "HAND"):
            for item in getattr(module, table, []):
                # NodeResourcesFit's rows hold the case beside the containers it sums up.
                case = item if isinstance(item, Case) else item.case
                out.append((f"{module.__name__.rsplit('.', 1)[-1]}.{table}: {case.name}", case))
    return out


@skip_without_go
def test_the_suites_filter_tables_are_what_kube_scheduler_decides(
    built: Path, tmp_path: Path
) -> None:
    """Every case of tests/advisor/core/test_upstream_*.py, whose verdicts were converted by
    hand, run through the real plugins: the hand conversion is checked, not trusted."""
    tables = _tables()
    assert len(tables) > 60
    paths = []
    for i, (_, case) in enumerate(tables):
        path = tmp_path / f"case-{i}.json"
        path.write_text(json.dumps(scenario_of(case)))
        paths.append(path)
    wrong = []
    for (name, case), result in zip(tables, harness.run("kube", paths), strict=True):
        (pod,) = result["pods"]
        got = tuple(pod["nodes"].get(case.node, ()))
        if compare.filter_of(got) != compare.filter_of(case.want):
            wrong.append(f"{name}: kube-scheduler {list(got)}, the table {list(case.want)}")
    assert wrong == []


@skip_without_go
def test_upstream_answers_each_filter(built: Path, tmp_path: Path) -> None:
    """The harness itself: one node per filter, each rejecting the pod its own way."""
    card = [{"index": 0, "memory_mib": 16384}]
    scenario = {
        "nodes": [
            {"name": "cordoned", "cards": card, "unschedulable": True},
            {"name": "labelled", "cards": card, "labels": {"pool": "b"}},
            {"name": "tainted", "cards": card, "labels": {"pool": "a"},
             "taints": [{"key": "gpu", "value": "yes", "effect": "NoExecute"}]},
            {"name": "small", "cards": card, "labels": {"pool": "a"},
             "allocatable": {"cpu": "1", "memory": "1Gi", "pods": 1},
             "other_pods": [{"name": "kube-system/ds", "resources": {"cpu": "500m"}}]},
            {"name": "fits", "cards": card, "labels": {"pool": "a"}},
        ],
        "pods": [{"name": "ml/p", "request": {"gpus": 1, "memory_mib": 1024},
                  "node_selector": {"pool": "a"}, "resources": {"cpu": "600m", "memory": "2Gi"}}],
    }  # fmt: skip
    path = tmp_path / "s.json"
    path.write_text(json.dumps(scenario))
    (result,) = harness.run("kube", [path])
    assert result["pods"] == [{"pod": "ml/p", "nodes": {
        "cordoned": ["node(s) were unschedulable"],
        "labelled": ["node(s) didn't match Pod's node affinity/selector"],
        "tainted": ["node(s) had untolerated taint(s)"],
        "small": ["Too many pods", "Insufficient cpu", "Insufficient memory"],
    }}]  # fmt: skip
    ours = compare.advisor_verdicts(scenario)
    assert compare.compare(scenario, ours, compare.upstream_verdicts(result))[:2] == (1, 1)


@skip_without_go
def test_run_gives_volcanos_device_code_and_its_session(built: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "conformance" / "run"), "--scheduler", "volcano-vgpu",
         str(EXAMPLES[0])],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["upstream"].startswith("volcano.sh/volcano v1.15.1")
    done = subprocess.run(
        [sys.executable, str(REPO / "conformance" / "run"), "--scheduler", "volcano-vgpu",
         "--harness", "volcano", str(EXAMPLES[0])],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["upstream"] == "volcano.sh/volcano v1.14.1"


def test_skip_reason_names_go() -> None:
    reason = harness.go_missing()
    assert reason is None or "go is not on PATH" in reason
