"""Scaling advice: scale-up estimates, scale-down simulation, headroom formula."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.core.diagnose import diagnose
from advisor.core.model import (
    DO_NOT_DISRUPT,
    Card,
    Cluster,
    Node,
    OtherPod,
    Placement,
    Pod,
    Policy,
    Request,
)
from advisor.core.nodefilters import Taint
from advisor.core.profiles import profile_of
from advisor.core.scaling import (
    NodeShape,
    allotted_gpus,
    capacity_gpus,
    estimate_nodes,
    gpus_needed,
    headroom,
    node_shapes,
    scale_up,
    with_new_nodes,
)
from advisor.core.scaling.actor import resize_text
from advisor.core.scaling.down import HELD_REASONS, node_utilisation, scale_down, scale_down_advice
from advisor.core.scaling.up import NEW_NODE_PREFIX, ScaleUp, _trim, _verify
from advisor.output.scaling import headroom_json, scale_down_json, scale_up_json
from tests.advisor.core.constrained import CORE, gpu_node, gpu_pod, strip_node_fields, tolerating
from tests.advisor.core.scaledown_replay import replay_steps
from tests.advisor.core.scenario_dicts import GiB, build
from tests.fastloop import examples


def node(name: str, *sizes: int, model: str = "") -> dict[str, Any]:
    cards: list[dict[str, Any]] = [{"index": i, "memory_mib": s * GiB} for i, s in enumerate(sizes)]
    for card in cards if model else []:
        card["model"] = model
    return {"name": name, "cards": cards}


def running(name: str, on: str, cards: list[int], gib: int, **extra: Any) -> dict[str, Any]:
    request = {"gpus": len(cards), "memory_mib": gib * GiB}
    return {"name": name, "node": on, "cards": cards, "request": request, **extra}


def pending(name: str, gpus: int, gib: int, **extra: Any) -> dict[str, Any]:
    return {"name": name, "request": {"gpus": gpus, "memory_mib": gib * GiB}, **extra}


def full_cluster(*extra_pending: dict[str, Any]) -> Cluster:
    """n1: 2 x 16 GiB (T4), n2: 4 x 16 GiB (A10), both full."""
    return build(
        [node("n1", 16, 16, model="T4"), node("n2", 16, 16, 16, 16, model="A10")],
        [
            running("f/1", "n1", [0, 1], 32),
            running("f/2", "n2", [0, 1, 2, 3], 64),
            *extra_pending,
        ],
    )


# -- scale-up --------------------------------------------------------------------------------


def test_node_shapes_group_the_cluster() -> None:
    assert node_shapes(full_cluster()) == (
        NodeShape(2, 16 * GiB, "T4"),
        NodeShape(4, 16 * GiB, "A10"),
    )


def test_fewest_nodes_wins() -> None:
    """p1, p2 (1 card each) and p3 (2 cards): two 2-card nodes, or one 4-card node."""
    cluster = full_cluster(pending("p/1", 1, 16), pending("p/2", 1, 16), pending("p/3", 2, 32))
    assert estimate_nodes(NodeShape(2, 16 * GiB), cluster.pending, cluster) == 2
    assert estimate_nodes(NodeShape(4, 16 * GiB), cluster.pending, cluster) == 1
    [entry] = scale_up(cluster)
    assert scale_up_json(entry) == {
        "shape": {"cards": 4, "memory_mib": 16 * GiB, "model": "A10"},
        "nodes": 1,
        "for": ["p/1", "p/2", "p/3"],
        # cce, the default profile: a resize by hand (advisor.core.scaling.actor)
        "actor": "person",
        "resize": resize_text(entry.shape, 1, False, profile_of(cluster.scheduler)),
    }


def test_rescued_pods_are_left_to_their_plan() -> None:
    """Without p3 both shapes need one node; the 2-card node has less memory."""
    cluster = full_cluster(pending("p/1", 1, 16), pending("p/2", 1, 16), pending("p/3", 2, 32))
    [entry] = scale_up(cluster, rescued={"p/3"})
    assert (entry.shape, entry.nodes, entry.pods) == (
        NodeShape(2, 16 * GiB, "T4"),
        1,
        ("p/1", "p/2"),
    )
    assert scale_up(cluster, rescued={"p/1", "p/2", "p/3"}) == ()


def test_schedulable_and_invalid_pods_get_no_scale_up() -> None:
    cluster = build(
        [node("n1", 16)],
        [pending("p/fits", 1, 8), {"name": "p/bad", "request": {"gpus": 1, "memory_mib": 100}}],
    )
    assert scale_up(cluster) == ()


def test_unsatisfiable_pods_get_a_new_shape_and_say_so() -> None:
    cluster = full_cluster(pending("p/huge", 8, 128), pending("p/one", 1, 16))
    entries = scale_up(cluster)
    assert [scale_up_json(e) for e in entries] == [
        {
            "shape": {"cards": 2, "memory_mib": 16 * GiB, "model": "T4"},
            "nodes": 1,
            "for": ["p/one"],
            "actor": "person",
            "resize": resize_text(entries[0].shape, 1, False, profile_of(cluster.scheduler)),
        },
        {
            "shape": {"cards": 8, "memory_mib": 16 * GiB, "model": ""},
            "nodes": 1,
            "for": ["p/huge"],
            "new_shape": True,
            "note": "no existing node shape can host these pods",
            "actor": "person",
            "resize": "by hand: create a node pool of this shape with 1 node",
        },
    ]


def test_no_single_shape_hosts_all_pods() -> None:
    """x (1 x 40 GiB) needs the 80 GiB card, y (4 x 16 GiB) the 4-card node."""
    cluster = build(
        [node("big", 80, model="H100"), node("wide", 16, 16, 16, 16, model="A10")],
        [
            running("f/1", "big", [0], 80),
            running("f/2", "wide", [0, 1, 2, 3], 64),
            pending("p/x", 1, 40),
            pending("p/y", 4, 64),
        ],
    )
    entries = scale_up(cluster)
    # Each shape hosts one of them and needs one node: the smaller total memory goes first.
    assert [(e.shape.model, e.nodes, e.pods) for e in entries] == [
        ("A10", 1, ("p/y",)),
        ("H100", 1, ("p/x",)),
    ]


def test_check_stops_growing_where_no_node_count_lands_the_pod() -> None:
    """A pod the check can never land (here CCE refuses its request: 2000 MiB over two
    cards is no whole multiple of 128 MiB per card, which the packing estimate does not ask)
    leaves the entry unverified at one node per queued pod: the doubling does not run on to
    2^rounds nodes (it did for a gang's invalid members, to 262,144 nodes per entry)."""
    bad = {"name": "p/bad", "request": {"gpus": 2, "memory_mib": 2000}}
    cluster = build([node("n1", 16, 16)], [bad, pending("p/one", 1, 16)])
    entry = ScaleUp(NodeShape(2, 16 * GiB), 1, ("p/bad",))
    [checked] = _verify(cluster, (), [entry], max_rounds=20)
    assert (checked.nodes, checked.verified) == (2, False)


def _short_below(need: list[int], spill: bool = False) -> Any:
    """A check where entry k lands with need[k] nodes; with `spill`, entry 0 cut below its
    need also leaves entry 1 short (its pods land on entry 1's nodes)."""

    def missing(counts: list[int]) -> dict[int, list[Pod]]:
        short: dict[int, list[Pod]] = {
            k: [] for k, (n, m) in enumerate(zip(counts, need, strict=True)) if n < m
        }
        if spill and 0 in short:
            short[1] = []
        return short

    return missing


def test_trim_bisects_every_entry_at_once() -> None:
    """The counts come back to each entry's least passing count, in about log2 checks."""
    calls: list[list[int]] = []
    check = _short_below([5, 9, 3])

    def counted(counts: list[int]) -> dict[int, list[Pod]]:
        calls.append(list(counts))
        return dict(check(counts))

    assert _trim([8, 16, 3], [2, 4, 0], counted) == [5, 9, 3]
    assert len(calls) <= 5  # one entry at a time would take 6
    # entry 1 (left whole) falls short when entry 0 is cut too far: the cut is blamed
    assert _trim([8, 9, 3], [2, 0, 0], _short_below([5, 9, 3], spill=True)) == [5, 9, 3]


def test_trim_cuts_each_passing_count_to_what_its_check_needed() -> None:
    """Where a passing check landed pods on fewer of an entry's nodes than it had (here
    entry 0 needs 3 nodes once entry 1 has 7 or more, and 5 before: a bisection from
    [8, 16] settles on 5), the count drops to those at once, below the bisection's low."""

    def missing(counts: list[int]) -> dict[int, list[Pod]]:
        return dict(_short_below([3 if counts[1] >= 7 else 5, 7])(counts))

    def needed(counts: list[int]) -> list[int]:
        assert not missing(counts)  # asked only of counts that passed
        return [min(counts[0], 3), counts[1]]

    assert _trim([8, 16], [4, 2], missing, needed) == [3, 7]
    assert _trim([8, 16], [4, 2], missing) == [5, 7]  # without: the bisection's answer


def test_an_entry_whose_pods_land_on_another_entrys_nodes_gets_one_node() -> None:
    """Templates a (8 x 16 GiB) and b (2 x 32 GiB), both full. b hosts the most Pending pods
    (b1 16 GiB and the 32 GiB c1, c2) and is packed first: 2 nodes. a then takes the 7-card
    a1. In the queue a1 comes first, to a's new node; b1 goes to the card it left (binpack:
    that node ends full), c1 and c2 fill b's first node. b's second node takes no pod, so
    it is not proposed."""
    cluster = build(
        [node("a", *[16] * 8), node("b", 32, 32)],
        [
            running("f/a", "a", list(range(8)), 8 * 16),
            running("f/b", "b", [0, 1], 64),
            pending("q/a1", 7, 7 * 16),
            pending("q/b1", 1, 16),
            pending("q/c1", 1, 32),
            pending("q/c2", 1, 32),
        ],
    )
    entries = scale_up(cluster)
    assert [(e.shape.cards, e.packed_estimate, e.nodes, e.pods) for e in entries] == [
        (2, 2, 1, ("q/b1", "q/c1", "q/c2")),
        (8, 1, 1, ("q/a1",)),
    ]
    placed = {d.pod.name: d.placement for d in diagnose(with_new_nodes(cluster, entries)).pods}
    assert all(placed.values())


def test_trim_returns_only_counts_a_check_passed() -> None:
    """Where cuts pass apart but not together, the last passing counts come back."""

    def missing(counts: list[int]) -> dict[int, list[Pod]]:
        if counts[0] < 8 and counts[1] < 8:
            return {0: []} if counts[0] <= counts[1] else {1: []}
        return {}

    trimmed = _trim([8, 8], [4, 4], missing)
    assert not missing(trimmed)


def test_check_adds_nodes_when_the_queue_would_take_them() -> None:
    """Under node spread the schedulable 4 GiB pod, queued first, goes to the empty new node
    (lowest allocation), so the 16 GiB pod needs a second one; the estimate alone says one."""
    cluster = build(
        [node("n1", 16)],
        [running("f/1", "n1", [0], 8), pending("p/small", 1, 4), pending("p/big", 1, 16)],
        policy={"node": "spread", "card": "binpack"},
    )
    assert estimate_nodes(NodeShape(1, 16 * GiB), [cluster.pending[1]], cluster) == 1
    [entry] = scale_up(cluster)
    assert (entry.nodes, entry.pods, entry.verified) == (2, ("p/big",), True)
    assert scale_up_json(entry)["packed_estimate"] == 1
    placed = {d.pod.name: d.placement for d in diagnose(with_new_nodes(cluster, [entry])).pods}
    assert placed["p/big"] is not None


# -- scale-down ------------------------------------------------------------------------------


def test_idle_node_moves_its_pod() -> None:
    cluster = build(
        [node("n1", 16, 16), node("n2", 16, 16)],
        [running("a/x", "n1", [0], 4), running("a/y", "n2", [0], 12)],
    )
    assert node_utilisation(cluster) == {"n1": 0.125, "n2": 0.375}
    [step] = scale_down(cluster)
    assert scale_down_json(step) == {
        "node": "n1",
        "utilisation": 0.125,
        "moves": {"a/x": {"node": "n2", "cards": [0]}},
    }


def test_threshold_is_configurable() -> None:
    cluster = build(
        [node("n1", 16, 16), node("n2", 16, 16)],
        [running("a/x", "n1", [0], 4), running("a/y", "n2", [0], 12)],
    )
    assert scale_down(cluster, threshold=0.1) == ()


def test_a_node_exactly_at_the_threshold_stays_unlisted() -> None:
    # n1: 8 of 32 GiB = 0.25. Below the threshold means below: at 0.25 it is neither
    # proposed nor held; just above, it goes.
    cluster = build(
        [node("n1", 16, 16), node("n2", 16, 16)],
        [running("a/x", "n1", [0], 8), running("a/y", "n2", [0], 8)],
    )
    advice = scale_down_advice(cluster, threshold=0.25)
    assert (advice.steps, advice.held) == ((), ())
    assert [s.node for s in scale_down(cluster, threshold=0.2501)] == ["n1"]


def test_a_drained_node_takes_none_of_its_pods_back() -> None:
    # Node spread prefers the emptiest node, and n1, drained, is the emptiest: its pod must
    # still move to n2, the node that stays (n2 card 0 has 4 GiB free: card binpack).
    cluster = build(
        [node("n1", 16, 16), node("n2", 16, 16)],
        [running("a/x", "n1", [0], 4), running("a/y", "n2", [0], 12)],
        policy={"node": "spread", "card": "binpack"},
    )
    steps = scale_down(cluster)
    assert [(s.node, dict(s.moves)) for s in steps] == [("n1", {"a/x": Placement("n2", (0,))})]
    replay_steps(cluster, steps, 0.3)


def test_a_pending_pod_that_fits_nowhere_keeps_no_node() -> None:
    # p/huge asks four cards; no node has four. It is Pending before and after, so removing
    # n1 takes no place from it: n1 still goes.
    cluster = build(
        [node("n1", 16, 16), node("n2", 16, 16)],
        [running("a/x", "n1", [0], 4), running("a/y", "n2", [0], 12), pending("p/huge", 4, 64)],
    )
    advice = scale_down_advice(cluster)
    assert ([s.node for s in advice.steps], advice.held) == (["n1"], ())


def test_a_node_a_pending_pod_needs_stays() -> None:
    cluster = build([node("n1", 16), node("n2", 16)], [running("a/y", "n2", [0], 12)])
    assert [s.node for s in scale_down(cluster)] == ["n1"]  # empty: no moves
    with_pending = build(
        [node("n1", 16), node("n2", 16)], [running("a/y", "n2", [0], 12), pending("p/w", 1, 16)]
    )
    assert scale_down(with_pending) == ()


def test_protected_pods_keep_their_node() -> None:
    for extra in ({"annotations": {"xgpu.io/do-not-disrupt": "true"}}, {}):
        name = "a/x" if extra else "kube-system/x"
        cluster = build(
            [node("n1", 16, 16), node("n2", 16, 16)],
            [running(name, "n1", [0], 4, **extra), running("a/y", "n2", [0], 12)],
        )
        assert scale_down(cluster) == ()


def test_removals_are_cumulative() -> None:
    """n1 and n2 each run 4 GiB, n3 has 6 GiB free: after n1's pod moves to n3 (binpack),
    n2's pod has nowhere to go, though alone it would have fitted."""
    cluster = build(
        [node("n1", 16), node("n2", 16), node("n3", 16)],
        [running("a/1", "n1", [0], 4), running("a/2", "n2", [0], 4), running("a/3", "n3", [0], 10)],
    )
    steps = scale_down(cluster)
    assert [(s.node, dict(s.moves)) for s in steps] == [("n1", {"a/1": Placement("n3", (0,))})]


def test_safe_to_evict_false_keeps_a_gpu_pods_node() -> None:
    pinned = {"annotations": {"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}}
    cluster = build(
        [node("n1", 16, 16), node("n2", 16, 16)],
        [running("a/x", "n1", [0], 4, **pinned), running("a/y", "n2", [0], 12)],
    )
    assert scale_down(cluster) == ()


def idle_pair(n1_others: list[dict[str, Any]] | None) -> Cluster:
    """n1 (4 GiB used) would go, its pod moving to n2; n2 stays (12 GiB is above 0.3)."""
    n1 = node("n1", 16, 16)
    if n1_others is not None:
        n1["other_pods"] = n1_others
    return build(
        [n1, node("n2", 16, 16)], [running("a/x", "n1", [0], 4), running("a/y", "n2", [0], 12)]
    )


def test_an_other_pod_that_blocks_eviction_keeps_the_node() -> None:
    blocked = idle_pair([{"name": "web/api"}, {"name": "kube-system/dns", "blocks": "kube-system"}])
    assert scale_down(blocked) == ()
    # The same node with nothing blocking goes, naming the pods that move with it.
    [step] = scale_down(idle_pair([{"name": "web/api"}, {"name": "web/db"}]))
    assert step.also_moves == ("web/api", "web/db")
    assert scale_down_json(step) == {
        "node": "n1",
        "utilisation": 0.125,
        "moves": {"a/x": {"node": "n2", "cards": [0]}},
        "also_moves": ["web/api", "web/db"],
    }


def test_also_moves_says_none_known_or_not_known() -> None:
    [known_none] = scale_down(idle_pair([]))
    assert scale_down_json(known_none)["also_moves"] == []
    [unknown] = scale_down(idle_pair(None))  # a scenario without the key: the §8 entry as is
    assert unknown.also_moves is None
    assert "also_moves" not in scale_down_json(unknown)


def test_a_blocked_node_is_skipped_and_the_next_one_considered() -> None:
    """n1 is the least used but pinned; n2 goes instead, its pod moving to n3."""
    n1 = node("n1", 16)
    n1["other_pods"] = [{"name": "web/bare", "blocks": "not replicated"}]
    cluster = build(
        [n1, node("n2", 16), node("n3", 16)],
        [running("a/1", "n1", [0], 2), running("a/2", "n2", [0], 4), running("a/3", "n3", [0], 8)],
    )
    assert [(s.node, dict(s.moves)) for s in scale_down(cluster, threshold=0.4)] == [
        ("n2", {"a/2": Placement("n3", (0,))})
    ]


# -- headroom --------------------------------------------------------------------------------


def test_headroom_formula() -> None:
    # ceil(70 x 1.2 / 0.7) = 120; by use: ceil(35 x 1.2 / 0.7) = 60.
    h = headroom(100, 70, peak_used_gpus=35)
    assert (h.needed_gpus, h.spare_gpus, h.needed_by_use_gpus) == (120, -20, 60)
    assert gpus_needed(10, 0.5, 0) == 20
    assert gpus_needed(10.1, 1.0, 0) == 11
    assert headroom(8, 0).needed_gpus == 0
    assert headroom_json(h)["target_utilisation"] == 0.7
    with pytest.raises(ValueError, match="target"):
        gpus_needed(1, 0)
    with pytest.raises(ValueError, match=r"^target utilisation must be in \(0, 1\], got 1.01$"):
        gpus_needed(1, 1.01)  # above 1: more than the whole card
    with pytest.raises(ValueError, match="negative"):
        gpus_needed(1, 0.7, -0.1)
    with pytest.raises(ValueError, match=r"^peak and redundancy must not be negative$"):
        gpus_needed(-1)


def test_headroom_json_rounds_to_three_places() -> None:
    # needed: ceil(70.45678 x 1.2 / 0.7) = ceil(120.783...) = 121; spare 100.12345 - 121 =
    # -20.87655 -> -20.877; by use: ceil(35.12345 x 1.2 / 0.7) = ceil(60.211...) = 61.
    assert headroom_json(headroom(100.12345, 70.45678, peak_used_gpus=35.12345)) == {
        "capacity_gpus": 100.123,
        "peak_allotted_gpus": 70.457,
        "needed_gpus": 121,
        "spare_gpus": -20.877,
        "target_utilisation": 0.7,
        "redundancy": 0.2,
        "peak_used_gpus": 35.123,
        "needed_by_use_gpus": 61,
    }
    without_use = headroom_json(headroom(8, 0))
    assert (without_use["peak_used_gpus"], without_use["needed_by_use_gpus"]) == (None, None)


def test_allotted_and_capacity_gpus() -> None:
    cluster = build(
        [
            node("n1", 16, 16),
            {"name": "n2", "cards": [{"index": 0, "memory_mib": 8192, "healthy": False}]},
        ],
        [running("a/x", "n1", [0, 1], 16)],
    )
    # GPUs of memory of the commonest healthy card (16 GiB): the broken 8 GiB card is half
    assert allotted_gpus(cluster) == pytest.approx(1.0)
    assert (capacity_gpus(cluster), capacity_gpus(cluster, healthy_only=False)) == (2, 2.5)


# -- properties ----------------------------------------------------------------------------


@st.composite
def clusters(draw: st.DrawFn) -> Cluster:
    """Random clusters with some pods bound where the scheduler put them, the rest Pending."""
    nodes = []
    for i in range(draw(st.integers(1, 4))):
        size = draw(st.sampled_from((8192, 16384)))
        cards = tuple(
            Card(j, size, healthy=draw(st.booleans()) or draw(st.booleans()))
            for j in range(draw(st.integers(1, 4)))
        )
        nodes.append(Node(f"node-{i}", cards))
    pods = []
    for i in range(draw(st.integers(1, 12))):
        gpus = draw(st.integers(1, 3))
        per_card = draw(st.sampled_from((1024, 2048, 4096, 8192)))
        core = draw(st.sampled_from((0, 0, 20)))
        pods.append(
            Pod(
                f"ns/p{i}",
                Request(gpus, gpus * per_card, gpus * core),
                priority=draw(st.integers(0, 1)),
            )
        )
    policy = Policy(
        draw(st.sampled_from(("binpack", "spread"))), draw(st.sampled_from(("binpack", "spread")))
    )
    cluster = Cluster(tuple(nodes), tuple(pods), policy, draw(st.integers(2, 4)))
    placed = {d.pod.name: d.placement for d in diagnose(cluster).pods}
    bind = draw(st.lists(st.booleans(), min_size=len(pods), max_size=len(pods)))
    bound = tuple(
        Pod(p.name, p.request, placed[p.name] if keep else None, p.priority)
        for p, keep in zip(pods, bind, strict=True)
    )
    return Cluster(cluster.nodes, bound, policy, cluster.max_vgpus_per_card)


@settings(max_examples=examples(100), deadline=None)
@given(clusters(), st.data())
def test_scale_up_nodes_host_the_pods(cluster: Cluster, data: st.DataObject) -> None:
    names = [p.name for p in cluster.pending]
    rescued = set(data.draw(st.lists(st.sampled_from(names), unique=True))) if names else set()
    entries = scale_up(cluster, rescued=rescued)
    assert all(e.verified for e in entries)
    targets = {name for e in entries for name in e.pods}
    assert not targets & rescued
    landed = diagnose(with_new_nodes(cluster, entries, rescued)).pods
    placed = {d.pod.name for d in landed if d.placement}
    assert targets <= placed
    # no entry proposes a node after the last one a pod lands on (one node at least)
    used = {d.placement.node for d in landed if d.placement}
    for k, e in enumerate(entries):
        assert e.nodes == 1 or f"{NEW_NODE_PREFIX}-{k}-{e.nodes - 1:04d}" in used
    unresolved = {
        d.pod.name
        for d in diagnose(cluster).pods
        if d.cause in ("fragmentation", "capacity", "unsatisfiable")
    }
    assert targets == unresolved - rescued


def test_a_later_removal_sees_where_an_earlier_ones_pods_went() -> None:
    """a and b each run a 6 GiB pod (of 16). a goes first: its pod goes to c (c and d tie at
    14 of 16 after, c first by name). b goes next: c has 2 GiB left now, so its pod, of the
    same shape, goes to d. Each trial starts from the verdicts kept since the first step;
    c's must have been judged again (eight full nodes beside them, so that a trial judges
    again only the nodes changed, not every node)."""
    full = "efghijkl"
    cluster = build(
        [node(name, 16) for name in "abcd" + full],
        [
            running("w/p1", "a", [0], 6),
            running("w/p2", "b", [0], 6),
            running("w/r", "c", [0], 8),
            running("w/s", "d", [0], 8),
            *(running(f"w/{name}", name, [0], 16) for name in full),
        ],
    )
    steps = scale_down(cluster, threshold=0.4)
    assert [(s.node, {p: w.node for p, w in s.moves.items()}) for s in steps] == [
        ("a", {"w/p1": "c"}),
        ("b", {"w/p2": "d"}),
    ]
    replay_steps(cluster, steps, 0.4)


def test_a_later_removal_sees_where_an_earlier_ones_other_pods_went() -> None:
    """a and b each run a pod of 5 GiB and 1 cpu. a goes first: its pod to d (13 of 16
    after, above c's 12 and e's 11), its other pod web/o (3 cpus) to c, the first node by
    name with room, which takes c's last cpus. b goes next: its pod, of the same shape, would
    score best on c now (12 of 16; d has 3 GiB left) but c has no cpu left, so it goes to e.
    c's verdicts must have been judged again for where the other pod went (sixteen full
    nodes beside them: a step's few changed nodes are judged again, not every node)."""
    full = [f"full-{i}" for i in range(16)]
    a = {**node("a", 16), "other_pods": [{"name": "web/o", "resources": {"cpu": "3"}}]}
    c = {**node("c", 16), "allocatable": {"cpu": "4"}}
    cluster = build(
        [a, node("b", 16), c, node("d", 16), node("e", 16), *(node(n, 16) for n in full)],
        [
            {**running("w/p1", "a", [0], 5), "resources": {"cpu": "1"}},
            {**running("w/p2", "b", [0], 5), "resources": {"cpu": "1"}},
            {**running("w/r", "c", [0], 7), "resources": {"cpu": "1"}},
            running("w/s", "d", [0], 8),
            running("w/t", "e", [0], 6),
            *(running(f"w/{name}", name, [0], 16) for name in full),
        ],
    )
    steps = scale_down(cluster, threshold=0.35)
    assert [(s.node, {p: w.node for p, w in s.moves.items()}) for s in steps] == [
        ("a", {"w/p1": "d"}),
        ("b", {"w/p2": "e"}),
    ]
    assert steps[0].also_moves == ("web/o",)


@settings(max_examples=examples(100), deadline=None)
@given(clusters(), st.sampled_from((0.3, 0.6, 1.01)))
def test_scale_down_moves_are_valid(cluster: Cluster, threshold: float) -> None:
    """Replays each step with diagnose (scaledown_replay): the node's pods re-queued after
    the Pending ones land where the step says, the Pending pods that landed before still
    land, and the end state is a valid scenario."""
    replay_steps(cluster, scale_down(cluster, threshold), threshold)


def _others(node: str) -> tuple[tuple[OtherPod, ...] | None, ...]:
    """A node's other pods: not known, none, one, or one of them blocking (names unique)."""
    a, b = OtherPod(f"web/{node}-a"), OtherPod(f"web/{node}-b", "bare")
    return (None, (), (a,), (a, b))


@st.composite
def pinned_clusters(draw: st.DrawFn) -> Cluster:
    """`clusters()` with some running pods do-not-disrupt and other pods, some blocking."""
    cluster = draw(clusters())
    pin = {DO_NOT_DISRUPT: "true"}
    pods = tuple(
        replace(p, annotations=pin) if p.placement and draw(st.integers(0, 3)) == 0 else p
        for p in cluster.pods
    )
    nodes = tuple(
        replace(n, other_pods=draw(st.sampled_from(_others(n.name)))) for n in cluster.nodes
    )
    return replace(cluster, nodes=nodes, pods=pods)


@settings(max_examples=examples(100), deadline=None)
@given(pinned_clusters(), st.sampled_from((0.3, 0.6, 1.01)))
def test_every_idle_node_is_proposed_or_held(cluster: Cluster, threshold: float) -> None:
    """Every node below the threshold is either proposed or held with one reason, never
    both, never neither; every proposal replays as the scheduler would place it."""
    advice = scale_down_advice(cluster, threshold)
    utilisation = node_utilisation(cluster)
    below = {name for name, u in utilisation.items() if u < threshold}
    proposed = [s.node for s in advice.steps]
    held = [h.node for h in advice.held]
    assert len(set(held)) == len(held)
    assert not set(proposed) & set(held)
    assert set(proposed) | set(held) == below
    replay_steps(cluster, advice.steps, threshold)  # each proposal is one the scheduler makes
    assert [(h.utilisation, h.node) for h in advice.held] == sorted(
        (utilisation[name], name) for name in held
    )
    received = {p.node for s in advice.steps for p in s.moves.values()}
    for h in advice.held:
        assert h.reason in HELD_REASONS
        assert h.detail
        assert (h.reason == "utilisation-rose") <= (h.node in received)


def test_headroom_counts_gpus_only_on_a_constrained_cluster() -> None:
    """a: two 16 GiB cards, 2 cores, tainted; x (8 GiB, 4 cores: more than the node has
    now, as a node that shrank keeps its pods) runs on card 0. Allotted: 8/16 = 0.5 GPU;
    capacity 2 GPUs; needed ceil(0.5 x 1.2 / 0.7) = ceil(0.857) = 1. The cpu, taint and
    tolerations change nothing of it."""
    node = gpu_node("a", 16, 16, cpu=2, taints=(Taint("dedicated", "NoSchedule", "x"),))
    pod = gpu_pod("t/x", 8, "a", cpu_milli=4 * CORE, constraints=tolerating("dedicated"))
    cluster = Cluster((node,), (pod,))
    assert (allotted_gpus(cluster), capacity_gpus(cluster)) == (0.5, 2)
    assert allotted_gpus(strip_node_fields(cluster)) == 0.5
    room = headroom(capacity_gpus(cluster), allotted_gpus(cluster))
    assert (room.needed_gpus, room.spare_gpus) == (1, 1)
