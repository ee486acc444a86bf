"""The planner's last look on small boards (`plan.exhaustive`): a hand case the greedy's
targets cannot express, and the property the issue asks for: wherever one plan of a few
evictions exists within the caps, a plan is reported. "Exists" is decided by brute force
with the independent checker's §8 simulation, which shares nothing with the planner."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, assume, given, settings

from advisor.core.diagnose import diagnose
from advisor.core.model import Card, Cluster, Node, Placement, Pod, Policy, Request
from advisor.core.plan import exhaustive as plan_exhaustive
from advisor.core.plan import plan
from tests.advisor.core.test_plan_checker import _landed, _protected, _with, check_report
from tests.advisor.core.test_plan_properties import fragmented
from tests.fastloop import examples

GiB = 1024
MAX_MOVABLE = 14  # boards the brute force below searches in a few hundred simulations


def two_cards_swap() -> Cluster:
    # Two 16 GiB cards, card binpack's opposite (spread): card 0 holds r0 (10 GiB), card 1
    # r1 (6) and r3 (4), all priority 10; 6 GiB free on each. w0 (8 GiB, priority 0)
    # waits. Evicting r3 alone frees 10 GiB on card 1, but r3 comes back first (higher
    # priority) and card spread sends it to the freest card: card 1 again. Evicting r3,
    # then r0: r3 lands on the empty card 0, r0 beside it (card 0 still the freest), and
    # card 1 keeps 10 GiB for w0. No card's own victims make that plan.
    def running(name: str, gib: int, card: int) -> Pod:
        return Pod(name, Request(1, gib * GiB), Placement("n1", (card,)), priority=10)

    return Cluster(
        (Node("n1", (Card(0, 16 * GiB), Card(1, 16 * GiB))),),
        (
            running("ml/r0", 10, 0),
            running("ml/r1", 6, 1),
            running("ml/r3", 4, 1),
            Pod("ml/w0", Request(1, 8 * GiB)),
        ),
        Policy("binpack", "spread"),
        max_vgpus_per_card=4,
    )


def test_two_evictions_in_the_right_order_make_room_no_single_card_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    c = two_cards_swap()
    report = plan(c)
    assert [(p.evict, p.rescues) for p in report.plans] == [(("ml/r3", "ml/r0"), ("ml/w0",))]
    assert dict(report.plans[0].placements) == {
        "ml/w0": Placement("n1", (1,)),
        "ml/r3": Placement("n1", (0,)),
        "ml/r0": Placement("n1", (0,)),
    }
    check_report(c, report)
    # Without the last look the greedy finds nothing here.
    monkeypatch.setattr(plan_exhaustive, "MAX_SIMULATIONS", 0)
    assert plan(c).plans == ()


def test_a_board_too_large_to_search_whole_is_left_to_the_greedy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Three movable pods: every pair needs 3 + 6 simulations. With room for 8 the board is
    # not searched at all (single evictions are the greedy's), and nothing rescues w0.
    monkeypatch.setattr(plan_exhaustive, "MAX_SIMULATIONS", 8)
    assert plan(two_cards_swap()).plans == ()
    monkeypatch.setattr(plan_exhaustive, "MAX_SIMULATIONS", 9)
    assert len(plan(two_cards_swap()).plans) == 1


def a_plan_exists(cluster: Cluster, most: int) -> bool:
    """Whether some eviction set of at most `most` pods, in some order, is a plan within
    the default caps: every evicted pod lands, a Pending pod lands, and every one that
    lands may be rescued (no pod the plans leave alone takes the room); at most 3
    evictions per card the rescued pods get. Only pods bound in the input may be evicted."""
    first = diagnose(cluster, node_detail_limit=0)
    causes = {d.pod.name: d for d in first.pods}
    bound = {d.pod.name: d.placement for d in first.pods if d.placement is not None}
    pods = [_with(p, bound[p.name]) if p.name in bound else p for p in cluster.pods]
    waiting = {n for n, d in causes.items() if d.cause in ("fragmentation", "capacity")}
    rescuable = {
        n
        for n in waiting
        if causes[n].cause == "fragmentation" or causes[n].cluster_free_sufficient
    }
    cards = {p.name: p.request.gpus for p in pods}
    # only pods bound in the input: those the cycle binds stay where it binds them
    movable = [p.name for p in cluster.pods if p.placement is not None and not _protected(p)]
    for size in range(1, most + 1):
        for evict in itertools.permutations(movable, size):
            landed = _landed(cluster, pods, evict)
            if not all(name in landed for name in evict):
                continue
            rescued = {name for name in landed if name in waiting}
            if rescued and rescued <= rescuable and size <= 3 * sum(cards[n] for n in rescued):
                return True
    return False


@settings(
    max_examples=examples(30),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
@given(fragmented())
def test_wherever_a_plan_of_two_evictions_exists_a_plan_is_reported(cluster: Cluster) -> None:
    assume(sum(p.placement is not None for p in cluster.pods) <= MAX_MOVABLE)
    assume(a_plan_exists(cluster, 2))  # enough do: hypothesis fails a filter that rejects most
    report = plan(cluster)
    assert report.plans
    check_report(cluster, report)
