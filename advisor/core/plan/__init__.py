"""Rebalancing plans verified by simulation (docs/design.md §8): `plan` and its options and
report are the entry point (`planner`); the modules below it are the search.

- `planner`: the portfolio of greedy runs, the budgets, the report, `apply_plans`;
- `above`: plans a cap refuses, with the flag to raise;
- `greedy`: the lazy greedy over targets, and one `Plan`;
- `exhaustive`: the last look on small boards;
- `search`: targets, proposals and their keys;
- `chains`: a target's evictions that chain through other cards;
- `victims`: a card's victims and a node's cards cheapest to free, kept in `memo`;
- `board`: the simulation board every candidate is placed on;
- `limits`: the caps on evictions and the pods never evicted;
- `cost`: what an eviction costs, and the start times it is measured from;
- `ideal`: the bound no plan can pass (the packing bound).
"""

from __future__ import annotations

from advisor.core.plan.above import HeldBack
from advisor.core.plan.greedy import Plan
from advisor.core.plan.planner import (
    DEFAULT_BUDGET,
    PlanOptions,
    PlanReport,
    Unresolved,
    apply_plans,
    plan,
)
from advisor.defaults import DEFAULT_TIME_BUDGET_S

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_TIME_BUDGET_S",
    "HeldBack",
    "Plan",
    "PlanOptions",
    "PlanReport",
    "Unresolved",
    "apply_plans",
    "plan",
]
