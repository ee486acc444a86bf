"""The plan search's listings (`plan.floors`): worked out, they give exactly the targets a
full listing gives, none with an estimate below its listing's floor; and while the greedy
runs, every target a fresh listing would give is in its heap, as a target or in a listing,
but those it simulated and dropped since its last full listing (tried again after the next)."""

from __future__ import annotations

import itertools
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.core.diagnose import diagnose
from advisor.core.model import Cluster
from advisor.core.plan.board import Board
from advisor.core.plan.floors import CardFloors, Listing, listings
from advisor.core.plan.greedy import Greedy
from advisor.core.plan.limits import EvictionBudget
from advisor.core.plan.search import Limits, PlanKey, Search, Target, levels_of
from tests.advisor.core.test_plan_properties import fragmented
from tests.fastloop import examples

Estimates = dict[tuple[object, ...], PlanKey]


def _board(cluster: Cluster) -> Board:
    first = diagnose(cluster, node_detail_limit=0)
    bound = {d.pod.name: d.placement for d in first.pods if d.placement is not None}
    b = Board(cluster, bound)
    b.set_pending([d.pod.name for d in first.pods if d.placement is None])
    return b


def _estimated(search: Search, targets: itertools.chain[Target] | list[Target]) -> Estimates:
    return {t.key: key for t in targets if (key := search.estimate(t)) is not None}


def _full(search: Search, levels: list) -> Estimates:  # type: ignore[type-arg]
    b = search.board
    every_card = range(len(b.state.capacity))
    every_node = range(len(b.state.node_names))
    return _estimated(
        search,
        itertools.chain(
            search.card_targets(every_card, levels), search.node_targets(every_node, levels)
        ),
    )


def _worked_out(search: Search, listing: Listing, levels: list) -> Estimates:  # type: ignore[type-arg]
    if listing.level is None:
        return _estimated(search, list(search.card_targets([listing.card], levels)))
    return _estimated(search, list(search.node_targets([listing.node], [listing.level])))


def _search(b: Board, rng: random.Random) -> Search:
    limits = Limits(
        max_evictions=rng.choice((1, 2, 4, 8)), max_chain_depth=2, max_victims_per_card=3
    )
    return Search(b, limits, b.reference_mib, rng.choice(("ratio", "value", "holes")))


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fragmented(), st.randoms(use_true_random=False))
def test_listings_give_the_full_listing_none_below_its_floor(
    cluster: Cluster, rng: random.Random
) -> None:
    b = _board(cluster)
    for _ in range(3):
        search = _search(b, rng)
        levels = levels_of(b, b.pending)
        full = _full(search, levels)
        found: Estimates = {}
        for floor, listing in listings(search, levels, CardFloors(search)):
            for key, estimate in _worked_out(search, listing, levels).items():
                assert estimate >= floor, (listing, floor, estimate)
                found[key] = estimate
        assert found == full
        # commits change cards, the queue and which pods may move
        evictable = [p for p in range(len(b.pods)) if b.evictable[p] and b.where[p]]
        if not evictable:
            return
        evict = rng.sample(evictable, min(len(evictable), rng.randint(1, 2)))
        outcome = b.simulate(evict, quick=False)
        if not outcome.stranded:
            b.commit(evict, outcome)


class _Watched(Greedy):
    """A greedy that checks, after each commit's listing, that no target is lost."""

    checks = 0
    dropped: set[object]

    def _regenerate(self, positions):  # type: ignore[no-untyped-def]
        if positions is None:
            self.dropped = set()
        signature = super()._regenerate(positions)
        if positions is not None:
            self._nothing_lost()
        return signature

    def _evaluate(self, target: Target):  # type: ignore[no-untyped-def]
        fresh = Search.evaluate(self.search, target)
        if fresh is None:
            self.dropped.add(target.key)
        return fresh

    def _commit(self, proposal):  # type: ignore[no-untyped-def]
        self.dropped.add(proposal.target.key)
        return super()._commit(proposal)

    def _nothing_lost(self) -> None:
        b = self.board
        levels = levels_of(b, (p for p in b.pending if p in self.targetable))  # as they are now
        ids = {self.search.level_ids[level] for level in levels}
        live: set[object] = set()
        for _, _, seq, entry, _, _ in self.heap:
            if self.latest.get(entry.key) != seq:
                continue
            if isinstance(entry, Listing):
                live.update(_worked_out(self.search, entry, levels))
            elif entry.level_id in ids:
                live.add(entry.key)
        missing = set(_full(self.search, levels)) - live - self.dropped
        assert not missing
        _Watched.checks += 1


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fragmented(), st.randoms(use_true_random=False))
def test_the_greedy_loses_no_target_between_listings(cluster: Cluster, rng: random.Random) -> None:
    b = _board(cluster)
    search = _search(b, rng)
    greedy = _Watched(b, search, set(b.pending), EvictionBudget(1000, "advice"), patience=16)
    search.evaluate = greedy._evaluate  # type: ignore[method-assign]
    greedy.run(lambda: None)


@settings(max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fragmented(), st.randoms(use_true_random=False))
def test_a_shape_gone_lists_again_the_cards_worked_out(
    cluster: Cluster, rng: random.Random
) -> None:
    """Every card worked out, then a single-card shape leaves the queue: a victim set whose
    largest shape it was must come back with the next one, and a card still listed is
    worked out with the shapes left."""
    b = _board(cluster)
    search = _search(b, rng)
    greedy = _Watched(b, search, set(b.pending), EvictionBudget(1000, "advice"), patience=16)
    greedy._regenerate(None)  # type: ignore[no-untyped-call]
    entries = list(greedy.heap)
    worked = [e[3] for e in entries if isinstance(e[3], Listing) and rng.random() < 0.8]
    for listing in worked:
        if greedy.latest.get(listing.key) is not None:
            del greedy.latest[listing.key]
            greedy._work_out(listing)
    singles = sorted({b.shape_of(p) for p in b.pending if b.shape_of(p).gpus == 1}, key=repr)
    if len(singles) < 2:
        return
    gone = rng.choice(singles)
    b.pending = [p for p in b.pending if b.shape_of(p) != gone]
    b._pending_changed()
    greedy._shapes_changed(levels_of(b, b.pending), levels_changed=True)
    greedy._nothing_lost()
