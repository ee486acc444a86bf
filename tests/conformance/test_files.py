"""Scenario files as the harnesses read them (conformance/files.py): MIG leaves both sides."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from advisor.scenario import parse_text, scenario_from_data
from conformance.files import read_scenario, without_mig

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
