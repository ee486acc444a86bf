"""Scaling advice with MIG pods (docs/design.md §13): scale-down moves a node's MIG pods to
free instances of their profile on the nodes kept, and scale-up proposes nodes of an existing
shape, its MIG cards laid out as they are, for a Pending MIG pod of cause `capacity`."""

from __future__ import annotations

from typing import Any

from advisor.core.gang import judge
from advisor.core.mig_cycle import MigBook
from advisor.core.mig_partition import search
from advisor.core.model import Cluster, Placement
from advisor.core.occupancy import build_state
from advisor.core.remedy import Remedy, remedies
from advisor.core.scaling.down import PODS_DO_NOT_FIT, node_utilisation, scale_down_advice
from advisor.core.scaling.templates import NOT_TRIGGERED, NodeShape
from advisor.core.scaling.up import scale_up_advice, with_new_nodes
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
    # m2's free instances are all 1g.5gb; m1's pod holds a 3g.20gb, which m2 has none of
    three = [{"profile": "3g.20gb", "start": 0}, {"profile": "1g.5gb", "start": 4}]
    cluster = scenario_from_data(
        {
            "nodes": [_mig_node("m1", three), _mig_node("m2", SEVEN)],
            "pods": [_bound("ml/a", "m1", "3g.20gb", 0, 0), _bound("ml/b", "m2", "1g.5gb", 0, 0)],
        },
        "t.yaml",
    )
    # a MIG card's use is the slices its held instances take: half of m1's card, an eighth
    # of m2's
    assert node_utilisation(cluster) == {"m1": 0.5, "m2": 0.125}
    assert [h.node for h in scale_down_advice(cluster).held] == []  # m2 goes, m1 not idle
    advice = scale_down_advice(cluster, threshold=0.7)  # m1 at 0.625 once m2's pod moves
    held = {h.node: h for h in advice.held}
    assert held["m1"].reason == PODS_DO_NOT_FIT
    assert held["m1"].detail == (
        "ml/a (1 × MIG 3g.20gb) finds no free instance of its profile on the other nodes"
        " (and 1 more GPU pod)"  # ml/b, moved there from m2
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


def _ask(name: str, profile: str, gpus: int = 1, **extra: Any) -> dict[str, Any]:
    return {"name": name, "request": {"gpus": gpus, "mig_profile": profile}, **extra}


def _full_node(name: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A node of one A100 cut in seven 1g.5gb, every one held."""
    pods = [_bound(f"ml/{name}-{s}", name, "1g.5gb", 0, s) for s in range(7)]
    return _mig_node(name, SEVEN), pods


def test_a_capacity_mig_pod_gets_nodes_of_the_shape_that_offers_its_profile() -> None:
    full, held = _full_node("m1")
    halves = [{"profile": "3g.20gb", "start": 0}, {"profile": "3g.20gb", "start": 4}]
    half = _mig_node("m2", halves)
    pods = [*held, _bound("ml/h", "m2", "3g.20gb", 0, 0), _bound("ml/i", "m2", "3g.20gb", 0, 4)]
    wanted = [_ask(f"ml/p{i}", "1g.5gb") for i in range(9)] + [_ask("ml/q", "3g.20gb")]
    cluster = scenario_from_data({"nodes": [full, half], "pods": pods + wanted}, "t.yaml")
    causes = {d.pod.name: d.cause for d in judge(cluster).pods}
    assert set(causes.values()) == {"capacity"}
    advice = scale_up_advice(cluster)
    assert not advice.not_triggered
    by_profile = {
        tuple(i.profile for i in (step.shape.mig[0] or ())): step for step in advice.steps
    }
    seven = by_profile[("1g.5gb",) * 7]
    # nine 1g pods on new nodes of seven free 1g instances each: two nodes
    assert (seven.nodes, seven.verified, seven.new_shape) == (2, True, False)
    assert seven.packed_estimate == 2  # the estimator's own count, before the check
    assert set(seven.pods) == {f"ml/p{i}" for i in range(9)}
    three = by_profile[("3g.20gb", "3g.20gb")]
    assert (three.nodes, three.pods, three.shape.mig_strategy) == (1, ("ml/q",), "mixed")
    # the nodes proposed, added, hold every Pending pod (judged independently)
    grown = with_new_nodes(cluster, advice.steps)
    assert {d.cause for d in judge(grown).pods} == {"schedulable"}


def test_a_mig_pod_no_shape_offers_its_profile_to_is_not_triggered() -> None:
    full, held = _full_node("m1")
    cluster = scenario_from_data(
        {"nodes": [full], "pods": [*held, _ask("ml/q", "3g.20gb")]}, "t.yaml"
    )
    assert {d.pod.name: d.cause for d in judge(cluster).pods} == {"ml/q": "capacity"}
    advice = scale_up_advice(cluster)
    assert not advice.steps
    assert [(n.pod, n.reason) for n in advice.not_triggered] == [
        ("ml/q", f"{NOT_TRIGGERED}: 1 Insufficient nvidia.com/mig-3g.20gb")
    ]


def test_a_vgpu_pod_counts_only_the_cards_out_of_mig_mode() -> None:
    # m: one MIG card, one whole card; a two-card vGPU pod needs a new shape, not m's
    node = _mig_node("m", SEVEN, whole=1)
    pods = [
        {"name": "v/a", "node": "m", "cards": [1], "request": {"gpus": 1, "memory_mib": 40960}},
        {"name": "v/b", "request": {"gpus": 2, "memory_mib": 20480}},
    ]
    cluster = scenario_from_data({"nodes": [node], "pods": pods}, "t.yaml")
    shape = NodeShape.of(cluster.nodes[0])
    assert (shape.cards, shape.vgpu_cards, shape.memory_mib) == (2, 1, 40960)
    advice = scale_up_advice(cluster)
    assert [(s.new_shape, s.shape.cards, s.shape.mig) for s in advice.steps] == [(True, 2, ())]


def test_a_moved_mig_pod_holds_its_new_instance_for_the_next_removal() -> None:
    # m1's pod takes m3's one free instance; m2's pod then finds none left
    one = [{"profile": "1g.5gb", "start": 0}]
    two = [{"profile": "1g.5gb", "start": 0}, {"profile": "1g.5gb", "start": 1}]
    cluster = scenario_from_data(
        {
            "nodes": [_mig_node("m1", one), _mig_node("m2", one), _mig_node("m3", two)],
            "pods": [
                _bound("ml/a", "m1", "1g.5gb", 0, 0),
                _bound("ml/b", "m2", "1g.5gb", 0, 0),
                _bound("ml/c", "m3", "1g.5gb", 0, 0),
            ],
        },
        "t.yaml",
    )
    advice = scale_down_advice(cluster)
    assert [s.node for s in advice.steps] == ["m1"]
    assert advice.steps[0].moves["ml/a"] == Placement("m3", (0,))
    held = {h.node: h.reason for h in advice.held}
    assert held == {"m2": PODS_DO_NOT_FIT, "m3": PODS_DO_NOT_FIT}


def _geometry_cluster(*pending: dict[str, Any], cards: int) -> Cluster:
    """Node m: `cards` A100s cut in seven 1g.5gb, the one at slice 0 held on each; node h:
    one A100 cut in two 3g.20gb, both held (a group whose new nodes offer 3g.20gb)."""
    halves = [{"profile": "3g.20gb", "start": 0}, {"profile": "3g.20gb", "start": 4}]
    held = [_bound(f"ml/m{i}", "m", "1g.5gb", i, 0) for i in range(cards)]
    held += [_bound("ml/h0", "h", "3g.20gb", 0, 0), _bound("ml/h1", "h", "3g.20gb", 0, 4)]
    nodes = [_mig_node("m", *([SEVEN] * cards)), _mig_node("h", halves)]
    return scenario_from_data({"nodes": nodes, "pods": held + list(pending)}, "t.yaml")


def _decided(cluster: Cluster) -> tuple[Remedy, ...]:
    diagnosis = judge(cluster)
    found = search(cluster, diagnosis)
    return remedies(diagnosis, repartitions={r.pod: r for r in found.repartitions})


def test_a_mig_pod_with_no_re_partition_gets_nodes_that_offer_its_profile() -> None:
    # two 3g fit only over m's two cards re-partitioned, which keeps eight 1g of fourteen:
    # ml/q, queued after it, takes ten of m's twelve free 1g and would wait, so no
    # re-partition is verified and h's shape (two 3g) is proposed
    wanted = _ask("ml/p", "3g.20gb", 2, priority=10)
    cluster = _geometry_cluster(wanted, _ask("ml/q", "1g.5gb", 10), cards=2)
    decided = _decided(cluster)
    assert [(r.pod, r.advice, r.scale_up) for r in decided] == [
        ("ml/p", "mig-no-repartition", True),
        ("ml/q", "schedulable", False),
    ]
    advice = scale_up_advice(cluster, decided=decided)
    assert not advice.not_triggered
    (step,) = advice.steps
    assert (step.nodes, step.pods, step.verified) == (1, ("ml/p",), True)
    assert [i.profile for i in step.shape.mig[0] or ()] == ["3g.20gb", "3g.20gb"]


def test_a_mig_pod_its_re_partition_places_gets_no_node() -> None:
    cluster = _geometry_cluster(_ask("ml/p", "3g.20gb"), cards=1)
    decided = _decided(cluster)
    assert [(r.advice, r.scale_up) for r in decided] == [("mig-geometry", False)]
    assert decided[0].repartition is not None
    assert not scale_up_advice(cluster, decided=decided).steps
    # the remedies decide it: without the re-partition found, h's shape would be proposed
    assert [s.pods for s in scale_up_advice(cluster).steps] == [("ml/p",)]
