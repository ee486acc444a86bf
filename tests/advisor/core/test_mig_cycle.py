"""MIG pods in the cycle (core.mig_cycle, docs/design.md §13.2), judged as every output
judges them (`core.gang.judge`). Hand cases of issue #26: mixed and single strategies, a node
with MIG and whole cards, geometry (free slices that sit where a profile cannot start), and a
card with MIG disabled behaving as before."""

from __future__ import annotations

from typing import Any

from advisor.core.diagnosis import Diagnosis, PodDiagnosis
from advisor.core.gang import judge
from advisor.scenario import scenario_from_data

A100 = "NVIDIA A100-SXM4-40GB"


def _card(index: int, *instances: tuple[str, int]) -> dict[str, Any]:
    card: dict[str, Any] = {"index": index, "memory_mib": 40960, "model": A100}
    if instances:
        card["mig"] = {"instances": [{"profile": p, "start": s} for p, s in instances]}
    return card


def _bound(name: str, node: str, profile: str, *held: tuple[int, int]) -> dict[str, Any]:
    return {
        "name": name,
        "node": node,
        "request": {"gpus": len(held), "mig_profile": profile},
        "mig_instances": [{"card": c, "start": s} for c, s in held],
    }


def _ask(name: str, profile: str, gpus: int = 1, **extra: Any) -> dict[str, Any]:
    return {"name": name, "request": {"gpus": gpus, "mig_profile": profile}, **extra}


