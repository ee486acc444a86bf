"""The packing bound (plan.ideal.packing_bound): card weights checked to be dual feasible
cap what any rearrangement, and so any plan, can place."""

from __future__ import annotations

from fractions import Fraction

import pytest

from advisor.core.plan import plan
from advisor.core.plan.ideal import WeightSteps, packing_bound
from tests.advisor.core.test_plan_checker import (
    GiB,
    build,
    check_report,
    node,
    pending,
    running,
    two_dependent_plans,
)

# more than half a card weighs 1 (two never share a card), the rest nothing
BIG_ONES: WeightSteps = ((Fraction(1, 2) + Fraction(1, 10**6), Fraction(1)),)
# Fekete and Schepers' u(2): a third 1/3, between a third and two thirds 1/2, more 1
THIRDS: WeightSteps = (
    (Fraction(1, 3), Fraction(1, 3)),
    (Fraction(1, 3) + Fraction(1, 10**6), Fraction(1, 2)),
    (Fraction(2, 3), Fraction(2, 3)),
    (Fraction(2, 3) + Fraction(1, 10**6), Fraction(1)),
)


def test_big_pods_that_cannot_share_a_card_bound_below_the_free_memory() -> None:
    # 18 GiB free over three cards, yet each card already holds a pod of more than half.
    cluster = build(
        [node("a", 16, 16), node("b", 16)],
        [
            running("t/x", "a", [0], 10),
            running("t/y", "a", [1], 10),
            running("t/z", "b", [0], 10),
            pending("t/big", 1, 9),
            pending("t/small", 1, 4),
        ],
    )
    bound = packing_bound(cluster, BIG_ONES)
    assert bound is not None
    assert bound.slack == 0
    assert bound.pending_mib == 13 * GiB
    assert bound.bound_mib == 4 * GiB  # the small one weighs nothing, the big one can't join
    report = plan(cluster)
    assert report.ideal.upper_share == 1.0  # free memory alone proves nothing here
    assert report.rescued_mib <= bound.bound_mib


def test_the_knapsack_takes_the_most_memory_per_weight_and_a_fraction_of_the_last() -> None:
    cluster = build(
        [node("a", 16, 16, 16)],
        [
            running("t/x", "a", [0], 6),  # 3/8 of a card: 1/2
            running("t/w", "a", [1], 12),  # 3/4: 1
            pending("t/two", 2, 20),  # 10 GiB per card: 2 x 1/2, 20 GiB per weight
            pending("t/big", 1, 14),  # 7/8: 1, 14 GiB per weight
            pending("t/half", 1, 6),  # 3/8: 1/2, 12 GiB per weight
        ],
    )
    bound = packing_bound(cluster, THIRDS)
    assert bound is not None
    assert bound.slack == Fraction(3, 2)
    assert bound.bound_mib == (20 + 14 / 2) * GiB  # t/two, then half of t/big
    assert bound.share == 27 / 40


def test_weights_that_are_not_dual_feasible_are_refused() -> None:
    cluster = build(
        [node("a", 16)],
        [running("t/x", "a", [0], 4), pending("t/y", 1, 16)],
    )
    with pytest.raises(ValueError, match="dual feasible"):
        packing_bound(cluster, ((Fraction(1, 4), Fraction(1, 2)),))  # four quarters weigh 2


def test_cards_of_different_sizes_prove_nothing() -> None:
    cluster = build([node("a", 16, 32)], [pending("t/y", 1, 16)])
    assert packing_bound(cluster, THIRDS) is None


def test_plans_never_beat_the_bound() -> None:
    cluster = two_dependent_plans()
    report = plan(cluster)
    check_report(cluster, report)
    bound = packing_bound(cluster, THIRDS)
    assert bound is not None
    assert report.rescued_mib > 0
    assert report.rescued_mib <= bound.bound_mib
