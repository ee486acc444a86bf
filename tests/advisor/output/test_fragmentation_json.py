"""Fragmentation's JSON forms (`advisor.output.fragmentation`): the nodes ranked and cut, and
the replay's figures in GPUs, worked out by hand."""

from __future__ import annotations

from typing import Any

from advisor.core.fragmentation import fragmentation
from advisor.core.model import Card, Cluster, Node, Pod, Policy, Request
from advisor.output.fragmentation import fragmentation_json, replay_fragmentation_json
from advisor.replay import replay
from tests.advisor.core.scenario_dicts import GiB, build, node, running


def pending(name: str, gpus: int, gib: int) -> dict[str, Any]:
    return {"name": name, "request": {"gpus": gpus, "memory_mib": gib * GiB, "core_percent": 0}}


def test_json_lists_most_fragmented_nodes_first() -> None:
    cluster = build(
        [node("a", 16), node("b", 16, 16)],
        [running("x/1", "a", [0], 12), running("x/2", "b", [0], 16), pending("x/3", 1, 8)],
    )
    data = fragmentation_json(fragmentation(cluster), node_limit=1)
    assert data["nodes"] == [
        {"node": "a", "free_mib": 4096, "fragment_mib": 4096.0, "stranded_mib": 4096, "ratio": 1.0}
    ]
    assert data["nodes_omitted"] == 1
    assert data["free_mib"] == 20 * GiB


def test_replay_fragmentation_in_gpus() -> None:
    """Two one-card nodes (units of 128 MiB as in the replay): 0.6 and 0.7 of a card arrive,
    then 0.5 finds no room (0.4 and 0.3 free). Shapes: a third each."""
    card = 1000 * 128
    nodes = (Node("n1", (Card(0, card),)), Node("n2", (Card(0, card),)))
    pods = tuple(
        Pod(f"openb/{i}", Request(1, milli * 128)) for i, milli in enumerate((600, 700, 500))
    )
    figures = replay_fragmentation_json(
        fragmentation(replay(Cluster(nodes, pods, Policy())).end_state())
    )
    # 0.6 fits neither node's remainder; 0.7 neither; 0.5 neither: all 0.7 GPUs are fragment.
    assert figures == {
        "free_gpus": 0.7,
        "fragment_gpus": 0.7,
        "fragmentation_ratio": 1.0,
        "stranded_gpus": 0.7,
        "typical_shapes": 3,
    }
