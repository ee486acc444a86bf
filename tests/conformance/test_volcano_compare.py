"""The volcano-vgpu comparison on an answer worked out by hand from Volcano v1.15.1's code
(kept beside the harness run: docs/conformance.md)."""

from __future__ import annotations

from typing import Any

from conformance.volcano_compare import advisor_side, differences

# Two identical nodes, legacy card order (no deviceshare.SchedulePolicy: vgpu/utils.go walks
# the cards from the last), weight 0: every fitting node scores 0 and ties.
SCENARIO: dict[str, Any] = {
    "scheduler": {"profile": "volcano-vgpu"},
    "nodes": [
        {"name": "b", "cards": [{"index": k, "memory_mib": 16384} for k in (0, 1)]},
        {"name": "a", "cards": [{"index": k, "memory_mib": 16384} for k in (0, 1)]},
    ],
    "pods": [
        {"name": "ml/one", "request": {"gpus": 1, "memory_mib": 4096}},
        {"name": "ml/big", "request": {"gpus": 1, "memory_mib": 32768}},
    ],
}  # fmt: skip
UPSTREAM: dict[str, Any] = {
    "pods": [
        {"pod": "ml/one", "node": "a", "cards": [1], "reason": None, "tied": ["a", "b"]},
        {"pod": "ml/big", "node": None, "cards": None, "reason": "0/2 nodes are unavailable"},
    ]
}


def test_the_advisor_agrees_with_the_worked_answer() -> None:
    assert differences(advisor_side(SCENARIO), UPSTREAM) == []


def test_each_kind_of_difference_is_named() -> None:
    ours = advisor_side(SCENARIO)
    moved = {"pods": [{**UPSTREAM["pods"][0], "node": "c", "tied": ["c"]}]}
    assert differences(ours, moved) == ["ml/one: advisor node a, upstream one of ['c']"]
    cards = {"pods": [{**UPSTREAM["pods"][0], "cards": [0]}]}
    assert differences(ours, cards) == ["ml/one: advisor cards [1], upstream [0]"]
    placed = {"pods": [{**UPSTREAM["pods"][1], "node": "a", "cards": [0]}]}
    assert differences(ours, placed) == ["ml/big: advisor unsatisfiable, upstream on a"]
