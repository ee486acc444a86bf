"""The ideal repack's placer (plan.twins) looks at only the nodes that can win, and so must
place every pod exactly where `CardState.place` over every node (and the best-fit rule over
every card) would, under every profile, with twin nodes listed in any order."""

from __future__ import annotations

import dataclasses
import random

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.core.model import Card, Cluster, Node, OtherPod, ProfileName
from advisor.core.nodefilters import HOSTNAME_LABEL, Resources
from advisor.core.plan.ideal import REPACK_POLICY
from advisor.core.plan.twins import RepackPlacer
from advisor.core.profiles import profile_names, profile_of
from advisor.core.state import CardState, Shape
from advisor.scenario import scenario_from_data
from tests.advisor.core.test_profile_property import random_scenario
from tests.fastloop import examples

Placements = list[list[int] | None]
POLICY = (REPACK_POLICY.node, REPACK_POLICY.card)


def _with_twins(seed: int, profile: str) -> tuple[Cluster, list[Shape]]:
    """A random cluster whose nodes come in twins (copies under other names, shuffled),
    emptied, and its pods' shapes three times over: enough to fill it."""
    rng = random.Random(seed)
    data = random_scenario(seed, profile)
    hostnames = rng.random() < 0.5  # as the kubelet labels a live node
    nodes = [
        {**n, "name": name, "labels": {**n.get("labels", {}), HOSTNAME_LABEL: name}}
        if hostnames
        else {**n, "name": name}
        for n in data["nodes"]
        for copy in range(rng.randint(1, 4))
        for name in [f"{rng.choice('abcxyz')}{copy}-{n['name']}"]
    ]
    rng.shuffle(nodes)
    pods = [{k: v for k, v in p.items() if k not in ("node", "cards")} for p in data["pods"]]
    policy = dict(zip(("node", "card"), POLICY, strict=True))
    cluster = scenario_from_data({**data, "nodes": nodes, "pods": pods, "policy": policy}, "t.yaml")
    rules = profile_of(cluster.scheduler)
    shapes = [
        Shape.of_pod(p)
        for p in cluster.pods
        if not p.invalid and rules.request_problem(p.request) is None
    ]
    return dataclasses.replace(cluster, pods=()), shapes * 3


def _every_node(cluster: Cluster, shapes: list[Shape], best_fit: bool) -> Placements:
    state = CardState(cluster)
    out: Placements = []
    for shape in shapes:
        positions: list[int] | None
        if best_fit and shape.gpus == 1:
            fits = np.flatnonzero(state.eligible(shape) & state.node_ok(shape)[state.node_of])
            positions = [int(fits[np.argmin(state.free_memory[fits])])] if fits.size else None
        else:
            positions = state.place(shape, *POLICY)
        if positions is not None:
            state.apply(positions, shape)
        out.append(positions)
    return out


def _placer(cluster: Cluster, shapes: list[Shape], best_fit: bool) -> Placements:
    state = CardState(cluster)
    placer = RepackPlacer(cluster, state, shapes)
    out: Placements = []
    for shape in shapes:
        if best_fit and shape.gpus == 1:
            positions = placer.best_fit(shape)
        else:
            positions = placer.place(shape, POLICY)
        if positions is not None:
            state.apply(positions, shape)
            placer.used(int(state.node_of[positions[0]]))
        out.append(positions)
    return out


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.sampled_from(profile_names()), st.booleans())
def test_the_placer_places_as_every_node_would(
    seed: int, profile: ProfileName, best_fit: bool
) -> None:
    cluster, shapes = _with_twins(seed, profile)
    assert _placer(cluster, shapes, best_fit) == _every_node(cluster, shapes, best_fit)


def test_twins_compete_one_at_a_time_first_by_name() -> None:
    data = {
        "nodes": [
            {"name": name, "cards": [{"index": 0, "memory_mib": 16384}]}
            for name in ("n-c", "n-a", "n-b")
        ],
        "pods": [],
    }
    cluster = scenario_from_data(data, "t.yaml")
    state = CardState(cluster)
    placer = RepackPlacer(cluster, state, [])
    twins = placer.twins
    assert twins is not None
    # "n-c" is first by position (the best-fit rule's tie), "n-a" first by name
    assert twins.keep.tolist() == [True, True, False]
    placer.used(1)  # "n-a" is taken: "n-b" is next by name
    assert twins.keep.tolist() == [True, True, True]


def test_pods_that_stay_on_a_node_count_by_what_they_request() -> None:
    def node(name: str, other: str, cpu: int) -> Node:
        pods = (OtherPod(other, resources=Resources(cpu_milli=cpu, memory_bytes=2**30)),)
        return Node(name, (Card(0, 16384),), other_pods=pods)

    # a DaemonSet's pods are named per node: alike all the same, unlike where they ask more
    cluster = Cluster(
        nodes=(node("a", "ds/x-1", 100), node("b", "ds/x-2", 100), node("c", "ds/x-3", 200))
    )
    twins = RepackPlacer(cluster, CardState(cluster), []).twins
    assert twins is not None
    assert twins.keep.tolist() == [True, False, True]


def test_the_hostname_label_counts_only_where_a_pod_reads_it() -> None:
    """A live node carries its name as its hostname label: twins still, unless a pod's
    filters read that label (then it tells them apart)."""
    nodes = [
        {
            "name": name,
            "labels": {HOSTNAME_LABEL: name},
            "cards": [{"index": 0, "memory_mib": 16384}],
        }
        for name in ("n-a", "n-b", "n-c")
    ]
    cluster = scenario_from_data({"nodes": nodes, "pods": []}, "t.yaml")
    twins = RepackPlacer(cluster, CardState(cluster), []).twins
    assert twins is not None
    assert twins.keep.tolist() == [True, False, False]
    pinned = scenario_from_data(
        {
            "nodes": nodes,
            "pods": [
                {
                    "name": "ml/p",
                    "request": {"gpus": 1, "memory_mib": 1024},
                    "node_selector": {HOSTNAME_LABEL: "n-c"},
                }
            ],
        },
        "t.yaml",
    )
    shapes = [Shape.of_pod(p) for p in pinned.pods]
    empty = dataclasses.replace(pinned, pods=())
    twins = RepackPlacer(empty, CardState(empty), shapes).twins
    assert twins is not None
    assert twins.keep.tolist() == [True, True, True]
