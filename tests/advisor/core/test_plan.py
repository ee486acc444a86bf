"""Rebalancing plans (docs/design.md §8) on hand-built clusters, each checked independently."""

from __future__ import annotations

import heapq
import itertools

import pytest

from advisor.core.model import Cluster, Placement
from advisor.core.plan import PlanOptions, apply_plans, plan
from advisor.core.plan.board import Board
from advisor.core.plan.floors import Listing
from advisor.core.plan.greedy import REGENERATE_CHECK_EVERY, Greedy
from advisor.core.plan.limits import EvictionBudget
from advisor.core.plan.search import Limits, Search, Target
from tests.advisor.core.test_placement import cce_example
from tests.advisor.core.test_plan_checker import (
    GiB,
    build,
    check_report,
    node,
    pending,
    running,
    two_dependent_plans,
)


def test_cce_example_one_eviction_rescues_the_second_replica() -> None:
    # CCE's fragmentation example: cards with 4, 4 and 8 GiB free; the first replica of
    # 2 x 4 GiB takes the two 4 GiB cards, the second finds one card. Moving one 12 GiB
    # pod to the spare node frees a second card.
    cluster = build(
        [node("cce-node-1", 16, 16, 16), node("spare", 16)],
        [
            running("ml/train-a", "cce-node-1", [0], 12),
            running("ml/train-b", "cce-node-1", [1], 12),
            running("ml/notebook-c", "cce-node-1", [2], 8),
            running("ml/small", "spare", [0], 4),
            pending("web/infer-1", 2, 8),
            pending("web/infer-2", 2, 8),
        ],
    )
    report = plan(cluster)
    check_report(cluster, report)
    assert dict(report.schedulable) == {"web/infer-1": Placement("cce-node-1", (0, 1))}
    (only,) = report.plans
    assert only.rescues == ("web/infer-2",)
    assert only.evict == ("ml/train-a",)
    assert dict(only.placements) == {
        "web/infer-2": Placement("cce-node-1", (0, 2)),
        "ml/train-a": Placement("spare", (0,)),
    }
    assert report.unresolved == ()
    assert report.rescued_share == 1.0
    assert report.evictions == 1


def test_cce_worked_example_two_evictions_swap_the_second_replica_in() -> None:
    # CCE's docs on one node: cards with 4, 4 and 8 GiB free (12, 12 and 8 GiB held); two
    # replicas of 2 cards x 4 GiB. Card binpack puts the first on cards 0 and 1 and the
    # second finds one card. Evicting ml/a (12 GiB, card 0) and ml/c (8 GiB, card 2) leaves
    # 12 and 16 GiB free: the replica takes 4 of each (the least free first), ml/a the 12
    # left on card 2, ml/c the 8 left on card 0. Two evictions rescue 0.5 GPU of memory on
    # two cards: 1 per card, within the default budget (3 per card) and cap (4 per plan).
    cluster = cce_example("binpack")
    report = plan(cluster)
    check_report(cluster, report)
    (only,) = report.plans
    assert only.rescues == ("web/r2",)
    assert only.evict == ("ml/a", "ml/c")  # larger first: the order they re-enter the queue
    assert dict(only.placements) == {
        "web/r2": Placement("n1", (0, 2)),
        "ml/a": Placement("n1", (2,)),
        "ml/c": Placement("n1", (0,)),
    }
    assert (only.rescued_gpus, only.rescued_cards) == (0.5, 2)
    assert report.unresolved == ()
    # Refused by a cap, it is still reported, with the flag to raise.
    capped = plan(cluster, PlanOptions(max_plan_evictions=1))
    check_report(cluster, capped)
    assert capped.plans == ()
    (held,) = capped.held_back
    assert (held.rescues, held.evict, held.flag, held.limit, held.needs) == (
        ("web/r2",),
        ("ml/a", "ml/c"),
        "--max-plan-evictions",
        "1",
        "2",
    )


@pytest.mark.parametrize(
    "protect",
    [
        {"name": "kube-system/probe"},
        {"annotations": {"xgpu.io/do-not-disrupt": "true"}},
        {"annotations": {"xgpu.io/do-not-disrupt": " True "}},
    ],
)
def test_protected_pods_are_never_evicted(protect: dict[str, object]) -> None:
    def cluster_with(other_victim: bool) -> list[dict[str, object]]:
        pods = [
            {**running("ml/guarded", "a", [0], 8), **protect},
            running("ml/filler", "b", [0], 12),
            pending("ml/big", 1, 16),
        ]
        if other_victim:
            pods.insert(1, running("ml/movable", "a", [1], 8))
        return pods

    # Only the protected pod stands in the way: no plan. (capacity, not fragmentation: the
    # 8 GiB card beside it can never hold the 16 GiB pod, so its free memory does not count.)
    alone = build([node("a", 16, 8), node("b", 16)], cluster_with(False))
    report = plan(alone)
    check_report(alone, report)
    assert report.plans == ()
    assert [(u.pod, u.cause) for u in report.unresolved] == [("ml/big", "capacity")]
    # With a movable pod beside it, the plan moves that one.
    both = build([node("a", 16, 16), node("b", 16)], cluster_with(True))
    report = plan(both)
    check_report(both, report)
    assert [p.evict for p in report.plans] == [("ml/movable",)]


