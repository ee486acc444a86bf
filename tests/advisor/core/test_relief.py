"""A pod short only of cpu or memory (`node-resources`) is never proposed a GPU node: the
advice frees what it lacks, by moving other pods off the node its GPUs fit on, or by a node
without GPUs for them to move to. Checked on the demo's vision/train-xl, by scheduling the
cluster after the advised move, and on hand-made clusters."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from advisor.cli import main
from advisor.core.diagnose import diagnose
from advisor.core.model import Cluster
from advisor.core.plan import PlanOptions, plan
from advisor.core.scaling import ScaleUpAdvice, scaling_advice
from advisor.output.scaling import relief_json
from advisor.scenario import load_scenario
from tests.advisor.core.scenario_dicts import GiB, build, running
from tests.realparts import DEMO, REPO

EXAMPLES = sorted((REPO / "advisor" / "examples").glob("*.yaml"))


def advice_of(cluster: Cluster) -> ScaleUpAdvice:
    diagnosis = diagnose(cluster)
    plans = plan(cluster, PlanOptions(time_budget_s=None), diagnosis=diagnosis)
    return scaling_advice(cluster, plans, diagnosis)[0]


def moved(cluster: Cluster, pod: str, source: str, target: str) -> Cluster:
    """The cluster once the other pod `pod` runs on `target` instead of `source`."""
    (leaving,) = [
        p for n in cluster.nodes if n.name == source for p in n.other_pods or () if p.name == pod
    ]
    nodes = []
    for n in cluster.nodes:
        others = tuple(n.other_pods or ())
        if n.name == source:
            others = tuple(p for p in others if p.name != pod)
        if n.name == target:
            others = (*others, leaving)
        nodes.append(dataclasses.replace(n, other_pods=others))
    return dataclasses.replace(cluster, nodes=tuple(nodes))


def test_demo_train_xl_is_freed_by_a_move_not_a_gpu_node() -> None:
    cluster = load_scenario(DEMO)
    ups = advice_of(cluster)
    assert all("vision/train-xl" not in step.pods for step in ups)
    (freed,) = ups.relief
    assert (freed.pod, freed.node, freed.short) == (
        "vision/train-xl",
        "a100-80g-node-1",
        ("Insufficient cpu",),
    )
    ((name, target),) = freed.moves
    assert name.startswith("etl/spark-exec-")
    assert target is not None
    # The advice holds: after that move the pod is schedulable, on the node named.
    after = diagnose(moved(cluster, name, freed.node, target))
    (xl,) = [d for d in after.pods if d.pod.name == "vision/train-xl"]
    assert xl.cause == "schedulable"
    assert xl.placement is not None
    assert xl.placement.node == "a100-80g-node-1"


def gpu_node(name: str, cpu: str, others: list[dict[str, Any]] | None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": name,
        "allocatable": {"cpu": cpu, "memory": "64Gi", "pods": 110},
        "cards": [{"index": 0, "memory_mib": 16 * GiB}],
    }
    if others is not None:
        entry["other_pods"] = others
    return entry


def hungry() -> dict[str, Any]:
    request = {"gpus": 1, "memory_mib": 4 * GiB}
    return {"name": "ml/hungry", "request": request, "resources": {"cpu": "8", "memory": "8Gi"}}


def spark(name: str, cpu: str) -> dict[str, Any]:
    return {"name": name, "resources": {"cpu": cpu, "memory": "4Gi"}}


def test_no_room_elsewhere_asks_for_a_node_without_gpus() -> None:
    """n1's only card has room, but its two CPU pods take 14 of 16 cores; n2 (full card)
    has no spare cpu either. Moving the 6-core pod frees enough, but nowhere can take it:
    a node without GPUs of at least cpu 6, and no GPU node."""
    cluster = build(
        [
            gpu_node("n1", "16", [spark("etl/a", "6"), spark("etl/b", "8")]),
            gpu_node("n2", "4", []),
        ],
        [running("x/full", "n2", [0], 16), hungry()],
    )
    ups = advice_of(cluster)
    assert ups.steps == ()
    (freed,) = ups.relief
    assert freed.moves == (("etl/a", None),)
    assert (freed.cpu_milli, freed.memory_bytes) == (6000, 4 * 2**30)
    assert relief_json(freed)["new_node"] == {"gpus": 0, "cpu": "6", "memory": "4Gi"}
    assert "onto a node without GPUs of at least cpu 6, memory 4Gi" in freed.text


def test_unknown_other_pods_say_what_the_node_lacks() -> None:
    """A scenario without n1's other pods: nothing to name, so the advice says what n1
    lacks for the pod, and still proposes no GPU node."""
    gpu_pod = {**running("x/busy", "n1", [0], 4), "resources": {"cpu": "12"}}
    cluster = build([gpu_node("n1", "16", None)], [gpu_pod, hungry()])
    ups = advice_of(cluster)
    assert ups.steps == ()
    (freed,) = ups.relief
    assert (freed.node, freed.moves) == ("n1", ())
    assert freed.text.startswith("Insufficient cpu on n1, whose other pods are not known")


def test_the_plan_and_report_pages_show_the_move(tmp_path: Path) -> None:
    out = tmp_path / "plan.md"
    assert main(["plan", "--scenario", str(DEMO), "--output", str(out)]) == 0
    text = out.read_text()
    assert "**Pods short of cpu or memory, not of GPUs**" in text
    assert "| vision/train-xl | Insufficient cpu on a100-80g-node-1, where its GPUs fit now: " in (
        text
    )
    scale_up = text.split("## Nodes to add", 1)[1].split("**Pods short", 1)[0]
    assert "vision/train-xl" not in scale_up


@pytest.mark.parametrize("profile", ["cce", "hami", "volcano-vgpu"])
@pytest.mark.parametrize("example", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_scale_up_lists_each_node_shape_once_and_never_for_node_resources(
    example: Path, profile: str
) -> None:
    cluster = load_scenario(example, profile)
    diagnosis = diagnose(cluster)
    ups = advice_of(cluster)
    shapes = [step.shape for step in ups]
    assert len(shapes) == len(set(shapes)), shapes
    short = {d.pod.name for d in diagnosis.pods if d.cause == "node-resources"}
    assert not short & {name for step in ups for name in step.pods}
    assert {r.pod for r in ups.relief} <= short
