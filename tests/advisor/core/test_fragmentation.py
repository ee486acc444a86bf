"""FGD fragmentation and stranded memory, checked against values worked out by hand."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.core.diagnose import diagnose
from advisor.core.fragmentation import fragmentation, typical_shapes
from advisor.core.model import Card, Cluster, Node, Pod, Policy, Request
from advisor.core.state import Shape
from tests.advisor.core.scenario_dicts import GiB, build, node, running
from tests.fastloop import examples


def pending(name: str, gpus: int, gib: int, core: int = 0) -> dict[str, Any]:
    return {"name": name, "request": {"gpus": gpus, "memory_mib": gib * GiB, "core_percent": core}}


def test_fgd_worked_example() -> None:
    """Two 16 GiB cards with 4 and 12 GiB free; four shapes of a quarter of the pods each.

    1 x 12 GiB: card 0 cannot host it -> 4 GiB.   1 x 4 GiB: both can -> 0.
    1 x 8 GiB:  card 0 cannot -> 4 GiB.           2 x 8 GiB: node cannot host it -> all 16 GiB.
    Node: 0.25 x (4 + 0 + 4 + 16) GiB = 6 GiB of 16 GiB free; stranded: card 0 (4 GiB).
    """
    cluster = build(
        [node("n1", 16, 16)],
        [
            running("a/big", "n1", [0], 12),
            running("a/small", "n1", [1], 4),
            pending("a/mid", 1, 8),
            pending("a/pair", 2, 16),
        ],
    )
    f = fragmentation(cluster)
    assert f.free_mib == 16 * GiB
    assert f.fragment_mib == pytest.approx(6 * GiB)
    assert f.ratio == pytest.approx(0.375)
    assert f.stranded_mib == 4 * GiB
    assert f.free_gpus == pytest.approx(1.0)
    assert f.fragment_gpus == pytest.approx(0.25 * (0.25 + 0 + 0.25 + 1.0))
    assert f.stranded_gpus == pytest.approx(0.25)
    assert f.stranded_ratio == pytest.approx(0.25)  # 4 of 16 GiB free
    [only] = f.nodes
    assert (only.node, only.fragment_mib, only.stranded_mib) == ("n1", 6 * GiB, 4 * GiB)
    # the node's figures in GPUs are the cluster's (one node): 1, 0.375 and 0.25
    assert (only.free_gpus, only.fragment_gpus, only.stranded_gpus) == pytest.approx(
        (1.0, 0.375, 0.25)
    )


def test_a_full_cluster_has_no_ratio_to_divide() -> None:
    """Nothing free: both ratios read 0, not a division by zero and not 1."""
    cluster = build([node("n1", 16)], [running("a/x", "n1", [0], 16), pending("a/p", 1, 8)])
    f = fragmentation(cluster)
    assert (f.free_mib, f.ratio, f.stranded_ratio) == (0, 0.0, 0.0)


def test_multi_card_shape_counts_only_the_cards_it_cannot_use() -> None:
    """2 x 16 GiB on four empty-ish cards: the node hosts it; only card 0's 8 GiB is fragment."""
    cluster = build(
        [node("n1", 16, 16, 16, 16)], [running("a/x", "n1", [0], 8), pending("a/p", 2, 32)]
    )
    shapes = typical_shapes([Pod("a/p", Request(2, 32 * GiB))])
    f = fragmentation(cluster, shapes)
    assert f.fragment_mib == pytest.approx(8 * GiB)
    assert f.stranded_mib == 8 * GiB


def test_mode_conflict_makes_a_card_unusable() -> None:
    """A memory+core card cannot take a memory-isolation pod: half the workload sees all
    12 GiB as fragment, the other half none; everything is stranded for the Pending pod."""
    cluster = build(
        [node("n1", 16)], [running("a/core", "n1", [0], 4, core=30), pending("a/mem", 1, 4)]
    )
    f = fragmentation(cluster)
    assert f.fragment_mib == pytest.approx(0.5 * 12 * GiB)
    assert f.stranded_mib == 12 * GiB


def test_vgpu_limit_makes_a_card_unusable() -> None:
    cluster = build(
        [node("n1", 16, 16)],
        [running("a/x", "n1", [0], 4), pending("a/y", 1, 4)],
        max_vgpus_per_card=1,
    )
    f = fragmentation(cluster)
    assert f.fragment_mib == pytest.approx(12 * GiB)  # card 0 is full by count
    assert f.stranded_mib == 12 * GiB
    assert f.free_mib == 28 * GiB


