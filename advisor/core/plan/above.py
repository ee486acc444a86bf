"""Plans above the caps (docs/design.md §8): for the Pending pods the plans leave waiting,
the plans that exist but that a cap refuses, each with the flag to raise and the value
that would let it through. A cap hides no plan without saying so."""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, replace

from advisor.core.plan.greedy import REGENERATE_CHECK_EVERY, Greedy, Stop
from advisor.core.plan.limits import EvictionBudget
from advisor.core.plan.search import PlanKey, Proposal, Search, levels_of

# Targets simulated when looking for plans above a cap: this many in all, shared by the
# Pending shapes left (at least 6 and at most 60 each; a big shape's cheapest few often
# strand an evicted pod).
HELD_BACK_SIMULATIONS = 240


@dataclass(frozen=True, slots=True)
class HeldBack:
    """A plan that exists (simulated on the state the plans leave) but is above a cap:
    `flag` is the cap, `limit` its value, `needs` the value that would let it through."""

    rescues: tuple[str, ...]
    evict: tuple[str, ...]
    cost: float
    flag: str  # "--max-plan-evictions" or "--max-evictions"
    limit: str
    needs: str
    waiting: int = 1  # Pending pods of the rescued pod's shape the plans leave, it included


def held_back(
    greedy: Greedy, wide: Search, max_plan_evictions: int, budget: EvictionBudget, stop: Stop
) -> tuple[HeldBack, ...]:
    """Plans above a cap for the Pending pods the plans leave waiting: per Pending shape,
    its cheapest targets by estimate are simulated (up to SEARCH_EVICTIONS evictions; its
    share of HELD_BACK_SIMULATIONS) and the first that holds is kept when a cap is what
    refuses it."""
    b = greedy.board
    levels = levels_of(b, (p for p in b.pending if p in greedy.targetable))
    if not levels:
        return ()
    ranked: dict[int, list[tuple[PlanKey, int]]] = {}
    order = itertools.count()
    found_targets = {}
    every_card = range(len(b.state.capacity))
    every_node = range(len(b.state.node_names))
    listing = itertools.chain(
        wide.card_targets(every_card, levels), wide.node_targets(every_node, levels)
    )
    for count, target in enumerate(listing):
        if count % REGENERATE_CHECK_EVERY == 0 and stop() is not None:
            return ()
        key = wide.estimate(target)
        if key is not None:
            number = next(order)
            found_targets[number] = target
            ranked.setdefault(levels.index(target.level), []).append((key, number))
    tries = min(60, max(6, HELD_BACK_SIMULATIONS // len(levels)))
    held: list[HeldBack] = []
    covered: set[int] = set()
    for level in sorted(ranked):
        for _, number in sorted(ranked[level])[:tries]:
            if stop() is not None:
                return tuple(held)
            proposal = wide.evaluate(found_targets[number])
            if proposal is None:
                continue
            if not covered.issuperset(proposal.rescued):
                covered.update(proposal.rescued)
                entry = _refusal(greedy, proposal, max_plan_evictions, budget)
                if entry is not None:
                    shape = levels[level]
                    alike = sum(1 for p in b.pending if b.shape_of(p) == shape)
                    held.append(replace(entry, waiting=alike))
            break
    return tuple(held)


def _refusal(
    greedy: Greedy, proposal: Proposal, max_plan_evictions: int, budget: EvictionBudget
) -> HeldBack | None:
    """The cap that refuses `proposal`, or None when none does (the greedy missed it)."""
    b = greedy.board
    count = len(proposal.evict)
    names = tuple(b.pods[p].name for p in proposal.rescued)
    evict = tuple(b.pods[p].name for p in proposal.evict)
    cost = b.cost(proposal.evict)
    if count > max_plan_evictions:
        flag, limit, needs = "--max-plan-evictions", str(max_plan_evictions), str(count)
        return HeldBack(names, evict, cost, flag, limit, needs)
    if greedy.allows(proposal):
        return None
    total = greedy.evictions + count
    if budget.per == "advice":
        needs = str(total)
    else:
        cards = greedy.rescued_cards + sum(b.shape_of(p).gpus for p in proposal.rescued)
        mib = sum(b.mib(p) for p in proposal.rescued)
        gpus = greedy.rescued_gpus + mib / greedy.search.reference_mib
        per = cards if budget.per == "card" else gpus
        needs = f"{math.ceil(100 * total / per) / 100:g}/{budget.per}"
    return HeldBack(names, evict, cost, "--max-evictions", budget.text, needs)