def _judge(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> dict[str, PodDiagnosis]:
    diagnosis: Diagnosis = judge(scenario_from_data({"nodes": nodes, "pods": pods}, "t.yaml"))
    return {d.pod.name: d for d in diagnosis.pods}


SEVEN = [("1g.5gb", s) for s in range(7)]


def test_a_free_instance_of_the_profile_takes_the_pod() -> None:
    nodes = [{"name": "m", "mig_strategy": "mixed", "cards": [_card(0, *SEVEN)]}]
    pods = [_bound("ml/a", "m", "1g.5gb", (0, 0)), _ask("ml/p", "1g.5gb", 2)]
    got = _judge(nodes, pods)["ml/p"]
    assert got.cause == "schedulable"
    assert got.placement is not None
    assert got.placement.node == "m"
    assert got.message == "fits on m (1g.5gb at card 0 slice 1, card 0 slice 2)"


def test_each_pod_sees_the_instances_taken_before_it() -> None:
    nodes = [{"name": "m", "mig_strategy": "mixed", "cards": [_card(0, ("3g.20gb", 0))]}]
    got = _judge(nodes, [_ask("ml/p", "3g.20gb"), _ask("ml/q", "3g.20gb")])
    assert got["ml/p"].cause == "schedulable"
    # the other half of the card (slices 4..7) is unoccupied: a re-partition holds it
    assert got["ml/q"].cause == "mig-geometry"


def test_geometry_when_unoccupied_slices_hold_the_profile_after_a_re_partition() -> None:
    # slices 0 and 1 held; five free 1g instances (2..6) but no free 3g: 4..7 would hold one
    nodes = [{"name": "m", "mig_strategy": "mixed", "cards": [_card(0, *SEVEN)]}]
    pods = [_bound("ml/a", "m", "1g.5gb", (0, 0)), _bound("ml/b", "m", "1g.5gb", (0, 1))]
    got = _judge(nodes, [*pods, _ask("ml/p", "3g.20gb")])["ml/p"]
    assert got.cause == "mig-geometry"
    assert got.reason_counts == (("Insufficient nvidia.com/mig-3g.20gb", 1),)
    assert got.node_reasons == (("m", ("mig-profile: 0 free 3g.20gb instances, 1 needed",)),)
    assert "unoccupied slices for 1 3g.20gb" in got.message


def test_capacity_when_the_free_slices_sit_where_the_profile_cannot_start() -> None:
    # slices 2 and 5 held: five 1g slices free (0, 1, 3, 4, 6) and 7 unoccupied, enough
    # compute for a 3g by count, but 3g.20gb starts only at 0 or 4 and takes four slices
    nodes = [{"name": "m", "mig_strategy": "mixed", "cards": [_card(0, *SEVEN)]}]
    pods = [_bound("ml/a", "m", "1g.5gb", (0, 2)), _bound("ml/b", "m", "1g.5gb", (0, 5))]
    got = _judge(nodes, [*pods, _ask("ml/p", "3g.20gb")])["ml/p"]
    assert got.cause == "capacity"
    assert got.cluster_free_sufficient is None


def test_a_node_of_mig_and_whole_cards_keeps_them_apart() -> None:
    nodes = [{"name": "m", "mig_strategy": "mixed", "cards": [_card(0, ("7g.40gb", 0)), _card(1)]}]
    pods: list[dict[str, Any]] = [
        _bound("ml/a", "m", "7g.40gb", (0, 0)),
        {"name": "v/big", "request": {"gpus": 2, "memory_mib": 8192}},  # two cards: one is MIG
        {"name": "v/one", "request": {"gpus": 1, "memory_mib": 8192}},
        _ask("ml/p", "7g.40gb"),
    ]
    got = _judge(nodes, pods)
    assert got["v/big"].cause == "unsatisfiable"  # the vGPU view has one card on the node
    assert got["v/one"].placement is not None
    assert got["v/one"].placement.cards == (1,)
    # card 1 is no MIG card: no instance, and no re-partition advice for it either
    assert got["ml/p"].cause == "capacity"


def test_single_strategy_counts_the_node_instances_as_gpus() -> None:
    cards = [_card(0, ("3g.20gb", 0), ("3g.20gb", 4)), _card(1, ("3g.20gb", 0), ("3g.20gb", 4))]
    nodes = [{"name": "s", "mig_strategy": "single", "cards": cards}]
    pods = [_bound("ml/a", "s", "3g.20gb", (0, 0), (1, 0)), _ask("ml/p", "3g.20gb", 2)]
    got = _judge(nodes, [*pods, _ask("ml/q", "3g.20gb", 1), _ask("ml/r", "1g.5gb")])
    assert got["ml/p"].cause == "schedulable"
    assert got["ml/q"].cause == "capacity"
    assert got["ml/q"].reason_counts == (("Insufficient nvidia.com/gpu", 1),)
    # a single node advertises its one profile only: never a 1g.5gb
    assert got["ml/r"].cause == "unsatisfiable"


def test_node_filters_still_apply() -> None:
    nodes = [
        {
            "name": "m",
            "mig_strategy": "mixed",
            "cards": [_card(0, ("3g.20gb", 0))],
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": 110},
        }
    ]
    got = _judge(nodes, [_ask("ml/p", "3g.20gb", resources={"cpu": "8"})])["ml/p"]
    assert got.cause == "node-resources"
    assert got.reason_counts == (("Insufficient cpu", 1),)


def test_an_unhealthy_mig_card_offers_nothing() -> None:
    card = {**_card(0, ("3g.20gb", 0)), "healthy": False}
    nodes = [{"name": "m", "mig_strategy": "mixed", "cards": [card]}]
    assert _judge(nodes, [_ask("ml/p", "3g.20gb")])["ml/p"].cause == "capacity"


def test_a_profile_no_card_has_is_unsatisfiable() -> None:
    nodes = [{"name": "m", "mig_strategy": "mixed", "cards": [_card(0, ("3g.20gb", 0))]}]
    got = _judge(nodes, [_ask("ml/p", "3g.40gb")])["ml/p"]  # an 80GB card's profile
    assert got.cause == "unsatisfiable"


def test_a_mig_disabled_card_behaves_as_before() -> None:
    plain = [{"name": "n", "cards": [_card(0), _card(1)]}]
    mixed = [{"name": "n", "mig_strategy": "mixed", "cards": [_card(0), _card(1)]}]
    pods: list[dict[str, Any]] = [
        {"name": "v/a", "node": "n", "cards": [0], "request": {"gpus": 1, "memory_mib": 30000}},
        {"name": "v/b", "request": {"gpus": 2, "memory_mib": 40960}},
        {"name": "v/c", "request": {"gpus": 1, "memory_mib": 8192}},
    ]
    before, after = _judge(plain, pods), _judge(mixed, pods)
    assert {k: (v.cause, v.message, v.placement) for k, v in before.items()} == {
        k: (v.cause, v.message, v.placement) for k, v in after.items()
    }
    assert before["v/b"].cause == "fragmentation"


def _short_of_cpu_and_instances(profile: str) -> PodDiagnosis:
    nodes = [
        {
            "name": "m",
            "mig_strategy": "mixed",
            "cards": [_card(0, ("1g.5gb", 0))],
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": 110},
        }
    ]
    data = {
        "scheduler": {"profile": profile},
        "nodes": nodes,
        "pods": [_ask("ml/p", "3g.20gb", resources={"cpu": "8"})],
    }
    return {d.pod.name: d for d in judge(scenario_from_data(data, "t.yaml")).pods}["ml/p"]


def test_kube_scheduler_names_every_resource_short_the_instances_last() -> None:
    """kubernetes v1.35.3 pkg/scheduler/framework/plugins/noderesources/fit.go, fitsRequest:
    pods, cpu, memory, ephemeral-storage, then each extended resource short as
    fmt.Sprintf("Insufficient %v", rName), all of them; fit_test.go "extended resource
    allocatable enforced" expects getErrReason(extendedResourceA), the same words."""
    got = _short_of_cpu_and_instances("hami")
    assert dict(got.reason_counts) == {
        "Insufficient cpu": 1,
        "Insufficient nvidia.com/mig-3g.20gb": 1,
    }
    assert got.node_reasons == (
        ("m", ("Insufficient cpu", "mig-profile: 0 free 3g.20gb instances, 1 needed")),
    )
    assert got.cause == "capacity"


def test_volcano_names_the_first_resource_short_only() -> None:
    """volcano v1.15.1 pkg/scheduler/api/resource_info.go LessEqualWithResourcesName: cpu,
    memory, then the scalar resources (the MIG instances among them);
    unschedule_info.go WrapInsufficientResourceReason: "Insufficient " + the first."""
    got = _short_of_cpu_and_instances("cce")
    assert got.reason_counts == (("Insufficient cpu", 1),)


def test_a_pod_placed_in_the_cycle_takes_the_room_from_later_pods() -> None:
    # ml/p0 finds no 3g.20gb, but the card's seven free 1g destroyed would hold two:
    # mig-geometry. ml/q then takes five 1g (slices 0-4), so for ml/p1 after it neither 3g
    # start is clear any more: capacity (the room is worked out again once a pod lands)
    nodes = [{"name": "m", "mig_strategy": "mixed", "cards": [_card(0, *SEVEN)]}]
    pods = [
        _ask("ml/p0", "3g.20gb", priority=20),
        _ask("ml/q", "1g.5gb", 5, priority=10),
        _ask("ml/p1", "3g.20gb"),
    ]
    got = {name: d.cause for name, d in _judge(nodes, pods).items()}
    assert got == {"ml/p0": "mig-geometry", "ml/q": "schedulable", "ml/p1": "capacity"}


def test_a_gang_rolled_back_gives_its_room_back_to_later_pods() -> None:
    # the gang ml/g needs both: ml/a takes five 1g (slices 0-4), then ml/c finds no 3g start
    # clear and the gang is rolled back. ml/p after it sees the seven 1g free again, whose
    # slices would hold a 3g: mig-geometry, not capacity
    nodes = [{"name": "m", "mig_strategy": "mixed", "cards": [_card(0, *SEVEN)]}]
    pods = [
        _ask("ml/a", "1g.5gb", 5, priority=10, group="ml/g"),
        _ask("ml/c", "3g.20gb", priority=10, group="ml/g"),
        _ask("ml/p", "3g.20gb"),
    ]
    data = {
        "scheduler": {"profile": "volcano-vgpu"},
        "nodes": nodes,
        "pods": pods,
        "groups": [{"name": "ml/g", "min_member": 2}],
    }
    got = {d.pod.name: d.cause for d in judge(scenario_from_data(data, "t.yaml")).pods}
    assert got["ml/p"] == "mig-geometry"
    assert got["ml/a"] == "gang"
