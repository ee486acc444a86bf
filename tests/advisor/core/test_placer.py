"""`QueuePlacer` against `CardState.place`: the same cards and the same tied count for every
pod of a queue placed in a row, under every profile, its settings and both policies.

The placer judges again only the nodes bound since it last looked at a shape; a pick it got
wrong would place a pod elsewhere, or count other ties, and the loops below compare each."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.core.fragmentation import valid_shape
from advisor.core.model import Cluster, Policy, queue_order
from advisor.core.occupancy import build_state
from advisor.core.placer import WHOLE, QueuePlacer
from advisor.core.profiles import profile_names
from advisor.core.scaling.check import take_out
from advisor.core.state import CardState, Shape
from advisor.scenario import scenario_from_data
from conformance.generate import generate
from tests.advisor.core.test_profile_property import random_scenario
from tests.fastloop import examples

Picks = list[tuple[list[int] | None, int]]


def queued_shapes(cluster: Cluster) -> list[Shape]:
    """The Pending pods' shapes in queue order, then the running pods' (placed again onto
    what the Pending ones left)."""
    profile = cluster.scheduler.profile
    pods = queue_order(cluster.pending) + queue_order(cluster.running)
    return [shape for pod in pods if (shape := valid_shape(pod, profile)) is not None]


def in_a_row(
    state: CardState, shapes: list[Shape], policy: Policy, placer: QueuePlacer | None
) -> Picks:
    """Each shape's cards and tied count, placed one after another on `state`: by `placer`
    (each bound node named to it), or with none by `CardState.place` judging every node."""
    picks: Picks = []
    for shape in shapes:
        if placer is None:
            positions = state.place(shape, policy.node, policy.card)
        else:
            positions = placer.place(shape, policy.node, policy.card)
        picks.append((positions, state.tied))
        if positions:
            state.apply(positions, shape)
            if placer is not None:
                placer.bound(int(state.node_of[positions[0]]))
    return picks


def check(cluster: Cluster) -> int:
    """Both ways agree under each policy; how many pods were placed in all."""
    placed = 0
    shapes = queued_shapes(cluster)
    for policy in {cluster.policy, Policy("binpack", "binpack"), Policy("spread", "spread")}:
        expected = in_a_row(build_state(cluster), shapes, policy, None)
        for whole in (0, WHOLE):  # 0: never every node again, only those bound since
            state = build_state(cluster)
            assert in_a_row(state, shapes, policy, QueuePlacer(state, whole)) == expected
        for keep in (1, 2):  # a shape's verdicts dropped, then judged afresh
            state = build_state(cluster)
            placer = QueuePlacer(state, 0, keep=keep)
            assert in_a_row(state, shapes, policy, placer) == expected
            assert len(placer.judged) <= keep
        placed += sum(1 for positions, _ in expected if positions)
    return placed


@pytest.mark.parametrize("profile", profile_names())
def test_the_same_picks_on_random_clusters_of_each_profile(profile: str) -> None:
    placed = sum(
        check(scenario_from_data(random_scenario(seed, profile), "random.yaml"))
        for seed in range(examples(150))
    )
    assert placed > examples(150)  # the queues do place pods, so picks were compared


@settings(max_examples=examples(60), deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_the_same_picks_on_larger_generated_clusters(seed: int) -> None:
    """The differential test's clusters, up to 12 nodes with node filters and pod slots,
    30 Pending pods: many picks per shape, most nodes unchanged between them."""
    data = generate(seed, max_nodes=12, max_pending=30)
    check(scenario_from_data(data, "generated.yaml"))


def test_a_node_bound_but_not_named_is_judged_stale() -> None:
    """The rule the placer rests on, shown failing when broken: two nodes of one 16 GiB card;
    a 12 GiB pod goes to a (first by name), then b is the only room for a second. A binding
    the placer is not told of leaves it picking a again."""
    data = {
        "nodes": [
            {"name": "a", "cards": [{"index": 0, "memory_mib": 16384}]},
            {"name": "b", "cards": [{"index": 0, "memory_mib": 16384}]},
        ],
        "pods": [],
    }
    cluster = scenario_from_data(data, "two.yaml")
    state = build_state(cluster)
    shape = valid_shape(
        scenario_from_data(
            {**data, "pods": [{"name": "ml/p", "request": {"gpus": 1, "memory_mib": 12288}}]},
            "two.yaml",
        ).pending[0],
        state.profile.name,
    )
    assert shape is not None
    placer = QueuePlacer(state, whole=0)
    first = placer.place(shape, "binpack", "binpack")
    assert first is not None
    assert state.placement_of(first).node == "a"
    state.apply(first, shape)
    unnamed = placer.place(shape, "binpack", "binpack")
    assert unnamed is not None
    assert state.placement_of(unnamed).node == "a"  # stale
    placer.bound(int(state.node_of[first[0]]))
    named = placer.place(shape, "binpack", "binpack")
    assert named is not None
    assert state.placement_of(named).node == "b"


@settings(max_examples=examples(60), deadline=None)
@given(st.integers(0, 2**31 - 1), st.data())
def test_a_fork_picks_as_a_placer_of_its_own(seed: int, data: st.DataObject) -> None:
    """A fork on a copy of the parent's state, changed on some nodes (pods released, a node
    taken out, as scale-down's trials do), picks as a new placer on that copy; so does the
    parent once moved to the copy it commits, and a fork of it."""
    cluster = scenario_from_data(generate(seed, max_nodes=12, max_pending=30), "generated.yaml")
    policy = cluster.policy
    base = build_state(cluster)
    parent = QueuePlacer(base, whole=0)
    shapes = queued_shapes(cluster)
    for shape in shapes[: data.draw(st.integers(0, len(shapes)))]:
        parent.place(shape, policy.node, policy.card)  # verdicts the forks start from
    for _ in range(3):
        trial = base.copy()
        changed = []
        for pod in cluster.running:
            if pod.placement is not None and data.draw(st.booleans()):
                running = valid_shape(pod, base.profile.name)
                if running is not None:
                    trial.release(trial.positions(pod.placement), running)
                    changed.append(trial.node_index[pod.placement.node])
        if data.draw(st.booleans()):
            gone = data.draw(st.integers(0, len(trial.node_names) - 1))
            take_out(trial, gone)
            changed.append(gone)
        forked, own = trial.copy(), trial.copy()
        fork_picks = in_a_row(forked, shapes, policy, parent.fork(forked, changed))
        assert fork_picks == in_a_row(own, shapes, policy, QueuePlacer(own, whole=0))
        base = trial  # committed: the parent goes on from it
        parent.moved_to(base, changed)
