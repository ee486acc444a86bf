"""Policy what-if: Pending queue and full repack under each node x card policy."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.cli import main
from advisor.core.diagnose import diagnose
from advisor.core.fragmentation import valid_shape
from advisor.core.model import (
    POLICIES,
    Cluster,
    Placement,
    Pod,
    Policy,
    PolicyName,
    queue_order,
)
from advisor.core.nodefilters import Taint
from advisor.core.occupancy import build_state
from advisor.core.state import CardState, Shape
from advisor.core.whatif import landings, place_queue, repack_order, what_if
from advisor.output import whatif_json
from advisor.scenario import scenario_from_data
from advisor.schemas import PolicyOutcomeJson, WhatIfJson
from tests.advisor.core.constrained import (
    CORE,
    constrained_clusters,
    gpu_node,
    gpu_pod,
    selecting,
    strip_node_fields,
    tolerating,
)
from tests.advisor.core.test_profile_property import random_scenario
from tests.advisor.core.test_properties import clusters
from tests.fastloop import examples

GiB = 1024


def cce_data(priority_of_c: int = 0) -> dict[str, Any]:
    """CCE's docs: cards with 4, 4 and 8 GiB free; two replicas of 2 cards x 4 GiB each.

    Card binpack puts the first replica on cards 0 and 1 and strands the second; card spread
    puts it on cards 2 and 0 and the second on 1 and 2.
    """

    def run(name: str, card: int, gib: int, priority: int = 0) -> dict[str, Any]:
        request = {"gpus": 1, "memory_mib": gib * GiB}
        return {
            "name": name,
            "node": "n1",
            "cards": [card],
            "request": request,
            "priority": priority,
        }

    cards = [{"index": i, "memory_mib": 16 * GiB} for i in range(3)]
    return {
        "nodes": [{"name": "n1", "cards": cards}],
        "pods": [
            run("ml/a", 0, 12),
            run("ml/b", 1, 12),
            run("ml/c", 2, 8, priority_of_c),
            {"name": "web/r1", "request": {"gpus": 2, "memory_mib": 8 * GiB}},
            {"name": "web/r2", "request": {"gpus": 2, "memory_mib": 8 * GiB}},
        ],
    }


def cce() -> Cluster:
    return scenario_from_data(cce_data(), "cce.yaml")


def by_policy(data: WhatIfJson) -> dict[tuple[str, str], PolicyOutcomeJson]:
    return {(p["node"], p["card"]): p for p in data["policies"]}


def test_pending_queue_under_each_policy() -> None:
    data = whatif_json(what_if(cce()))
    assert data["schema"] == "xgpu-advisor/whatif/v1"
    assert data["current"]["pending"] == 2
    assert data["current"]["pending_mib"] == 16 * GiB
    outcomes = by_policy(data)
    assert set(outcomes) == {(n, c) for n in ("binpack", "spread") for c in ("binpack", "spread")}
    for node_policy in ("binpack", "spread"):  # one node: the node policy changes nothing
        assert outcomes[(node_policy, "binpack")]["pending_placed"] == 1
        assert outcomes[(node_policy, "spread")]["pending_placed"] == 2
        assert outcomes[(node_policy, "spread")]["pending_placed_mib"] == 16 * GiB


def test_fragmentation_after_each_policy_by_hand() -> None:
    """Shapes: 1x12 GiB (2 of 5 pods), 1x8 GiB (1), 2x4 GiB (2).

    After card binpack only card 2 has room (8 GiB): 1x12 cannot use it (0.4 x 8), 1x8 can,
    2x4 finds one card (0.4 x 8): 6.4 GiB of 8 -> 0.8; r2 is left, so all 8 GiB is stranded.
    After card spread nothing is free.
    """
    outcomes = by_policy(whatif_json(what_if(cce())))
    binpack = outcomes[("binpack", "binpack")]["fragmentation"]
    assert binpack["free_mib"] == 8 * GiB
    assert binpack["fragment_mib"] == pytest.approx(6.4 * GiB, abs=0.1)
    assert binpack["ratio"] == pytest.approx(0.8)
    assert binpack["stranded_mib"] == 8 * GiB
    spread = outcomes[("binpack", "spread")]["fragmentation"]
    assert (spread["free_mib"], spread["fragment_mib"], spread["stranded_mib"]) == (0, 0, 0)


def test_current_fragmentation_is_before_the_queue() -> None:
    """Now: 4, 4 and 8 GiB free. 1x12: all 16 (0.4); 1x8: cards 0, 1 (0.2 x 8); 2x4: none."""
    current = whatif_json(what_if(cce()))["current"]["fragmentation"]
    assert current["free_mib"] == 16 * GiB
    assert current["fragment_mib"] == pytest.approx((0.4 * 16 + 0.2 * 8) * GiB, abs=0.1)
    assert current["stranded_mib"] == 0  # r1 and r2 can use all three cards


def test_repack_places_running_pods_first_by_priority() -> None:
    cluster = scenario_from_data(cce_data(priority_of_c=5), "cce.yaml")
    assert [p.name for p in repack_order(cluster)] == ["ml/c", "ml/a", "ml/b", "web/r1", "web/r2"]
    outcomes = by_policy(whatif_json(what_if(cluster)))
    repack = outcomes[("binpack", "binpack")]["repack"]
    # c (8) on card 0, a (12) on card 1, b (12) on card 2; r1 on cards 1, 2 (4 each); r2 on
    # card 0 and... only card 0 has 8 free: one eligible card, so r2 stays out.
    assert repack == {
        "pods": 5,
        "placed": 4,
        "placed_mib": (8 + 12 + 12 + 8) * GiB,
        "running_placed": 3,
        "running_lost": 0,
        "pending_placed": 1,
        "fragmentation": repack["fragmentation"],
    }
    assert outcomes[("binpack", "spread")]["repack"]["placed"] == 5


def test_repack_can_lose_running_pods() -> None:
    """Today card 0 holds a 12 GiB pod and a 4 GiB one, card 1 three 4 GiB pods. Repacked in
    list order (the small ones first), card spread alternates them over both cards and leaves
    8 GiB on each: the 12 GiB pod is lost. Card binpack stacks them on card 0: nothing lost."""
    cards = [{"index": i, "memory_mib": 16 * GiB} for i in range(2)]

    def run(name: str, card: int, gib: int) -> dict[str, Any]:
        request = {"gpus": 1, "memory_mib": gib * GiB}
        return {"name": name, "node": "n1", "cards": [card], "request": request}

    pods = [run("a/s1", 0, 4), run("a/s2", 1, 4), run("a/s3", 1, 4), run("a/s4", 1, 4)]
    pods.append(run("a/big", 0, 12))
    cluster = scenario_from_data({"nodes": [{"name": "n1", "cards": cards}], "pods": pods}, "x")
    outcomes = by_policy(whatif_json(what_if(cluster)))
    assert outcomes[("binpack", "binpack")]["repack"]["running_lost"] == 0
    spread = outcomes[("binpack", "spread")]["repack"]
    assert (spread["placed"], spread["running_lost"]) == (4, 1)
    assert spread["fragmentation"]["free_mib"] == 16 * GiB


def test_deterministic_and_pure() -> None:
    cluster = cce()
    before = repr(cluster)
    assert whatif_json(what_if(cluster)) == whatif_json(what_if(cluster))
    assert repr(cluster) == before


def test_policies_subset() -> None:
    result = what_if(cce(), [Policy("spread", "spread")])
    assert [(o.policy.node, o.policy.card) for o in result.outcomes] == [("spread", "spread")]


def test_cli_json_and_markdown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(cce_data()))
    assert main(["whatif", "--scenario", str(path), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data == whatif_json(what_if(cce()))
    out = tmp_path / "w.md"
    assert main(["whatif", "--scenario", str(path), "--output", str(out)]) == 0
    text = out.read_text()
    assert "| binpack | spread | 2 of 2 |" in text
    assert "| binpack | binpack | 1 of 2 |" in text


def test_cli_bad_scenario_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("nodes: 3\n")
    assert main(["whatif", "--scenario", str(path)]) == 2
    assert "bad.yaml" in capsys.readouterr().err


@settings(max_examples=examples(200), deadline=None)
@given(clusters(), st.sampled_from(POLICIES), st.sampled_from(POLICIES))
def test_place_queue_skips_only_pods_that_could_not_fit(
    cluster: Cluster, node: PolicyName, card: PolicyName
) -> None:
    """Skipping a pod that needs no less than one that already failed gives exactly what
    trying every pod gives: placing only ever fills cards."""
    policy = Policy(node, card)
    queue = queue_order(cluster.pending) + queue_order(cluster.running)  # running re-placed too
    expected: list[Placement | None] = []
    state = build_state(Cluster(cluster.nodes, (), policy, cluster.max_vgpus_per_card))
    for pod in queue:
        shape = valid_shape(pod)
        positions = None if shape is None else state.place(shape, policy.node, policy.card)
        if shape is None or positions is None:
            expected.append(None)
            continue
        state.apply(positions, shape)
        expected.append(state.placement_of(positions))
    empty = build_state(Cluster(cluster.nodes, (), policy, cluster.max_vgpus_per_card))
    assert place_queue(empty, queue, policy) == tuple(expected)
    # the shapes given, as scaling's passes give them, are read as the pods' own
    given = [valid_shape(pod) for pod in queue]
    again = build_state(Cluster(cluster.nodes, (), policy, cluster.max_vgpus_per_card))
    assert place_queue(again, queue, policy, shapes=given) == tuple(expected)


def test_place_queue_takes_one_shape_per_pod() -> None:
    cluster = Cluster((gpu_node("a", 16),), (gpu_pod("t/p1", 8),))
    with pytest.raises(ValueError, match="0 shapes for 1 pods"):
        place_queue(build_state(cluster), cluster.pending, cluster.policy, shapes=[])


def test_what_if_honours_the_node_filters() -> None:
    """a: one 16 GiB card, tainted; b: one 16 GiB card, 4 cores. p1 (16 GiB, tolerates the
    taint) queues first and takes a (both nodes empty and alike: the name decides, under
    every policy); p2 (16 GiB, 8 cores, no toleration) is refused by a's taint and b's
    cpu. One pod placed under every policy, in the queue and in the repack; two without
    the filters."""
    nodes = (
        gpu_node("a", 16, taints=(Taint("dedicated", "NoSchedule", "x"),)),
        gpu_node("b", 16, cpu=4),
    )
    cluster = Cluster(
        nodes,
        (
            gpu_pod("t/p1", 16, constraints=tolerating("dedicated")),
            gpu_pod("t/p2", 16, cpu_milli=8 * CORE),
        ),
    )
    result = what_if(cluster)
    assert [(o.pending_placed, o.repack.pending_placed) for o in result.outcomes] == [(1, 1)] * 4
    state = build_state(cluster)
    assert place_queue(state, cluster.pending, cluster.policy) == (Placement("a", (0,)), None)
    plain = what_if(strip_node_fields(cluster))
    assert [(o.pending_placed, o.repack.pending_placed) for o in plain.outcomes] == [(2, 2)] * 4


@settings(max_examples=examples(150), deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["hami", "volcano-vgpu"]))
def test_place_queue_under_each_profile_is_the_diagnosis_cycle(seed: int, profile: str) -> None:
    """Under hami and volcano-vgpu, whole-card and share requests are placed (not skipped as
    cce would judge them), the skipping shortcut changes nothing, and the pods placed are the
    ones the diagnosis calls schedulable, where it places them."""
    cluster = scenario_from_data(random_scenario(seed, profile), "random.yaml")
    queue = queue_order(cluster.pending)
    state = build_state(cluster)
    expected: list[Placement | None] = []
    for pod in queue:
        shape = valid_shape(pod, cluster.scheduler.profile)
        positions = None if shape is None else state.place(shape, *policy_pair(cluster))
        if shape is None or positions is None:
            expected.append(None)
            continue
        state.apply(positions, shape)
        expected.append(state.placement_of(positions))
    placed = place_queue(build_state(cluster), queue, cluster.policy)
    assert placed == tuple(expected)
    diagnosed = {d.pod.name: d.placement for d in diagnose(cluster, node_detail_limit=0).pods}
    assert dict(zip((p.name for p in queue), placed, strict=True)) == diagnosed


def policy_pair(cluster: Cluster) -> tuple[PolicyName, PolicyName]:
    return cluster.policy.node, cluster.policy.card


def test_whole_card_and_share_requests_land_with_what_they_take() -> None:
    """hami, one node with cards of 8192 and 4096 MiB, binpack / spread. A whole card
    first: both empty cards score alike for slots and cores, memory 8192/8192 vs 4096/4096,
    so equal; the tie goes to the later card, 1 (4096 MiB). Then 50 %: card 1 is full (its
    one slot is free but no memory), card 0 gives 8192 * 50 // 100 = 4096."""
    data = {
        "scheduler": {"profile": "hami"},
        "nodes": [
            {
                "name": "n1",
                "cards": [{"index": 0, "memory_mib": 8192}, {"index": 1, "memory_mib": 4096}],
            }
        ],
        "pods": [
            {"name": "a/whole", "request": {"gpus": 1}},
            {"name": "a/half", "request": {"gpus": 1, "memory_percent": 50}},
        ],
    }
    cluster = scenario_from_data(data, "s.yaml")
    landed = landings(build_state(cluster), queue_order(cluster.pending), cluster.policy)
    assert [(w.placement, w.mib) for w in landed] == [
        (Placement("n1", (1,)), 4096),
        (Placement("n1", (0,)), 4096),
    ]
    result = what_if(cluster, [cluster.policy])
    assert (result.outcomes[0].pending_placed, result.outcomes[0].pending_placed_mib) == (2, 8192)
    assert result.pending_relative == 2


