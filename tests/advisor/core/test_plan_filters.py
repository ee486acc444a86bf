"""Plans honour kube-scheduler's node filters (docs/design.md §9.1): an evicted pod is only
re-placed where the real scheduler would take it, the room a plan makes is only on nodes
that admit the Pending pod, and other pods' cpu and memory count. Each case is small enough
to compute by hand (the comments do); every plan is also run past the independent checker,
which restates the filters without the core."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings

from advisor.core.diagnose import diagnose
from advisor.core.model import Cluster, Placement
from advisor.core.nodefilters import Taint
from advisor.core.plan import PlanOptions, apply_plans, plan
from advisor.core.plan.board import Board
from advisor.core.plan.chains import chain_options
from advisor.core.plan.ideal import ideal_bound
from advisor.core.plan.search import Limits, Search, levels_of
from advisor.core.state import Shape
from tests.advisor.core.constrained import (
    CORE,
    GiB,
    constrained_clusters,
    gpu_node,
    gpu_pod,
    other,
    selecting,
    strip_node_fields,
    tolerating,
)
from tests.advisor.core.filter_checker import placement_refusals, static_refusal
from tests.advisor.core.test_plan_checker import check_report
from tests.fastloop import examples

DO_NOT_DISRUPT = {"xgpu.io/do-not-disrupt": "true"}
DEDICATED = Taint("dedicated", "NoSchedule", "x")


def listed_targets(cluster: Cluster) -> list[tuple[str, tuple[int, ...]]]:
    """(node, card positions) of every target the search lists on the board of `cluster`."""
    first = diagnose(cluster, node_detail_limit=0)
    board = Board(cluster, {d.pod.name: d.placement for d in first.pods if d.placement})
    board.set_pending(d.pod.name for d in first.pods if d.cause in ("fragmentation", "capacity"))
    search = Search(board, Limits(32, 3, 4), 16 * GiB)
    levels = levels_of(board, board.pending)
    targets = [
        *search.card_targets(range(len(board.state.capacity)), levels),
        *search.node_targets(range(len(board.state.node_names)), levels),
    ]
    return [(board.state.node_names[t.node], t.cards) for t in targets]


def cpu_bound_pair() -> Cluster:
    """a, b: one 16 GiB card and 4 cores each. a runs v (8 GiB, 2 cores); b runs w (8 GiB,
    1 core) and an other pod of 2 cores. p (16 GiB, 1 core) waits."""
    return Cluster(
        (
            gpu_node("a", 16, cpu=4),
            gpu_node("b", 16, cpu=4, others=(other("web/x", 2 * CORE),)),
        ),
        (
            gpu_pod("t/v", 8, "a", cpu_milli=2 * CORE),
            gpu_pod("t/w", 8, "b", cpu_milli=CORE),
            gpu_pod("t/p", 16, cpu_milli=CORE),
        ),
    )


def test_an_evicted_pod_is_only_replaced_where_its_cpu_fits() -> None:
    # p fits both nodes' cpu (a: 2 + 1 <= 4, b: 3 + 1 <= 4) and 8 + 8 GiB are free: capacity,
    # enough if consolidated. Freeing a (evict v): p lands on a, but v (8 GiB, 2 cores) finds
    # b's 8 GiB with 1 core left, and no smaller pod to chain: no plan. Freeing b (evict w):
    # p lands on b (2 + 1 cores), w on a (2 + 1 cores).
    cluster = cpu_bound_pair()
    report = plan(cluster)
    check_report(cluster, report)
    (only,) = report.plans
    assert only.evict == ("t/w",)
    assert dict(only.placements) == {
        "t/p": Placement("b", (0,)),
        "t/w": Placement("a", (0,)),
    }
    # Without cpu the two plans tie and node a's comes first: the cpu made the difference.
    (gpu_only,) = plan(strip_node_fields(cluster)).plans
    assert gpu_only.evict == ("t/v",)


def test_plans_keep_the_pods_cpu_and_constraints() -> None:
    cluster = cpu_bound_pair()
    after = apply_plans(cluster, plan(cluster))
    assert [(p.name, p.resources, p.constraints) for p in after.pods] == [
        (p.name, p.resources, p.constraints) for p in cluster.pods
    ]
    assert {p.name: p.placement for p in after.pods}["t/p"] == Placement("b", (0,))


def test_no_target_on_a_node_the_pods_selector_excludes() -> None:
    # a (pool x): two 16 GiB cards with 8 GiB pods v1, v2; b (pool y): one card with w.
    # p (16 GiB, pool x) can only use a: targets are a's card 0 (evict v1) and card 1
    # (evict v2), card positions 0 and 1. Without the selector b's card (position 2) too.
    cluster = Cluster(
        (gpu_node("a", 16, 16, labels={"pool": "x"}), gpu_node("b", 16, labels={"pool": "y"})),
        (
            gpu_pod("t/v1", 8, "a", (0,)),
            gpu_pod("t/v2", 8, "a", (1,)),
            gpu_pod("t/w", 8, "b"),
            gpu_pod("t/p", 16, constraints=selecting(pool="x")),
        ),
    )
    assert listed_targets(cluster) == [("a", (0,)), ("a", (1,))]
    assert listed_targets(strip_node_fields(cluster)) == [("a", (0,)), ("a", (1,)), ("b", (2,))]
    check_report(cluster, plan(cluster))


def cpu_short_after_evictions(p_cores: int) -> Cluster:
    """a: one 16 GiB card, 4 cores, an other pod of 3 cores and v (8 GiB, 1 core); b: two
    16 GiB cards with 8 GiB pods w1, w2 (cpu not known). p (16 GiB, `p_cores`) waits."""
    return Cluster(
        (
            gpu_node("a", 16, cpu=4, others=(other("web/x", 3 * CORE),)),
            gpu_node("b", 16, 16),
        ),
        (
            gpu_pod("t/v", 8, "a", cpu_milli=CORE),
            gpu_pod("t/w1", 8, "b", (0,)),
            gpu_pod("t/w2", 8, "b", (1,)),
            gpu_pod("t/p", 16, cpu_milli=p_cores * CORE),
        ),
    )


def test_no_target_where_the_cpu_stays_short_after_the_evictions() -> None:
    # Evicting v frees 1 core on a: 3 + p's 2 > 4, so a's card (position 0) is no target;
    # b's cards (positions 1, 2) are. With p asking 1 core, 3 + 1 <= 4: a's card is one.
    assert listed_targets(cpu_short_after_evictions(2)) == [("b", (1,)), ("b", (2,))]
    assert listed_targets(cpu_short_after_evictions(1)) == [
        ("a", (0,)),
        ("b", (1,)),
        ("b", (2,)),
    ]
    # The plan frees b's card 0 (w1, the first of the two equal targets); w1 asks no cpu
    # and a's 8 GiB card and b's card 1 score alike under binpack (both nodes full after),
    # so the name decides: a.
    cluster = cpu_short_after_evictions(2)
    report = plan(cluster)
    check_report(cluster, report)
    (only,) = report.plans
    assert only.evict == ("t/w1",)
    assert dict(only.placements) == {"t/p": Placement("b", (0,)), "t/w1": Placement("a", (0,))}


def test_chain_options_skip_nodes_whose_taints_the_pod_does_not_tolerate() -> None:
    # c1 (tainted) and c2: one 16 GiB card each with an 8 GiB and a 4 GiB pod (4 GiB free).
    # An 8 GiB pod is 4 GiB short on either: evicting the 4 GiB pod (s1 on card position
    # 0, s2 on position 1; pod ids 0 and 2) makes room, but c1 only for a pod tolerating it.
    cluster = Cluster(
        (gpu_node("c1", 16, taints=(DEDICATED,)), gpu_node("c2", 16)),
        (
            gpu_pod("t/s1", 4, "c1"),
            gpu_pod("t/f1", 8, "c1"),
            gpu_pod("t/s2", 4, "c2"),
            gpu_pod("t/f2", 8, "c2"),
        ),
    )
    board = Board(cluster, {})
    limit = board.movable_limit()
    plain = Shape.of_pod(gpu_pod("t/v", 8))
    tolerant = Shape.of_pod(gpu_pod("t/v", 8, constraints=tolerating("dedicated")))
    assert chain_options(board, plain, limit) == [(1, 4 * GiB, 0, (2,))]
    assert chain_options(board, tolerant, limit) == [(0, 4 * GiB, 0, (0,)), (1, 4 * GiB, 0, (2,))]


def test_a_chain_skips_a_card_whose_node_lacks_the_cpu() -> None:
    # p (16 GiB) needs a's card emptied of v (8 GiB, 2 cores); no card has 8 GiB free, so
    # v needs a chain: c1 or c2 (8 GiB do-not-disrupt + 4 GiB pod each) after evicting the
    # 4 GiB pod. c1 comes first but has 2 cores with 1 taken: v cannot go there. So the
    # chain evicts s2 on c2; v lands on c2, s2 on c1's 4 GiB. Two evictions, not three.
    cluster = Cluster(
        (
            gpu_node("a", 16),
            gpu_node("c1", 16, cpu=2, others=(other("web/x", CORE),)),
            gpu_node("c2", 16),
        ),
        (
            gpu_pod("t/v", 8, "a", cpu_milli=2 * CORE),
            gpu_pod("t/f1", 8, "c1", annotations=DO_NOT_DISRUPT),
            gpu_pod("t/s1", 4, "c1"),
            gpu_pod("t/f2", 8, "c2", annotations=DO_NOT_DISRUPT),
            gpu_pod("t/s2", 4, "c2"),
            gpu_pod("t/p", 16),
        ),
    )
    report = plan(cluster)
    check_report(cluster, report)
    (only,) = report.plans
    assert only.evict == ("t/v", "t/s2")
    assert dict(only.placements) == {
        "t/p": Placement("a", (0,)),
        "t/v": Placement("c2", (0,)),
        "t/s2": Placement("c1", (0,)),
    }
    # Without cpu the first chain card, c1, serves.
    (gpu_only,) = plan(strip_node_fields(cluster)).plans
    assert gpu_only.evict == ("t/v", "t/s1")


def test_the_ideal_repack_honours_taints() -> None:
    # Two empty 16 GiB cards, one on a tainted node; two 16 GiB pods without toleration:
    # a repack places one (on b), not two.
    cluster = Cluster(
        (gpu_node("a", 16, taints=(DEDICATED,)), gpu_node("b", 16)),
        (gpu_pod("t/p1", 16), gpu_pod("t/p2", 16)),
    )
    assert ideal_bound(cluster).repack_pods == 1
    assert ideal_bound(strip_node_fields(cluster)).repack_pods == 2


# -- the independent checker bites --------------------------------------------------------


def test_the_filter_checker_names_each_filter() -> None:
    plain = gpu_pod("t/p", 8, "n", cpu_milli=CORE)
    cases = {
        "unschedulable": gpu_node("n", 16, cordoned=True),
        "node selector": gpu_node("n", 16, labels={"pool": "y"}),
        "taint dedicated": gpu_node("n", 16, taints=(DEDICATED,)),
    }
    choosy = replace(plain, constraints=selecting(pool="x"))
    for want, node in cases.items():
        pod = choosy if want == "node selector" else plain
        assert static_refusal(node, pod.constraints) == want
        assert placement_refusals([node], [pod], {"t/p"}) == [f"t/p on n: {want}"]
    # PreferNoSchedule only scores; a tolerated taint and a matching selector pass.
    prefer = gpu_node("n", 16, taints=(Taint("spot", "PreferNoSchedule", "yes"),))
    assert static_refusal(prefer, plain.constraints) is None
    assert static_refusal(cases["taint dedicated"], tolerating("dedicated")) is None
    labelled = gpu_node("n", 16, labels={"pool": "x"})
    assert static_refusal(labelled, choosy.constraints) is None


def test_the_filter_checker_counts_every_pod_on_the_node() -> None:
    # 4 cores: an other pod of 2, a resident GPU pod of 1, an arrival of 2: 5 > 4.
    node = gpu_node("n", 16, 16, cpu=4, others=(other("web/x", 2 * CORE),))
    stays = gpu_pod("t/s", 4, "n", (0,), cpu_milli=CORE)
    comes = gpu_pod("t/c", 4, "n", (1,), cpu_milli=2 * CORE)
    assert placement_refusals([node], [stays, comes], {"t/c"}) == ["n: 5000m cpu over 4000m"]
    # The same total is no refusal when only the pod staying was there before (nothing
    # arrived), or when the arrival asks no cpu (kube-scheduler checks only what is asked).
    assert placement_refusals([node], [stays, comes], set()) == []
    free = replace(comes, resources=replace(comes.resources, cpu_milli=0))
    overcommitted = replace(node, other_pods=(other("web/x", 5 * CORE),))
    assert placement_refusals([overcommitted], [stays, free], {"t/c"}) == []
    # Pod slots: every pod asks one.
    slots = replace(node, allocatable=replace(node.allocatable, pods=2, cpu_milli=None))
    assert placement_refusals([slots], [stays, free], {"t/c"}) == ["n: 3 pods over 2 slots"]


def test_the_filter_checker_rejects_a_plan_onto_a_tainted_node() -> None:
    # The cpu-bound pair's plan moves w to a; on the same cluster with a tainted, that move
    # breaks TaintToleration (the plan's own cluster: no refusal).
    cluster = cpu_bound_pair()
    (only,) = plan(cluster).plans
    tainted = replace(
        cluster,
        nodes=(replace(cluster.nodes[0], taints=(DEDICATED,)), cluster.nodes[1]),
    )
    where = dict(only.placements)
    moved = [replace(p, placement=where.get(p.name, p.placement)) for p in cluster.pods]
    assert placement_refusals(tainted.nodes, moved, where) == ["t/w on a: taint dedicated"]
    assert placement_refusals(cluster.nodes, moved, where) == []


# -- properties ---------------------------------------------------------------------------

SETTINGS = settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)


@SETTINGS
@given(constrained_clusters())
def test_no_plan_breaks_a_node_filter(cluster: Cluster) -> None:
    """Random clusters with labels, taints, cordons, allocatable, other pods, requests,
    selectors, affinity and tolerations: every plan holds, and no placement it makes puts a
    pod where a filter refuses it (the independent checker)."""
    check_report(cluster, plan(cluster, PlanOptions(max_evaluations=400)))


@SETTINGS
@given(constrained_clusters())
def test_the_quick_simulation_equals_the_literal_one_under_filters(cluster: Cluster) -> None:
    first = diagnose(cluster, node_detail_limit=0)
    board = Board(cluster, {d.pod.name: d.placement for d in first.pods if d.placement})
    board.set_pending(d.pod.name for d in first.pods if d.cause in ("fragmentation", "capacity"))
    running = [i for i, where in enumerate(board.where) if where is not None]
    for size in (1, 2, 3):
        evict = running[:size]
        quick = board.simulate(evict, quick=True)
        literal = board.simulate(evict, quick=False)
        assert (quick.landed, quick.rescued, quick.stranded) == (
            literal.landed,
            literal.rescued,
            literal.stranded,
        )
        assert (quick.state.requested == literal.state.requested).all()


def test_no_plan_whose_room_a_pod_short_of_cpu_would_take() -> None:
    """a: one 16 GiB card, 4 cores, v (8 GiB, 3 cores); b: the same, w (8 GiB, 1 core) and an
    other pod of 2 cores. p (16 GiB, 1 core) waits, and q (4 GiB, 2 cores, priority 5),
    short of cpu on both nodes (3 + 2 > 4): node-resources, not a plan's to rescue. Evicting
    w frees b for p on paper, but q is queued first and takes b (2 + 2 cores); evicting v
    frees a, and q takes it the same way. Either plan would leave p Pending: none is made."""
    cluster = Cluster(
        (
            gpu_node("a", 16, cpu=4),
            gpu_node("b", 16, cpu=4, others=(other("web/x", 2 * CORE),)),
        ),
        (
            gpu_pod("t/v", 8, "a", cpu_milli=3 * CORE),
            gpu_pod("t/w", 8, "b", cpu_milli=CORE),
            gpu_pod("t/p", 16, cpu_milli=CORE),
            replace(gpu_pod("t/q", 4, cpu_milli=2 * CORE), priority=5),
        ),
    )
    causes = {d.pod.name: d.cause for d in diagnose(cluster, node_detail_limit=0).pods}
    assert (causes["t/p"], causes["t/q"]) == ("capacity", "node-resources")
    report = plan(cluster)
    check_report(cluster, report)
    assert report.plans == ()
    # Without q in the queue, evicting w would do (what a planner blind to q proposes).
    alone = replace(cluster, pods=cluster.pods[:3])
    (only,) = plan(alone).plans
    assert only.evict == ("t/w",)
