"""Reachable replicas (docs/design.md §12.2): each cause of a blocked replica, the queue
order the replicas join, the template, and the bounds free capacity sets."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.core.autoscalers import Reach, reach, reachable, template_of
from advisor.core.hpa import owned_by
from advisor.core.model import Card, Cluster, Node
from tests.advisor.core.scenario_dicts import GiB, build, node, running

TARGET = "Deployment/web/infer"


def replica(
    name: str, on: str, cards: list[int], gib: int, core: int = 0, **extra: Any
) -> dict[str, Any]:
    """A running pod of the target (its ReplicaSet owns it, as in a live cluster)."""
    return {**running(name, on, cards, gib, core), "owner": "ReplicaSet/web/infer-7d9f8", **extra}


def pending(name: str, gib: int, priority: int = 0) -> dict[str, Any]:
    request = {"gpus": 1, "memory_mib": gib * GiB}
    return {"name": name, "request": request, "priority": priority}


def hpa(replicas: int = 1, max_replicas: int = 3) -> dict[str, Any]:
    return {
        "name": "web/infer-hpa",
        "target": TARGET,
        "min_replicas": 1,
        "max_replicas": max_replicas,
        "replicas": replicas,
    }


def one(nodes: list[Any], pods: list[Any], **top: Any) -> Reach:
    cluster = build(nodes, pods, autoscalers=[top.pop("autoscaler", hpa())], **top)
    (result,) = reachable(cluster)
    return result


def test_fragmentation_blocks_the_first_replica() -> None:
    # 8 GiB free on n1, split 4 + 4 over two cards
    pods = [replica("web/t", "n0", [0], 8), running("x/a", "n1", [0], 12)]
    pods.append(running("x/b", "n1", [1], 12))
    result = one([node("n0", 8), node("n1", 16, 16)], pods, autoscaler=hpa(1, 2))
    assert (result.placeable, result.status) == (0, "blocked")
    assert result.blocked is not None
    assert result.blocked.cause == "fragmentation"
    assert result.blocked.node_summary == "0/2 nodes are unavailable: 2 card-memory."


def test_cpu_blocks_a_replica_the_cards_would_take() -> None:
    n1 = {**node("n1", 16, 16), "allocatable": {"cpu": "6"}}
    pods = [replica("web/t", "n1", [0], 4, resources={"cpu": "4"})]
    result = one([n1], pods)
    assert result.placeable == 0
    assert result.blocked is not None
    assert result.blocked.cause == "node-resources"
    assert result.blocked.node_summary is not None
    assert "Insufficient cpu" in result.blocked.node_summary


def test_cce_mode_conflict_blocks_a_core_replica() -> None:
    # the only card with room hosts a memory-only pod: a memory+core replica may not join it
    pods = [replica("web/t", "n0", [0], 8, core=50), running("x/a", "n1", [0], 4)]
    result = one([node("n0", 8), node("n1", 16)], pods, autoscaler=hpa(1, 2))
    assert result.placeable == 0
    assert result.blocked is not None
    assert result.blocked.cause == "fragmentation"
    assert (
        result.blocked.node_summary == "0/2 nodes are unavailable: 1 card-memory, 1 mode-conflict."
    )


def test_a_higher_priority_pending_pod_takes_the_room_first() -> None:
    base = [replica("web/t", "n0", [0], 8)]
    nodes = [node("n0", 8), node("n1", 16)]
    free = one(nodes, base)
    assert (free.placeable, free.blocked is not None) == (2, False)
    ahead = one(nodes, [*base, pending("x/p", 16, priority=10)])
    assert ahead.placeable == 0
    assert ahead.blocked is not None
    assert ahead.blocked.cause == "capacity"
    # one of equal priority is ahead too (the replicas join after it); a lower one is not
    assert one(nodes, [*base, pending("x/q", 12)]).placeable == 0
    assert one(nodes, [*base, pending("x/r", 16, priority=-1)]).placeable == 2


def test_reachable_max_places_every_replica_up_to_max() -> None:
    result = one([node("n0", 8), node("n1", 16, 16)], [replica("web/t", "n0", [0], 8)])
    assert (result.placeable, result.blocked, result.status) == (2, None, "reachable")
    beyond = one([node("n0", 8)], [replica("web/t", "n0", [0], 8)], autoscaler=hpa(5, 3))
    assert (beyond.placeable, beyond.blocked) == (0, None)  # already past max: none to add


def test_a_target_without_a_running_pod_is_unknown_template() -> None:
    pods = [{**pending("web/w", 8), "owner": "ReplicaSet/web/infer-7d9f8"}]
    result = one([node("n1", 16)], pods)
    assert (result.template, result.placeable, result.blocked) == (None, None, None)
    assert result.status == "unknown-template"


def test_the_template_is_the_newest_running_pod() -> None:
    pods = [
        replica("web/new", "n1", [0], 8, started="2024-05-02T00:00:00Z"),
        replica("web/old", "n1", [1], 4, started="2024-05-01T00:00:00Z"),
    ]
    cluster = build([node("n1", 16, 16)], pods)
    template = template_of(cluster, TARGET)
    assert template is not None
    assert template.name == "web/new"


def test_the_newest_is_the_last_created_where_creation_is_known() -> None:
    """A pod restarted later (`started`) is not newer than one created after it."""
    pods = [
        replica(
            "web/restarted",
            "n1",
            [0],
            8,
            created="2024-05-01T00:00:00Z",
            started="2024-05-03T00:00:00Z",
        ),
        replica(
            "web/created-later",
            "n1",
            [1],
            4,
            created="2024-05-02T00:00:00Z",
            started="2024-05-02T00:00:10Z",
        ),
    ]
    template = template_of(build([node("n1", 16, 16)], pods), TARGET)
    assert template is not None
    assert template.name == "web/created-later"


def test_a_deployment_owns_its_replicasets_pods_only() -> None:
    assert owned_by("ReplicaSet/web/infer-7d9f8", TARGET)
    assert owned_by(TARGET, TARGET)
    assert not owned_by("ReplicaSet/web/infer-x-7d9f8", TARGET)  # Deployment infer-x's
    assert not owned_by("ReplicaSet/web/infer", TARGET)
    assert not owned_by("StatefulSet/web/infer", TARGET)
    assert not owned_by(None, TARGET)


def test_the_lead_pods_verdicts_stand_without_the_lower_priority_ones() -> None:
    # leaving lower-priority pods out of the trial changes nothing the replicas see
    pods = [replica("web/t", "n0", [0], 8), pending("x/low", 16, priority=-5)]
    cluster = build([node("n0", 8), node("n1", 16)], pods, autoscalers=[hpa()])
    (a,) = cluster.autoscalers
    assert reach(cluster, a).placeable == 2


# -- properties ---------------------------------------------------------------------------

sizes = st.lists(st.sampled_from([8, 16, 24]), min_size=1, max_size=3)


@st.composite
def clusters(draw: st.DrawFn) -> tuple[Cluster, int]:
    """Nodes of random cards, some memory taken by other pods, and a one-card template."""
    layout = draw(st.lists(sizes, min_size=1, max_size=4))
    nodes = [node(f"n{i}", *cards) for i, cards in enumerate(layout)]
    gib = draw(st.integers(1, 8))
    pods: list[Any] = [replica("web/t", "n0", [0], min(gib, layout[0][0]))]
    used = {(0, 0): min(gib, layout[0][0])}
    for i, cards in enumerate(layout):
        for c, size in enumerate(cards):
            take = draw(st.integers(0, size - used.get((i, c), 0)))
            if take:
                pods.append(running(f"x/p{i}-{c}", f"n{i}", [c], take))
    top = draw(st.integers(1, 12))
    return build(nodes, pods, autoscalers=[hpa(1, top)]), pods[0]["request"]["memory_mib"]


@settings(max_examples=60, deadline=None)
@given(clusters())
def test_placeable_stays_within_the_free_memory_and_an_empty_node_never_lowers_it(
    drawn: tuple[Cluster, int],
) -> None:
    cluster, mib = drawn
    (result,) = reachable(cluster)
    assert result.placeable is not None
    held: dict[tuple[str, int], int] = {}
    for pod in cluster.running:
        assert pod.placement is not None
        key = (pod.placement.node, pod.placement.cards[0])
        held[key] = held.get(key, 0) + pod.request.memory_mib
    room = sum(
        (c.memory_mib - held.get((n.name, c.index), 0)) // mib
        for n in cluster.nodes
        for c in n.cards
    )
    assert 0 <= result.placeable <= min(room, cluster.autoscalers[0].headroom)
    empty = Node("empty", (Card(0, 16 * GiB), Card(1, 16 * GiB)))
    (grown,) = reachable(replace(cluster, nodes=(*cluster.nodes, empty)))
    assert grown.placeable is not None
    assert grown.placeable >= result.placeable


@st.composite
def queued(draw: st.DrawFn) -> Cluster:
    """Pending pods of random priorities and shapes beside two targets' running pods."""
    profile = draw(st.sampled_from(["cce", "hami"]))
    layout = draw(st.lists(sizes, min_size=1, max_size=3))
    nodes = [node(f"n{i}", *cards) for i, cards in enumerate(layout)]
    pods: list[Any] = []
    autoscalers = []
    for t in range(2):
        gib = draw(st.integers(1, layout[0][0] // 2))
        owner = {"owner": f"Deployment/web/app{t}", "priority": draw(st.integers(-1, 1))}
        pods.append({**running(f"web/app{t}-0", "n0", [0], gib), **owner})
        headroom = draw(st.integers(0, 6))
        autoscalers.append(
            {
                "name": f"web/hpa{t}",
                "target": f"Deployment/web/app{t}",
                "max_replicas": 1 + headroom,
            }
            | {"replicas": 1}
        )
    for i in range(draw(st.integers(0, 5))):
        pods.append(pending(f"x/p{i}", draw(st.integers(1, 16)), draw(st.integers(-1, 1))))
    scheduler = {"profile": profile}
    return build(nodes, pods, autoscalers=autoscalers, scheduler=scheduler)


def assert_one_cycle_agrees(cluster: Cluster) -> None:
    """`reachable`'s one-cycle path gives what a judged cycle per autoscaler (`reach`) does."""
    fast = reachable(cluster)
    slow = tuple(reach(cluster, a) for a in cluster.autoscalers)
    assert [(r.placeable, r.blocked) for r in fast] == [(r.placeable, r.blocked) for r in slow]


@settings(max_examples=60, deadline=None)
@given(queued())
def test_the_one_cycle_path_agrees_with_a_judged_cycle_per_autoscaler(cluster: Cluster) -> None:
    assert_one_cycle_agrees(cluster)


@st.composite
def alike_targets(draw: st.DrawFn) -> Cluster:
    """Targets whose templates often match (size, priority), with headrooms in random
    order: the one-cycle path judges each kind of template once and reuses the run."""
    profile = draw(st.sampled_from(["cce", "hami"]))
    layout = draw(st.lists(sizes, min_size=1, max_size=3))
    nodes = [node(f"n{i}", *cards) for i, cards in enumerate(layout)]
    pods: list[Any] = []
    autoscalers = []
    for t in range(draw(st.integers(2, 5))):
        gib = draw(st.sampled_from([2, 4]))
        owner = {"owner": f"Deployment/web/app{t}", "priority": draw(st.integers(0, 1))}
        nodes.append(node(f"t{t}", gib))  # the template's card, full
        pods.append({**running(f"web/app{t}-0", f"t{t}", [0], gib), **owner})
        top = 1 + draw(st.integers(0, 8))
        autoscalers.append(
            hpa(1, top) | {"name": f"web/hpa{t}", "target": f"Deployment/web/app{t}"}
        )
    for i in range(draw(st.integers(0, 4))):
        pods.append(pending(f"x/p{i}", draw(st.integers(1, 8)), draw(st.integers(0, 1))))
    return build(nodes, pods, autoscalers=autoscalers, scheduler={"profile": profile})


@settings(max_examples=80, deadline=None)
@given(alike_targets())
def test_templates_alike_share_a_run_and_agree_with_a_judged_cycle_each(cluster: Cluster) -> None:
    assert_one_cycle_agrees(cluster)


def test_under_the_job_layer_each_autoscaler_is_judged_whole() -> None:
    # volcano-vgpu runs enqueue: the replicas go through the judged cycle itself, whose
    # enqueue holds the replica before any node is tried (the cluster is overcommitted)
    base = [replica("web/t", "n0", [0], 8)]
    nodes = [node("n0", 8), node("n1", 16)]
    top = {"scheduler": {"profile": "volcano-vgpu"}}
    assert one(nodes, base, **top).placeable == 2
    ahead = one(nodes, [*base, pending("x/p", 16, priority=10)], **top)
    assert ahead.placeable == 0
    assert ahead.blocked is not None
    assert ahead.blocked.cause == "queue"
    assert "overused" in ahead.blocked.message
    assert ahead.blocked.node_summary is None