def _reference(
    state: CardState, queue: Sequence[Pod], policy: Policy
) -> dict[str, Placement | None]:
    """Where `queue` lands on (a copy of) `state`, by pod."""
    landed = place_queue(state.copy(), queue, policy)
    return {pod.name: where for pod, where in zip(queue, landed, strict=True)}


def _without(state: CardState, node: int) -> CardState:
    """`state` with `node` gone, as scale-down's trial removes it."""
    trial = state.copy()
    for k in trial.node_positions(node):
        trial.healthy[k] = False
    trial.allocatable[node] = 0
    return trial


@settings(max_examples=examples(300), deadline=None)
@given(st.one_of(clusters(), constrained_clusters()), st.data())
def test_a_reference_pass_skips_only_what_would_fail(cluster: Cluster, data: st.DataObject) -> None:
    """scale-down's trials: the queue placed again with a node gone and the node's pods
    queued among it. Not looking for a pod that found no place in the pass with every node
    (while the pods it named land where they landed) gives exactly what looking gives."""
    policy = cluster.policy
    queue = queue_order(cluster.pending)
    full = build_state(cluster)
    reference = _reference(full, queue, policy)
    gone = data.draw(st.integers(0, len(full.node_names) - 1))
    moved = [
        p for p in cluster.running if p.placement and p.placement.node == full.node_names[gone]
    ]
    at = data.draw(st.integers(0, len(queue)))
    order = [*queue[:at], *(replace(p, placement=None) for p in moved), *queue[at:]]
    trial = _without(full, gone)
    for pod in moved:
        assert pod.placement is not None
        shape = valid_shape(pod)
        if shape is not None:
            trial.release(trial.positions(pod.placement), shape)
    expected = place_queue(trial.copy(), order, policy)
    assert place_queue(trial.copy(), order, policy, reference=reference) == expected


