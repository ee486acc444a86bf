"""The §9.1 scenario keys (advisor/scenario/fit.py): read strictly as the API server would
validate them, written back so that the loader reads what the writer wrote."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.core.nodefilters import Allocatable, NodeConstraints, Requirement, Resources, Taint
from advisor.scenario import ScenarioError, load_scenario, save_scenario, scenario_from_data

NODE: dict[str, Any] = {
    "name": "n1",
    "allocatable": {"cpu": "8", "memory": "32Gi", "pods": 110},
    "labels": {"pool": "a100", "rank": "3"},
    "taints": [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}],
    "cards": [{"index": 0, "memory_mib": 16384}],
    "other_pods": [{"name": "web/a", "resources": {"cpu": "500m", "memory": "1Gi"}}],
}
POD: dict[str, Any] = {
    "name": "ml/p",
    "request": {"gpus": 1, "memory_mib": 4096},
    "resources": {"cpu": "2", "memory": "4Gi"},
    "node_selector": {"pool": "a100"},
    "affinity": {
        "node": {
            "required": [
                {"match_expressions": [{"key": "rank", "operator": "Gt", "values": ["2"]}]},
                {"match_fields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
            ]
        }
    },
    "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
}


def scenario() -> dict[str, Any]:
    return {"nodes": [copy.deepcopy(NODE)], "pods": [copy.deepcopy(POD)]}


def with_value(path: str, value: Any) -> dict[str, Any]:
    data = scenario()
    *parents, last = path.split(".")
    target: Any = data
    for key in parents:
        target = target[int(key)] if key.isdigit() else target[key]
    target[int(last) if last.isdigit() else last] = value
    return data


def test_every_key_is_read_into_the_model() -> None:
    cluster = scenario_from_data(scenario(), "s.yaml")
    (node,), (pod,) = cluster.nodes, cluster.pods
    assert node.allocatable == Allocatable(8000, 32 * 2**30, 110)
    assert dict(node.labels) == {"pool": "a100", "rank": "3"}
    assert node.taints == (Taint("dedicated", "NoSchedule", "ml"),)
    assert node.other_pods is not None
    assert node.other_pods[0].resources == Resources(500, 2**30)
    assert pod.resources == Resources(2000, 4 * 2**30)
    c = pod.constraints
    assert c.node_selector == (("pool", "a100"),)
    assert c.required is not None
    assert c.required[0].expressions == (Requirement("rank", "Gt", ("2",)),)
    assert c.required[1].fields == (Requirement("metadata.name", "In", ("n1",)),)
    assert c.tolerations[0].operator == "Exists"


def test_absent_keys_admit_everything() -> None:
    data = {"nodes": [{"name": "n1", "cards": [{"index": 0, "memory_mib": 8192}]}], "pods": []}
    (node,) = scenario_from_data(data, "s.yaml").nodes
    assert node.allocatable == Allocatable()
    assert not node.labels
    assert not node.taints
    assert not node.unschedulable


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_round_trip(tmp_path: Path, suffix: str) -> None:
    first = scenario_from_data(scenario(), "s.yaml")
    path = tmp_path / f"s{suffix}"
    save_scenario(path, first)
    again = load_scenario(path)
    assert again.nodes == first.nodes
    assert dict(again.nodes[0].labels) == {
        "pool": "a100",
        "rank": "3",
    }
    assert [(p.resources, p.constraints) for p in again.pods] == [
        (p.resources, p.constraints) for p in first.pods
    ]


BAD = [
    ("nodes.0.allocatable.cpu", "8x", "nodes[0].allocatable.cpu: '8x' is not a quantity"),
    ("nodes.0.allocatable.memory", "-1Gi", "nodes[0].allocatable.memory: '-1Gi' is negative"),
    ("nodes.0.allocatable.gpus", 8, "nodes[0].allocatable.gpus: unknown key"),
    ("nodes.0.allocatable.cpu", float("nan"), "nodes[0].allocatable.cpu: nan is not a quantity"),
    ("nodes.0.allocatable.pods", 10**30, "nodes[0].allocatable.pods: "),
    ("nodes.0.labels.rank", 3, "nodes[0].labels.rank: expected a string, got an integer"),
    ("nodes.0.labels", ["pool"], "nodes[0].labels: expected a mapping, got a list"),
    ("nodes.0.taints.0.effect", "NoRun", "nodes[0].taints[0].effect: expected one of NoSchedule"),
    ("nodes.0.taints.0.value", 1, "nodes[0].taints[0].value: expected a string"),
    ("nodes.0.unschedulable", "yes", "nodes[0].unschedulable: expected true or false"),
    ("nodes.0.other_pods.0.resources.cpu", "lots", "other_pods[0].resources.cpu: 'lots' is not"),
    ("pods.0.resources.memory", "4Gb", "pods[0].resources.memory: '4Gb' is not a quantity"),
    ("pods.0.node_selector.pool", True, "pods[0].node_selector.pool: expected a string"),
    (
        "pods.0.affinity.node.required.0.match_expressions.0.operator",
        "Like",
        "match_expressions[0].operator: expected one of In, NotIn, Exists",
    ),
    (
        "pods.0.affinity.node.required.0.match_expressions.0.values",
        ["two"],
        "match_expressions[0].values[0]: Gt needs an integer, got 'two'",
    ),
    (
        "pods.0.affinity.node.required.0.match_expressions.0.values",
        ["1_000"],
        "Gt needs an integer, got '1_000'",
    ),
    (
        "pods.0.affinity.node.required.0.match_expressions.0.values",
        [2],
        "match_expressions[0].values[0]: expected a string, got an integer",
    ),
    ("pods.0.affinity.node.required", [], "required: needs at least one term"),
    (
        "pods.0.affinity.node.required.1.match_fields.0.key",
        "metadata.uid",
        "match_fields[0].key: only metadata.name is supported",
    ),
    ("pods.0.tolerations.0.operator", "Matches", "tolerations[0].operator: expected one of"),
    ("pods.0.tolerations.0.effect", "Never", "tolerations[0].effect: expected one of"),
    ("pods.0.tolerations.0.value", "ml", "tolerations[0].value: must be empty when operator"),
    (
        "pods.0.tolerations.0",
        {"operator": "Equal", "value": "ml"},
        "tolerations[0].operator: must be Exists when key is empty",
    ),
]


@pytest.mark.parametrize(("path", "value", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_names_file_place_and_problem(path: str, value: Any, message: str) -> None:
    with pytest.raises(ScenarioError) as err:
        scenario_from_data(with_value(path, value), "s.yaml")
    text = str(err.value)
    assert text.startswith("s.yaml: ")
    assert "\n" not in text
    assert message in text


@pytest.mark.realservices  # xgpu-advisor as a process
def test_cli_exits_2_with_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(with_value("pods.0.resources.cpu", "2 cores")))
    proc = subprocess.run(
        [sys.executable, "-m", "advisor.cli", "diagnose", "--scenario", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stdout == ""
    assert proc.stderr.strip().count("\n") == 0
    assert "pods[0].resources.cpu: '2 cores' is not a quantity" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_constraints_are_hashable_values() -> None:
    # the core caches the static filters' verdicts by a pod's constraints
    (pod,) = scenario_from_data(scenario(), "s.yaml").pods
    assert isinstance(pod.constraints, NodeConstraints)
    assert {pod.constraints: 1}[pod.constraints] == 1


def test_an_other_pods_constraints_are_known_only_when_given(tmp_path: Path) -> None:
    # Without node_selector, affinity or tolerations they are not known (scale-down then
    # judges by the node's taints); `tolerations: []` says "known: none", which is what a
    # snapshot writes for such a pod, so it reads back the same.
    def other_pods(*entries: dict[str, Any]) -> Any:
        node = {"name": "n1", "cards": [{"index": 0, "memory_mib": 1024}]}
        return scenario_from_data({"nodes": [{**node, "other_pods": list(entries)}]}, "s")

    read = other_pods(
        {"name": "web/a"},
        {"name": "web/b", "tolerations": []},
        {"name": "web/c", "node_selector": {"zone": "z1"}},
    )
    given = read.nodes[0].other_pods
    assert given is not None
    a, b, c = given
    assert (a.constraints, b.constraints) == (None, NodeConstraints())
    assert c.constraints == NodeConstraints((("zone", "z1"),))
    path = tmp_path / "s.yaml"
    save_scenario(path, read)
    assert load_scenario(path).nodes == read.nodes
    written = yaml.safe_load(path.read_text())["nodes"][0]["other_pods"]
    assert [sorted(set(o) - {"name", "blocks"}) for o in written] == [
        [],
        ["tolerations"],
        ["node_selector"],
    ]