def test_unhealthy_cards_are_not_free() -> None:
    cluster = build([node("n1", 16, 16, unhealthy=(0,))], [pending("a/y", 1, 4)])
    f = fragmentation(cluster)
    assert f.free_mib == 16 * GiB
    assert f.fragment_mib == 0
    assert f.stranded_mib == 0


def test_nothing_pending_nothing_stranded() -> None:
    f = fragmentation(build([node("n1", 16)], [running("a/x", "n1", [0], 4)]))
    assert f.stranded_mib == 0
    assert f.fragment_mib == 0  # the only shape (1 x 4 GiB) fits the 12 GiB left


def test_typical_shapes_popularity_and_coverage() -> None:
    pods = [Pod(f"a/{i}", Request(1, 4096)) for i in range(3)]
    pods += [Pod(f"b/{i}", Request(2, 8192)) for i in range(2)]
    pods += [Pod("c/0", Request(1, 1024, 10)), Pod("d/bad", Request(1, 100))]  # last invalid
    every = typical_shapes(pods)
    assert [(w.shape, w.pods) for w in every] == [
        (Shape(1, 4096, 0, 0), 3),
        (Shape(2, 4096, 0, 0), 2),
        (Shape(1, 1024, 10, 1), 1),
    ]
    assert [w.share for w in every] == pytest.approx([3 / 6, 2 / 6, 1 / 6])
    assert [w.share for w in typical_shapes(pods, coverage=0.5)] == [1.0]
    assert [w.share for w in typical_shapes(pods, coverage=0.6)] == pytest.approx([0.6, 0.4])
    with pytest.raises(ValueError, match="coverage"):
        typical_shapes(pods, coverage=0)
    with pytest.raises(ValueError, match=r"coverage must be in \(0, 1\], got 1.5"):
        typical_shapes(pods, coverage=1.5)


# -- properties ----------------------------------------------------------------------------


@st.composite
def clusters(draw: st.DrawFn) -> Cluster:
    """Random clusters, half of whose placeable pods are then bound as running."""
    nodes = []
    for i in range(draw(st.integers(1, 4))):
        cards = tuple(
            Card(
                j,
                draw(st.sampled_from((4096, 8192, 16384))),
                healthy=draw(st.booleans()) or draw(st.booleans()),
            )
            for j in range(draw(st.integers(1, 4)))
        )
        nodes.append(Node(f"node-{i}", cards))
    pods = []
    for i in range(draw(st.integers(1, 12))):
        gpus = draw(st.integers(1, 3))
        per_card = draw(st.sampled_from((512, 1024, 2048, 4096, 6144)))
        core = draw(st.sampled_from((0, 0, 10, 25)))
        pods.append(Pod(f"ns/p{i}", Request(gpus, gpus * per_card, gpus * core)))
    policy = Policy(
        draw(st.sampled_from(("binpack", "spread"))), draw(st.sampled_from(("binpack", "spread")))
    )
    cluster = Cluster(tuple(nodes), tuple(pods), policy, draw(st.integers(1, 3)))
    result = diagnose(cluster)
    bind = draw(st.lists(st.booleans(), min_size=len(pods), max_size=len(pods)))
    placed = {d.pod.name: d.placement for d in result.pods}
    bound = tuple(
        Pod(p.name, p.request, placed[p.name] if keep else None)
        for p, keep in zip(pods, bind, strict=True)
    )
    return Cluster(cluster.nodes, bound, policy, cluster.max_vgpus_per_card)


@settings(max_examples=examples(150), deadline=None)
@given(clusters())
def test_fragment_and_stranded_never_exceed_free(cluster: Cluster) -> None:
    f = fragmentation(cluster)
    assert 0 <= f.fragment_mib <= f.free_mib + 1e-6
    assert 0 <= f.stranded_mib <= f.free_mib
    assert 0 <= f.ratio <= 1 + 1e-9
    for n in f.nodes:
        assert -1e-6 <= n.fragment_mib <= n.free_mib + 1e-6
        assert 0 <= n.stranded_mib <= n.free_mib
    assert sum(n.free_mib for n in f.nodes) == f.free_mib
    assert f == fragmentation(cluster)


@settings(max_examples=examples(100), deadline=None)
@given(clusters())
def test_a_pending_pod_that_fits_strands_nothing_on_its_cards(cluster: Cluster) -> None:
    """The first Pending pod sees the cluster as measured: if it fits, its node's free
    memory was usable by it, so not all of it is stranded."""
    f = fragmentation(cluster)
    verdicts = diagnose(cluster).pods
    if verdicts and verdicts[0].placement is not None:
        node = next(n for n in f.nodes if n.node == verdicts[0].placement.node)
        assert node.stranded_mib < node.free_mib