def test_a_pod_landing_elsewhere_ends_the_reference() -> None:
    """Node binpack; a goes. In the pass with every node, p1 (8 GiB, pool x: a or b) takes
    a, the fullest (r holds 4 GiB); p3 (8 GiB) then takes c, fuller than the empty b (s
    holds 4 GiB); p2 (12 GiB, c only) finds no place. Without a, p1 takes b and p3 the
    now fuller b too, which leaves c's 12 GiB to p2: p3 landing elsewhere than in the
    reference ends it, so p2 is looked for."""
    nodes = (
        gpu_node("a", 16, labels={"pool": "x"}),
        gpu_node("b", 16, labels={"pool": "x"}),
        gpu_node("c", 16, labels={"pool": "y"}),
    )
    cluster = Cluster(
        nodes,
        (
            gpu_pod("t/r", 4, on="a"),
            gpu_pod("t/s", 4, on="c"),
            gpu_pod("t/p1", 8, constraints=selecting(pool="x")),
            gpu_pod("t/p3", 8),
            gpu_pod("t/p2", 12, constraints=selecting(pool="y")),
        ),
        Policy("binpack", "binpack"),
    )
    queue = queue_order(cluster.pending)
    full = build_state(cluster)
    reference = _reference(full, queue, cluster.policy)
    assert reference == {"t/p1": Placement("a", (0,)), "t/p3": Placement("c", (0,)), "t/p2": None}
    trial = _without(full, 0)
    got = place_queue(trial, queue, cluster.policy, reference=reference)
    assert got == (Placement("b", (0,)), Placement("b", (0,)), Placement("c", (0,)))