def test_a_chain_of_evictions_across_three_nodes() -> None:
    # The big pod needs node a's card empty; its 8 GiB pod fits only on node b once a 4 GiB
    # pod leaves b for node c's 4 GiB gap.
    cluster = build(
        [node("a", 16), node("b", 16), node("c", 16)],
        [
            running("t/v", "a", [0], 8),
            running("t/w", "b", [0], 4),
            running("t/y", "b", [0], 8),
            running("t/z", "c", [0], 12),
            pending("t/big", 1, 16),
        ],
    )
    report = plan(cluster)
    check_report(cluster, report)
    (only,) = report.plans
    assert only.rescues == ("t/big",)
    assert only.evict == ("t/v", "t/w")  # larger first: the order they re-enter the queue
    assert dict(only.placements) == {
        "t/big": Placement("a", (0,)),
        "t/v": Placement("b", (0,)),
        "t/w": Placement("c", (0,)),
    }


def test_plans_apply_cumulatively() -> None:
    cluster = two_dependent_plans()
    report = plan(cluster)
    check_report(cluster, report)
    assert [p.rescues for p in report.plans] == [("t/p1",), ("t/p2",)]
    after = apply_plans(cluster, report)
    assert all(p.placement is not None for p in after.pods)


def test_no_plan_when_an_evicted_pod_could_not_land() -> None:
    # Evicting either 10 GiB pod frees a card for the 16 GiB pod, but no card has 10 GiB
    # free for the evicted one and nothing smaller could make room: nothing is reported.
    cluster = build(
        [node("a", 16, 16), node("b", 16)],
        [
            running("t/v", "a", [0], 10),
            running("t/u", "a", [1], 10),
            running("t/w", "b", [0], 10),
            pending("t/big", 1, 16),
        ],
    )
    report = plan(cluster)
    check_report(cluster, report)
    assert report.plans == ()
    (left,) = report.unresolved
    assert (left.pod, left.cause, left.cluster_free_sufficient) == ("t/big", "capacity", True)


def test_a_higher_priority_victim_would_come_back_first_so_a_lower_one_is_moved() -> None:
    # Evicting the priority-100 pod is useless: it re-enters the queue before the Pending
    # priority-0 pod and takes its card back. The priority-0 neighbour can go instead.
    cluster = build(
        [node("a", 16, 16), node("b", 16)],
        [
            running("t/important", "a", [0], 8, priority=100),
            running("t/ordinary", "a", [1], 8),
            running("t/filler", "b", [0], 8),
            pending("t/big", 1, 16),
        ],
    )
    report = plan(cluster)
    check_report(cluster, report)
    assert [p.evict for p in report.plans] == [("t/ordinary",)]


def test_a_higher_priority_victim_gets_a_home_elsewhere_when_it_would_come_back() -> None:
    # Evicting the priority-50 pod frees card a0, but it is queued before the Pending pod
    # and would take a0 back; a chain (moving t/y from c0 to b0) gives it c0 instead. That
    # beats emptying c0 for the big pod (three evictions).
    cluster = build(
        [node("a", 16), node("b", 16), node("c", 16)],
        [
            running("t/v", "a", [0], 10, priority=50),
            running("kube-system/w", "b", [0], 10),
            running("t/y", "c", [0], 4),
            running("t/z", "c", [0], 3),
            running("t/x", "c", [0], 3),
            pending("t/big", 1, 16),
        ],
    )
    report = plan(cluster)
    check_report(cluster, report)
    (only,) = report.plans
    assert only.evict == ("t/v", "t/y")
    assert dict(only.placements) == {
        "t/big": Placement("a", (0,)),
        "t/v": Placement("c", (0,)),
        "t/y": Placement("b", (0,)),
    }


