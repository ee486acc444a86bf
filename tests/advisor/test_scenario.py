"""Scenario files: strict loading with one clear message, round trips, atomic writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.core.model import Placement, Policy
from advisor.scenario import ScenarioError, load_scenario, save_scenario, scenario_from_data

EXAMPLE = Path(__file__).resolve().parents[2] / "advisor" / "examples" / "demo.yaml"


def base() -> dict[str, Any]:
    return {
        "nodes": [
            {
                "name": "n1",
                "cards": [{"index": 0, "memory_mib": 16384}, {"index": 1, "memory_mib": 16384}],
            }
        ],
        "pods": [
            {
                "name": "a/run",
                "node": "n1",
                "cards": [0],
                "request": {"gpus": 1, "memory_mib": 8192},
            },
            {"name": "a/wait", "request": {"gpus": 2, "memory_mib": 4096}},
        ],
    }


def test_example_loads_with_defaults() -> None:
    cluster = load_scenario(EXAMPLE)
    assert cluster.policy == Policy("binpack", "binpack")
    assert cluster.max_vgpus_per_card == 20
    assert len(cluster.nodes) == 6
    assert cluster.pods[0].placement == Placement("cce-node-1", (0,))
    assert not cluster.nodes[1].cards[3].healthy
    (mig,) = [n for n in cluster.nodes if n.mig_strategy != "none"]
    assert (mig.name, mig.mig_strategy) == ("mig-node-1", "mixed")
    assert [(i.profile, i.start) for i in mig.cards[0].mig or ()] == [
        ("3g.40gb", 0), ("2g.20gb", 4), ("1g.10gb", 6),
    ]  # fmt: skip


def mutate(path: str, value: Any) -> dict[str, Any]:
    data = base()
    target: Any = data
    keys = path.split(".")
    for key in keys[:-1]:
        target = target[int(key)] if key.isdigit() else target[key]
    last = keys[-1]
    if value is DELETE:
        del target[int(last) if last.isdigit() else last]
    elif last.isdigit():
        target[int(last)] = value
    else:
        target[last] = value
    return data


DELETE = object()

BAD = [
    ("colour", "blue", "colour: unknown key"),
    ("nodes.0.gpus", 8, "nodes[0].gpus: unknown key"),
    ("pods.0.request.memory", 1, "pods[0].request.memory: unknown key"),
    ("nodes", {"n1": 1}, "nodes: expected a list, got a mapping"),
    (
        "nodes.0.cards.0.memory_mib",
        "16Gi",
        "nodes[0].cards[0].memory_mib: expected an integer, got the string '16Gi'",
    ),
    ("nodes.0.cards.0.memory_mib", 0, "nodes[0].cards[0].memory_mib: must be at least 1, got 0"),
    ("nodes.0.cards.0.memory_mib", True, "expected an integer, got a boolean"),
    ("nodes.0.cards.0.healthy", "yes", "nodes[0].cards[0].healthy: expected true or false"),
    ("nodes.0.cards.1.index", 0, "nodes[0].cards[1].index: duplicate card index 0"),
    ("nodes.0.cards", [], "nodes[0].cards: a node needs at least one card"),
    ("pods.1.request.gpus", 0, "pods[1].request.gpus: must be at least 1, got 0"),
    ("pods.1.request.memory_mib", -5, "pods[1].request.memory_mib: must be at least 1, got -5"),
    ("pods.1.request.core_percent", -10, "pods[1].request.core_percent: must be at least 0"),
    ("pods.1.name", "a/run", "pods[1].name: duplicate pod name 'a/run'"),
    ("pods.1.name", "nonamespace", "pods[1].name: expected namespace/pod"),
    ("pods.0.node", "n9", "pods[0].node: unknown node 'n9'"),
    ("pods.0.cards", [7], "pods[0].cards[0]: node 'n1' has no card 7"),
    ("pods.0.cards", [0, 1], "pods[0].cards: expected 1 distinct card indices, got [0, 1]"),
    ("pods.0.cards", DELETE, "pods[0]: a running pod needs both node and cards"),
    (
        "pods.0.request.memory_mib",
        20480,
        "pods[0]: overflows n1 card 0: 20480 MiB allotted of 16384",
    ),
    ("policy", {"node": "random"}, "policy.node: expected one of binpack, spread"),
    ("max_vgpus_per_card", 0, "max_vgpus_per_card: must be at least 1"),
    ("pods.0.annotations", {"a": 1}, "pods[0].annotations.a: annotations map strings to strings"),
]


@pytest.mark.parametrize(("path", "value", "message"), BAD, ids=[b[2][:40] for b in BAD])
def test_bad_input_is_rejected_with_location(path: str, value: Any, message: str) -> None:
    with pytest.raises(ScenarioError) as err:
        scenario_from_data(mutate(path, value), "s.yaml")
    assert str(err.value).startswith("s.yaml: ")
    assert message in str(err.value)


def test_card_mixing_modes_is_rejected() -> None:
    data = base()
    data["pods"].append(
        {
            "name": "a/core",
            "node": "n1",
            "cards": [0],
            "request": {"memory_mib": 1024, "core_percent": 10},
        }
    )
    with pytest.raises(
        ScenarioError, match=r"pods\[2\]: n1 card 0 would mix memory and memory\+core"
    ):
        scenario_from_data(data, "s.yaml")


def test_core_overflow_and_vgpu_limit_are_rejected() -> None:
    data = base()
    data["pods"][0]["request"]["core_percent"] = 60
    data["pods"].append(
        {
            "name": "a/core",
            "node": "n1",
            "cards": [0],
            "request": {"memory_mib": 1024, "core_percent": 50},
        }
    )
    with pytest.raises(ScenarioError, match="more than 100% core"):
        scenario_from_data(data, "s.yaml")
    data = base()
    data["max_vgpus_per_card"] = 1
    data["pods"].append(
        {"name": "a/two", "node": "n1", "cards": [0], "request": {"memory_mib": 1024}}
    )
    with pytest.raises(ScenarioError, match="hosts 2 vGPUs, limit 1"):
        scenario_from_data(data, "s.yaml")


def test_yaml_syntax_error_names_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("nodes:\n  - name: n1\n    cards: [\n")
    with pytest.raises(ScenarioError, match=r"bad\.yaml: line \d+ column \d+"):
        load_scenario(bad)


def test_json_scenarios_and_missing_file(tmp_path: Path) -> None:
    good = tmp_path / "s.json"
    good.write_text(json.dumps(base()))
    assert len(load_scenario(good).pods) == 2
    broken = tmp_path / "b.json"
    broken.write_text('{"nodes": [}')
    with pytest.raises(ScenarioError, match=r"b\.json: line 1 column 12"):
        load_scenario(broken)
    with pytest.raises(ScenarioError, match="No such file"):
        load_scenario(tmp_path / "absent.yaml")


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_round_trip(tmp_path: Path, suffix: str) -> None:
    cluster = load_scenario(EXAMPLE)
    out = tmp_path / f"copy{suffix}"
    save_scenario(out, cluster)
    assert load_scenario(out) == cluster
    assert [p.annotations for p in load_scenario(out).pods] == [p.annotations for p in cluster.pods]
    assert out.stat().st_mode & 0o044  # readable by others, unlike mkstemp's default
    assert yaml.safe_load(out.read_text())["policy"] == {"node": "binpack", "card": "binpack"}


def test_unreadable_pending_request_round_trips_as_invalid(tmp_path: Path) -> None:
    data = base()
    data["pods"].append({"name": "a/broken", "invalid": "label volcano.sh/gpu-num 'two'"})
    cluster = scenario_from_data(data, "s.yaml")
    broken = cluster.pods[-1]
    assert broken.invalid == "label volcano.sh/gpu-num 'two'"
    out = tmp_path / "s.yaml"
    save_scenario(out, cluster)
    assert load_scenario(out) == cluster
    data["pods"][-1] = {"name": "a/broken", "invalid": "x", "node": "n1", "cards": [0]}
    with pytest.raises(ScenarioError, match="only a Pending pod can have an unreadable request"):
        scenario_from_data(data, "s.yaml")
    data["pods"][-1] = {"name": "a/broken"}
    with pytest.raises(ScenarioError, match=r"pods\[2\]\.request: missing"):
        scenario_from_data(data, "s.yaml")


def with_other_pods(*others: Any) -> dict[str, Any]:
    data = base()
    data["nodes"][0]["other_pods"] = list(others)
    data["nodes"].append({"name": "n2", "cards": [{"index": 0, "memory_mib": 16384}]})
    return data


BAD_OTHER_PODS = [
    ({"name": "a/x", "owner": "y"}, "nodes[0].other_pods[0].owner: unknown key"),
    ({"blocks": "kube-system pod"}, "nodes[0].other_pods[0].name: missing"),
    ({"name": "x"}, "nodes[0].other_pods[0].name: expected namespace/pod, got 'x'"),
    (
        {"name": "a/x", "blocks": 3},
        "other_pods[0].blocks: expected a reason or null, got an integer",
    ),
    (
        {"name": "a/x", "blocks": ""},
        "other_pods[0].blocks: expected a reason or null, got the string ''",
    ),
    ({"name": "a/run"}, "nodes[0].other_pods[0].name: 'a/run' is also listed under pods"),
    ("a/x", "nodes[0].other_pods[0]: expected a mapping, got the string 'a/x'"),
]


@pytest.mark.parametrize(("entry", "message"), BAD_OTHER_PODS, ids=[b[1] for b in BAD_OTHER_PODS])
def test_bad_other_pods_are_rejected_with_location(entry: Any, message: str) -> None:
    with pytest.raises(ScenarioError) as err:
        scenario_from_data(with_other_pods(entry), "s.yaml")
    assert str(err.value).startswith("s.yaml: nodes[0].")
    assert message in str(err.value)


def test_other_pods_must_be_a_list_and_unique() -> None:
    data = base()
    data["nodes"][0]["other_pods"] = {"a/x": None}
    with pytest.raises(ScenarioError, match=r"nodes\[0\]\.other_pods: expected a list"):
        scenario_from_data(data, "s.yaml")
    data = with_other_pods({"name": "a/x"})
    data["nodes"][1]["other_pods"] = [{"name": "a/y"}, {"name": "a/x"}]
    with pytest.raises(
        ScenarioError, match=r"nodes\[1\]\.other_pods\[1\]\.name: duplicate other pod name 'a/x'"
    ):
        scenario_from_data(data, "s.yaml")


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_other_pods_round_trip(tmp_path: Path, suffix: str) -> None:
    """Known (a list, maybe empty) and not known (no key) stay apart through a file."""
    data = with_other_pods({"name": "a/web"}, {"name": "kube-system/dns", "blocks": "kube-system"})
    data["nodes"][1]["other_pods"] = []
    cluster = scenario_from_data(data, "s.yaml")
    n1 = cluster.nodes[0]
    assert n1.other_pods is not None
    assert [(p.name, p.blocks) for p in n1.other_pods] == [
        ("a/web", None),
        ("kube-system/dns", "kube-system"),
    ]
    assert cluster.nodes[1].other_pods == ()
    out = tmp_path / f"s{suffix}"
    save_scenario(out, cluster)
    assert load_scenario(out) == cluster
    written = yaml.safe_load(out.read_text())["nodes"]
    assert written[0]["other_pods"][0] == {"name": "a/web", "blocks": None}
    save_scenario(out, scenario_from_data(base(), "s.yaml"))
    assert "other_pods" not in yaml.safe_load(out.read_text())["nodes"][0]
    assert load_scenario(out).nodes[0].other_pods is None