def test_a_pod_failing_where_it_landed_ends_the_reference() -> None:
    """a goes and m (4 GiB, priority 10) moves to z ahead of the queue. In the pass with
    every node, p1 (16 GiB) took all of z and p2 (12 GiB) found no place; here p1 finds
    none, which leaves z's 12 GiB to p2: p1's failure ends the reference."""
    nodes = (gpu_node("a", 16, labels={"pool": "x"}), gpu_node("z", 16, labels={"pool": "y"}))
    moved = replace(gpu_pod("t/m", 4, on="a"), priority=10)
    cluster = Cluster(
        nodes,
        (
            moved,
            gpu_pod("t/p1", 16, constraints=selecting(pool="y")),
            gpu_pod("t/p2", 12, constraints=selecting(pool="y")),
        ),
    )
    queue = queue_order(cluster.pending)
    full = build_state(cluster)
    reference = _reference(full, queue, cluster.policy)
    assert reference == {"t/p1": Placement("z", (0,)), "t/p2": None}
    trial = _without(full, 0)
    trial.release(trial.positions(Placement("a", (0,))), Shape.of_pod(moved))
    order = [replace(moved, placement=None), *queue]
    got = place_queue(trial, order, cluster.policy, reference=reference)
    assert got == (Placement("z", (0,)), None, Placement("z", (0,)))
