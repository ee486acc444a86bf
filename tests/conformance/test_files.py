"""Scenario files as the harnesses read them (conformance/files.py): MIG kept for
kube-scheduler's where it models the strategy, gone for the others."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.scenario import parse_text, scenario_from_data
from conformance.files import read_scenario, with_mig, without_mig

DEMO = Path(__file__).resolve().parents[2] / "advisor" / "examples" / "demo.yaml"


def test_the_demos_mig_node_and_pods_leave_and_nothing_else() -> None:
    raw: Any = parse_text(DEMO.read_text(), str(DEMO))
    read = read_scenario(DEMO)
    mig_nodes = {n["name"] for n in raw["nodes"] if any("mig" in c for c in n["cards"])}
    assert mig_nodes  # the demo has a MIG node (it is what this test is about)
    assert {n["name"] for n in read["nodes"]} == {n["name"] for n in raw["nodes"]} - mig_nodes
    mig_pods = {
        p["name"]
        for p in raw["pods"]
        if "mig_profile" in p.get("request", {}) or p.get("node") in mig_nodes
    }
    assert mig_pods
    assert {p["name"] for p in read["pods"]} == {p["name"] for p in raw["pods"]} - mig_pods
    scenario_from_data(read, "demo")  # still a scenario the advisor reads


def test_a_node_keeping_a_vgpu_card_keeps_it_and_loses_only_the_mig_card() -> None:
    data: dict[str, Any] = {
        "nodes": [
            {
                "name": "n",
                "mig_strategy": "mixed",
                "cards": [
                    {"index": 0, "memory_mib": 81920, "model": "x"},
                    {"index": 1, "memory_mib": 81920, "mig": {"instances": []}},
                ],
            }
        ],
        "pods": [{"name": "a/p", "node": "n", "cards": [0], "request": {"memory_mib": 1}}],
    }
    out = without_mig(data)
    assert out["nodes"] == [
        {"name": "n", "cards": [{"index": 0, "memory_mib": 81920, "model": "x"}]}
    ]
    assert out["pods"] == data["pods"]


def test_the_kube_harness_keeps_the_demos_mixed_mig_node() -> None:
    raw: Any = parse_text(DEMO.read_text(), str(DEMO))
    assert read_scenario(DEMO, mig=True) == raw  # mixed: every MIG card and pod kept


def test_a_single_strategy_node_loses_its_mig_with_mig_and_a_pending_mig_pod_stays() -> None:
    """Under single the plugin names the instances nvidia.com/gpu (no upstream meaning in
    the kube harness): that node loses them and the pod bound there; the mixed node keeps
    its own and its pod, and the Pending MIG pod stays, asking the mixed node's."""
    inst = {"instances": [{"profile": "1g.10gb", "start": 0, "size": 1}]}
    card = {"index": 0, "memory_mib": 81920, "model": "A100-SXM4-80GB", "mig": inst}
    bound = {"request": {"mig_profile": "1g.10gb"}, "mig_instances": [{"card": 0, "start": 0}]}
    data: dict[str, Any] = {
        "nodes": [
            {"name": "s", "mig_strategy": "single", "cards": [card, {"index": 1, "memory_mib": 1}]},
            {"name": "x", "mig_strategy": "mixed", "cards": [card]},
        ],
        "pods": [
            {"name": "a/on-s", "node": "s", **bound},
            {"name": "a/on-x", "node": "x", **bound},
            {"name": "a/wait", "request": {"mig_profile": "1g.10gb"}},
        ],
    }
    out = with_mig(data)
    assert out["nodes"] == [
        {"name": "s", "cards": [{"index": 1, "memory_mib": 1}]},
        data["nodes"][1],
    ]
    assert [p["name"] for p in out["pods"]] == ["a/on-x", "a/wait"]
    assert [p["name"] for p in without_mig(data)["pods"]] == []