def test_a_pod_cannot_move_while_a_pending_pod_it_dominates_waits_unless_it_goes_first() -> None:
    cluster = build(
        [node("a", 16, 16)],
        [
            running("t/same", "a", [0], 10),
            running("t/urgent", "a", [1], 10, priority=50),
            running("kube-system/probe", "a", [1], 2),
            pending("t/wait", 1, 10),
        ],
    )
    board = Board(cluster, {})
    board.set_pending(["t/wait"])
    movable = {p.name: board.movable(i) for i, p in enumerate(board.pods) if p.placement}
    assert movable == {"t/same": False, "t/urgent": True, "kube-system/probe": False}


def test_lower_priority_victims_are_preferred() -> None:
    cluster = build(
        [node("a", 16, 16), node("b", 16)],
        [
            running("t/five", "a", [0], 8, priority=5),
            running("t/one", "a", [1], 8, priority=1),
            running("t/filler", "b", [0], 12),
            pending("t/big", 1, 16, priority=10),
        ],
    )
    report = plan(cluster)
    check_report(cluster, report)
    assert [p.evict for p in report.plans] == [("t/one",)]


def test_higher_priority_pending_pods_are_rescued_first() -> None:
    cluster = build(
        [node("a", 16), node("b", 16)],
        [
            running("t/v", "a", [0], 8),
            running("t/filler", "b", [0], 8),
            pending("t/low", 1, 16),
            pending("t/high", 1, 16, priority=50),
        ],
    )
    report = plan(cluster)
    check_report(cluster, report)
    assert [p.rescues for p in report.plans] == [("t/high",)]
    assert [u.pod for u in report.unresolved] == ["t/low"]


def test_fewer_evictions_win() -> None:
    # Card 0 empties with one eviction, card 1 needs two.
    cluster = build(
        [node("a", 16, 16)],
        [
            running("t/one", "a", [0], 8),
            running("t/two-a", "a", [1], 4),
            running("t/two-b", "a", [1], 4),
            pending("t/big", 1, 16),
        ],
    )
    report = plan(cluster)
    check_report(cluster, report)
    assert [p.evict for p in report.plans] == [("t/one",)]


def test_a_multi_card_pod_gets_a_node_freed() -> None:
    cluster = build(
        [node("a", 16, 16), node("b", 16, 16)],
        [
            running("t/x", "a", [0], 8),
            running("t/y", "a", [1], 8),
            running("t/b0", "b", [0], 8),
            pending("t/pair", 2, 32),
        ],
    )
    report = plan(cluster)
    check_report(cluster, report)
    (only,) = report.plans
    assert only.rescues == ("t/pair",)
    assert only.evict == ("t/b0",)
    assert dict(only.placements)["t/pair"] == Placement("b", (0, 1))


def three_small_pods_in_the_way() -> Cluster:
    """Card a0 empties only by moving its three 4 GiB pods into node c's 4 GiB gaps."""
    return build(
        [node("a", 16), node("c", 16, 16, 16)],
        [
            running("t/v1", "a", [0], 4),
            running("t/v2", "a", [0], 4),
            running("t/v3", "a", [0], 4),
            running("t/c0", "c", [0], 12),
            running("t/c1", "c", [1], 12),
            running("t/c2", "c", [2], 12),
            pending("t/big", 1, 16),
        ],
    )


def test_the_eviction_budget_holds_for_all_plans_together() -> None:
    cluster = three_small_pods_in_the_way()
    # Three evictions for one rescued card: allowed at 3 per card (the default), and by a
    # count of 3; not at 2 per card nor by a count of 2, and then said so.
    for allowing in (EvictionBudget(), EvictionBudget(3, "advice")):
        report = plan(cluster, PlanOptions(max_evictions=allowing))
        check_report(cluster, report)
        assert report.evictions == 3
        assert report.held_back == ()
    for refusing, needs in (
        (EvictionBudget(2, "card"), "3/card"),
        (EvictionBudget(2, "advice"), "3"),
    ):
        tight = plan(cluster, PlanOptions(max_evictions=refusing))
        check_report(cluster, tight)
        assert tight.plans == ()
        (held,) = tight.held_back
        assert (held.rescues, held.flag, held.limit, held.needs) == (
            ("t/big",),
            "--max-evictions",
            refusing.text,
            needs,
        )
        assert len(held.evict) == 3


def test_a_plan_above_the_per_plan_cap_is_reported_with_the_flag_to_raise() -> None:
    cluster = three_small_pods_in_the_way()
    report = plan(cluster, PlanOptions(max_plan_evictions=2))
    check_report(cluster, report)
    assert report.plans == ()
    (held,) = report.held_back
    assert (held.rescues, held.flag, held.limit, held.needs) == (
        ("t/big",),
        "--max-plan-evictions",
        "2",
        "3",  # the three 4 GiB pods
    )
    assert [u.pod for u in report.unresolved] == ["t/big"]


