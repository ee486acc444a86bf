"""The per-card memo of the plan search (`plan.memo`): every answer it gives equals the one
worked out afresh, on the input board and after commits change cards and the queue."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.core.diagnose import diagnose
from advisor.core.model import Cluster
from advisor.core.plan.board import Board
from advisor.core.plan.search import levels_of
from advisor.core.plan.victims import (
    _card_victims,
    _node_cards,
    card_victims,
    node_cards,
    node_stamps,
    room_on,
)
from tests.advisor.core.test_plan_properties import fragmented
from tests.fastloop import examples

MOST = 4


def _agrees(b: Board) -> None:
    """Every card's and node's memo answer is the fresh one, for every Pending shape."""
    levels = levels_of(b, b.pending)
    for level in levels:
        for k in range(len(b.state.capacity)):
            assert card_victims(b, k, level, MOST) == _card_victims(b, k, level, MOST)
            fresh = (
                -1
                if not b.state.healthy[k]
                else int(b.state.free_memory[k])
                + sum(b.need_on(b.shape_of(p), k) for p in b.on_card[k] if b.movable(p))
            )
            assert room_on(b, k) == fresh
        if level.gpus > 1:
            for n in range(len(b.state.node_names)):
                stamps = node_stamps(b, n)
                kept = node_cards(b, n, level, MOST, stamps)
                assert kept == _node_cards(b, b.state.node_positions(n), level, MOST, stamps)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fragmented(), st.randoms(use_true_random=False))
def test_memo_answers_as_worked_out_afresh(cluster: Cluster, rng: random.Random) -> None:
    first = diagnose(cluster, node_detail_limit=0)
    bound = {d.pod.name: d.placement for d in first.pods if d.placement is not None}
    waiting = [d.pod.name for d in first.pods if d.placement is None]
    b = Board(cluster, bound)
    b.set_pending(waiting)
    _agrees(b)
    # commits change cards and the queue: answers kept from before must not be read
    for _ in range(3):
        evictable = [p for p in range(len(b.pods)) if b.evictable[p] and b.where[p]]
        if not evictable:
            break
        evict = rng.sample(evictable, min(len(evictable), rng.randint(1, 2)))
        outcome = b.simulate(evict, quick=False)
        if outcome.stranded:
            continue
        b.commit(evict, outcome)
        _agrees(b)
    # a second board from the same input shares the memo: the input's answers hold on it
    twin = Board(cluster, bound, memo=b.memo)
    twin.set_pending(waiting)
    _agrees(twin)
