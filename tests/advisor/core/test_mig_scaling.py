"""Scaling advice with MIG pods (docs/design.md §13): scale-down moves a node's MIG pods to
free instances of their profile on the nodes kept, and scale-up proposes nodes of an existing
shape, its MIG cards laid out as they are, for a Pending MIG pod of cause `capacity`."""

from __future__ import annotations

from typing import Any

from advisor.core.diagnose import build_state
from advisor.core.gang import judge
from advisor.core.mig_cycle import MigBook
from advisor.core.model import Placement
from advisor.core.scaling.down import PODS_DO_NOT_FIT, scale_down_advice
from advisor.core.whatif import place_queue
from advisor.scenario import scenario_from_data

A100 = "NVIDIA A100-SXM4-40GB"
SEVEN = [{"profile": "1g.5gb", "start": s} for s in range(7)]


def _mig_node(name: str, *layouts: list[dict[str, Any]], whole: int = 0) -> dict[str, Any]:
    cards: list[dict[str, Any]] = [
        {"index": i, "memory_mib": 40960, "model": A100, "mig": {"instances": layout}}
        for i, layout in enumerate(layouts)
    ]
    cards += [{"index": len(layouts) + i, "memory_mib": 40960, "model": A100} for i in range(whole)]
    return {"name": name, "mig_strategy": "mixed", "cards": cards}


def _bound(name: str, node: str, profile: str, card: int, start: int) -> dict[str, Any]:
    return {
        "name": name,
        "node": node,
        "request": {"gpus": 1, "mig_profile": profile},
        "mig_instances": [{"card": card, "start": start}],
    }


def test_a_node_whose_mig_pods_find_free_instances_elsewhere_may_go() -> None:
    cluster = scenario_from_data(
        {
            "nodes": [_mig_node("m1", SEVEN), _mig_node("m2", SEVEN)],
            "pods": [_bound("ml/a", "m1", "1g.5gb", 0, 0), _bound("ml/b", "m2", "1g.5gb", 0, 3)],
        },
        "t.yaml",
    )
    advice = scale_down_advice(cluster)
    assert [s.node for s in advice.steps] == ["m1"]
    moved = advice.steps[0].moves["ml/a"]
    assert (moved.node, moved.cards) == ("m2", (0,))
    # m2 then holds both pods and m1 is gone: its pods have nowhere to go
    assert [(h.node, h.reason) for h in advice.held] == [("m2", PODS_DO_NOT_FIT)]
    assert "finds no free instance of its profile" in advice.held[0].detail


def test_a_node_whose_mig_pods_find_no_free_instance_stays_and_names_them() -> None:
    # m2's only free instance is a 1g.5gb; m1's pod holds a 3g.20gb, which m2 has none of
    three = [{"profile": "3g.20gb", "start": 0}, {"profile": "1g.5gb", "start": 4}]
    cluster = scenario_from_data(
        {
            "nodes": [_mig_node("m1", three), _mig_node("m2", SEVEN)],
            "pods": [_bound("ml/a", "m1", "3g.20gb", 0, 0), _bound("ml/b", "m2", "1g.5gb", 0, 0)],
        },
        "t.yaml",
    )
    advice = scale_down_advice(cluster)
    held = {h.node: h for h in advice.held}
    assert held["m1"].reason == PODS_DO_NOT_FIT
    assert held["m1"].detail == (
        "ml/a (1 × MIG 3g.20gb) finds no free instance of its profile on the other nodes"
    )
    # m2's 1g pod moves to m1's free 1g.5gb instance
    assert [s.node for s in advice.steps] == ["m2"]
    assert advice.steps[0].moves["ml/b"].node == "m1"


def test_a_pending_mig_pod_keeps_the_instance_a_moved_one_would_take() -> None:
    # m1's pod could move to m2's one free 1g instance, but the Pending ml/p fits there now
    one = [{"profile": "1g.5gb", "start": 0}]
    cluster = scenario_from_data(
        {
            "nodes": [_mig_node("m1", one), _mig_node("m2", one, one)],
            "pods": [
                _bound("ml/a", "m1", "1g.5gb", 0, 0),
                _bound("ml/b", "m2", "1g.5gb", 0, 0),
                {"name": "ml/p", "request": {"gpus": 1, "mig_profile": "1g.5gb"}},
            ],
        },
        "t.yaml",
    )
    assert {d.pod.name: d.cause for d in judge(cluster).pods} == {"ml/p": "schedulable"}
    advice = scale_down_advice(cluster)
    assert not advice.steps
    # re-queued after the Pending pod of its priority, ml/a finds the instance taken
    held = {h.node: h for h in advice.held}
    assert held["m1"].reason == PODS_DO_NOT_FIT
    assert held["m1"].detail.startswith("ml/a (1 × MIG 1g.5gb) finds no free instance")


def test_a_queue_check_never_puts_a_mig_pod_on_a_vgpu_card() -> None:
    # under hami a MIG pod's request reads as a whole card: without the book it must land
    # nowhere, with it on the free instance, never on the whole card 1
    cluster = scenario_from_data(
        {
            "scheduler": {"profile": "hami"},
            "nodes": [_mig_node("m", SEVEN, whole=1)],
            "pods": [{"name": "ml/p", "request": {"gpus": 1, "mig_profile": "1g.5gb"}}],
        },
        "t.yaml",
    )
    state = build_state(cluster)
    assert place_queue(state.copy(), cluster.pending, cluster.policy) == (None,)
    booked = state.copy()
    landed = place_queue(booked, cluster.pending, cluster.policy, MigBook(cluster, booked))
    assert landed == (Placement("m", (0,)),)