def test_a_tiny_time_budget_stops_the_search_between_runs_and_says_so() -> None:
    ticks = itertools.count()

    def clock() -> float:
        return float(next(ticks))  # one second per look

    cluster = two_dependent_plans()
    report = plan(cluster, PlanOptions(time_budget_s=0.5), clock=clock)
    assert report.stopped == "time"
    # The safety stop never cuts a run (issue #25): the first one is whole, then nothing
    # more starts, the look for plans above the caps neither.
    first_run = plan(cluster, PlanOptions(portfolio_evaluations=0))
    assert report.plans == first_run.plans
    assert len(report.plans) == 2
    assert report.budget_s == 0.5
    check_report(cluster, report)
    untimed = plan(cluster)
    assert untimed.stopped is None
    assert untimed.budget_s is None


def test_a_work_bound_gives_the_same_plans_every_time() -> None:
    cluster = two_dependent_plans()
    first = plan(cluster, PlanOptions(max_evaluations=1))
    assert first.stopped == "work"
    assert first == plan(cluster, PlanOptions(max_evaluations=1))
    whole = plan(cluster)
    assert whole.stopped is None
    assert len(whole.plans) == 2
    # One unit of work: it stops before any plan, and says so, every time.
    tiny = PlanOptions(work=1)
    stopped = plan(cluster, tiny)
    assert (stopped.stopped, stopped.plans) == ("work", ())
    assert stopped.work >= 1
    assert stopped == plan(cluster, tiny)
    check_report(cluster, stopped)


def test_ideal_bound_repacks_and_memory_caps() -> None:
    cluster = build(
        [node("a", 16), node("b", 16)],
        [
            running("t/x", "a", [0], 8),
            running("t/y", "b", [0], 8),
            pending("t/big", 1, 16),
            pending("t/huge", 1, 16),
        ],
    )
    ideal = plan(cluster).ideal
    assert (ideal.pending_pods, ideal.pending_mib) == (2, 32 * GiB)
    assert (ideal.repack_pods, ideal.repack_mib, ideal.repack_running_unplaced) == (1, 16 * GiB, 0)
    assert ideal.repack_share == 0.5
    # 32 GiB of cards less the 16 GiB the running pods hold: room for one of them
    assert ideal.upper_mib == 16 * GiB
    assert ideal.upper_share == 0.5


def test_nothing_pending_means_nothing_to_do() -> None:
    cluster = build([node("a", 16)], [running("t/x", "a", [0], 8)])
    report = plan(cluster)
    assert (report.plans, report.unresolved, report.rescued_share) == ((), (), 0.0)
    assert report.ideal.pending_pods == 0


def test_invalid_and_unsatisfiable_pods_are_reported_not_planned() -> None:
    cluster = build(
        [node("a", 16)],
        [
            running("t/x", "a", [0], 8),
            {"name": "t/odd", "request": {"gpus": 2, "memory_mib": 1000}},
            pending("t/wide", 4, 16),
        ],
    )
    report = plan(cluster)
    check_report(cluster, report)
    assert {(u.pod, u.cause) for u in report.unresolved} == {
        ("t/odd", "invalid"),
        ("t/wide", "unsatisfiable"),
    }


def test_a_full_listing_works_out_no_target_until_it_comes_up() -> None:
    """On a large cluster listing every target once cost more than the whole budget: a
    full listing now puts in one listing per card and node, keyed by a floor, and works out
    a listing's targets only when it reaches the top of the heap."""
    nodes = [node(f"n{i:03}", 16, 16) for i in range(REGENERATE_CHECK_EVERY * 3)]
    pods = [running(f"t/r{i:03}", f"n{i:03}", [0], 10) for i in range(len(nodes))]
    cluster = build(nodes, [*pods, pending("w/p", 1, 12)])
    board = Board(cluster, {})
    board.set_pending(["w/p"])
    search = Search(board, Limits(4, 3, 4), 16 * 1024)
    greedy = Greedy(board, search, {board.ids["w/p"]}, EvictionBudget(), 16)
    greedy._regenerate(None)
    assert len(greedy.heap) >= len(nodes)  # a listing per running card at least
    assert all(isinstance(entry[3], Listing) for entry in greedy.heap)
    assert search.estimates == 0
    assert board.card_checks == 2 * len(nodes)  # each card's floors, counted once
    # the first listing to come up: worked out into its card's target
    listing = heapq.heappop(greedy.heap)[3]
    assert isinstance(listing, Listing)
    greedy._work_out(listing)
    assert search.estimates == 1
    assert [e[3] for e in greedy.heap if isinstance(e[3], Target)] == [
        Target(listing.node, (listing.card,), board.shape_of(board.ids["w/p"]), board.ids["w/p"])
    ]
