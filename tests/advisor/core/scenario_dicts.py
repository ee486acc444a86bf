"""Small scenarios for the core tests, written as the scenario file's data (sizes in GiB)."""

from __future__ import annotations

from typing import Any

from advisor.core.model import Cluster
from advisor.scenario import scenario_from_data

GiB = 1024  # in MiB, the scenario's unit


def build(nodes: list[Any], pods: list[Any], **top: Any) -> Cluster:
    return scenario_from_data({"nodes": nodes, "pods": pods, **top}, "test.yaml")


def node(name: str, *sizes: int, unhealthy: tuple[int, ...] = ()) -> dict[str, Any]:
    cards = [{"index": i, "memory_mib": s * GiB} for i, s in enumerate(sizes)]
    for i in unhealthy:
        cards[i]["healthy"] = False
    return {"name": name, "cards": cards}


def running(name: str, on: str, cards: list[int], gib: int, core: int = 0) -> dict[str, Any]:
    request = {"gpus": len(cards), "memory_mib": gib * GiB, "core_percent": core}
    return {"name": name, "node": on, "cards": cards, "request": request}
