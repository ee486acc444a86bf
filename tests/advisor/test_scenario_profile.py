"""The scenario's `scheduler:` block, each profile's defaults, and re-judging a cluster under
another profile (advisor/scenario/profile.py)."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from advisor.core.model import Policy, Scheduler
from advisor.scenario import ScenarioError, load_scenario, save_scenario, scenario_from_data

HAMI: dict[str, Any] = {
    "scheduler": {"profile": "hami", "weights": {"slot": 1, "core": 1, "memory": 3}},
    "nodes": [
        {
            "name": "n1",
            "cards": [
                {"index": 0, "memory_mib": 8192, "numa": 0, "max_vgpus": 4},
                {"index": 1, "memory_mib": 8192, "numa": 1},
            ],
        }
    ],
    "pods": [
        {"name": "a/whole", "node": "n1", "cards": [0], "request": {"gpus": 1}},
        {"name": "a/share", "request": {"gpus": 1, "memory_percent": 25, "core_percent": 10}},
    ],
}


def hami(path: str | None = None, value: Any = None) -> dict[str, Any]:
    data = copy.deepcopy(HAMI)
    if path is not None:
        *parents, last = path.split(".")
        target: Any = data
        for key in parents:
            target = target[int(key)] if key.isdigit() else target[key]
        target[int(last) if last.isdigit() else last] = value
    return data


def test_defaults_follow_the_profile() -> None:
    cluster = scenario_from_data(hami(), "s.yaml")
    assert cluster.scheduler == Scheduler("hami", weights=(1, 1, 3))
    assert cluster.policy == Policy("binpack", "spread")
    assert cluster.max_vgpus_per_card == 10
    volcano = scenario_from_data(hami("scheduler", {"profile": "volcano-vgpu"}), "s.yaml")
    assert volcano.policy == Policy("binpack", "legacy")
    assert volcano.max_vgpus_per_card == 10
    cce = scenario_from_data({"nodes": HAMI["nodes"]}, "s.yaml")
    assert (cce.scheduler, cce.policy, cce.max_vgpus_per_card) == (Scheduler(), Policy(), 20)


def test_cards_and_requests_of_the_profiles() -> None:
    cluster = scenario_from_data(hami(), "s.yaml")
    assert [(c.numa, c.max_vgpus) for c in cluster.nodes[0].cards] == [(0, 4), (1, None)]
    whole, share = cluster.pods
    assert whole.request.whole_card
    assert (share.request.memory_percent, share.request.core_percent) == (25, 10)


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_round_trip(tmp_path: Path, suffix: str) -> None:
    first = scenario_from_data(hami(), "s.yaml")
    save_scenario(tmp_path / f"s{suffix}", first)
    again = load_scenario(tmp_path / f"s{suffix}")
    assert (again.scheduler, again.policy, again.nodes, again.pods) == (
        first.scheduler,
        first.policy,
        first.nodes,
        first.pods,
    )


BAD = [
    ("scheduler.profile", "kueue", "scheduler.profile: expected one of cce, hami, volcano-vgpu"),
    ("scheduler.schedule_weight", 1, "scheduler.schedule_weight: a volcano-vgpu setting"),
    ("scheduler.weights.memory", 1.5, "scheduler.weights.memory: expected an integer"),
    ("scheduler.weights.memory", float("inf"), "scheduler.weights.memory: expected an integer"),
    ("scheduler.weights.slot", -1, "scheduler.weights.slot: must be at least 0"),
    ("scheduler.weights", {"slot": 0, "core": 0, "memory": 0}, "at least one weight"),
    ("scheduler.weights", {"slot": 1}, "scheduler.weights.core: missing"),
    ("scheduler.default_memory_mib", "1Gi", "scheduler.default_memory_mib: expected an integer"),
    ("policy", {"card": "legacy"}, "policy.card: expected one of binpack, spread under hami"),
    ("pods.1.request.memory_percent", 0, "pods[1].request.memory_percent: must be at least 1"),
    ("pods.1.request.memory_percent", 101, "pods[1].request.memory_percent: must be 1..100"),
    ("nodes.0.cards.0.max_vgpus", 0, "nodes[0].cards[0].max_vgpus: must be at least 1"),
    ("nodes.0.cards.0.numa", -1, "nodes[0].cards[0].numa: must be at least 0"),
    ("nodes.0.cards.0.max_vgpus", 0.5, "nodes[0].cards[0].max_vgpus: expected an integer"),
]


@pytest.mark.parametrize(("path", "value", "message"), BAD, ids=[b[0] for b in BAD])
def test_bad_input_names_file_place_and_problem(path: str, value: Any, message: str) -> None:
    with pytest.raises(ScenarioError) as err:
        scenario_from_data(hami(path, value), "s.yaml")
    text = str(err.value)
    assert text.startswith("s.yaml: ")
    assert "\n" not in text
    assert message in text


def test_a_cce_file_refuses_another_profiles_key() -> None:
    data = {"scheduler": {"weights": {"slot": 1, "core": 1, "memory": 1}}, "nodes": HAMI["nodes"]}
    with pytest.raises(ScenarioError, match=r"scheduler.weights: a hami setting; profile cce"):
        scenario_from_data(data, "s.yaml")


def test_override_rejudges_what_running_pods_hold() -> None:
    # Under cce the running whole-card pod holds the whole 8192 MiB card it has under hami;
    # the Pending share cannot be said under cce and reads invalid.
    cluster = scenario_from_data(hami(), "s.yaml", "cce")
    assert cluster.scheduler == Scheduler()
    assert cluster.policy == Policy("binpack", "binpack")
    assert cluster.max_vgpus_per_card == 20
    whole, share = cluster.pods
    assert (whole.request.memory_mib, whole.request.memory_percent) == (8192, 0)
    assert share.request.memory_percent == 25


def run_diagnose(path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "advisor.cli", "diagnose", "--scenario", str(path), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.realservices  # xgpu-advisor as a process
def test_cli_refuses_an_unknown_profile_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(hami()))
    assert run_diagnose(path).returncode == 0
    proc = run_diagnose(path, "--scheduler", "kueue")
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0, proc.stderr
    assert "kueue" in proc.stderr
    assert "Traceback" not in proc.stderr
