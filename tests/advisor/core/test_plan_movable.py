"""Which pods a plan may move (`plan.movable`): kept up to date by what changed in the
Pending shapes, always the rule worked out afresh; and a board's per-card masks, after
commits and changes of the Pending shapes, the masks worked out afresh."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.core.model import Cluster
from advisor.core.plan.board import Board
from advisor.core.plan.movable import Movability, Pair
from advisor.core.state import Shape
from tests.advisor.core.test_plan_floors import _board
from tests.advisor.core.test_plan_properties import fragmented
from tests.fastloop import examples

SHAPES = [
    Shape(gpus, mib, core, mode)
    for gpus in (1, 2)
    for mib in (2048, 4096, 8192)
    for core, mode in ((0, 1), (30, 2))
]


def _fresh(pair: Pair | None, shapes: dict[Shape, int]) -> bool:
    if pair is None:
        return False
    shape, priority = pair
    return not any(shape.needs_no_less(s) and top >= priority for s, top in shapes.items())


@settings(max_examples=examples(200), deadline=None)
@given(
    st.lists(st.none() | st.tuples(st.sampled_from(SHAPES), st.sampled_from([0, 5, 10]))),
    st.lists(st.dictionaries(st.sampled_from(SHAPES), st.sampled_from([0, 5, 10])), max_size=6),
)
def test_updates_give_the_rule_afresh_and_name_every_pod_that_flipped(
    pairs: list[Pair | None], changes: list[dict[Shape, int]]
) -> None:
    movability = Movability(pairs)
    before = [_fresh(p, {}) for p in pairs]
    for shapes in changes:
        flipped = movability.update(shapes)
        now = [_fresh(p, shapes) for p in pairs]
        assert [movability.movable(pod) for pod in range(len(pairs))] == now
        assert sorted(flipped) == [pod for pod in range(len(pairs)) if now[pod] != before[pod]]
        before = now


def _masks_afresh(b: Board) -> list[int]:
    shapes = b._pending_shapes()
    masks = []
    for k in range(len(b.state.capacity)):
        mask = 0
        for i, pod in enumerate(b.on_card[k]):
            pair = (b.shape_of(pod), b.priority[pod]) if b.evictable[pod] else None
            if _fresh(pair, shapes):
                mask |= 1 << i
        masks.append(mask)
    return masks


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(fragmented(), st.randoms(use_true_random=False))
def test_card_masks_follow_commits_and_the_pending_shapes(
    cluster: Cluster, rng: random.Random
) -> None:
    b = _board(cluster)
    for _ in range(4):
        masks = [b.movable_mask(k) for k in range(len(b.state.capacity))]
        assert masks == _masks_afresh(b)
        seen = b.shapes_seen
        b.take_mask_changes()
        evictable = [p for p in range(len(b.pods)) if b.evictable[p] and b.where[p]]
        if not evictable or not b.pending:
            return
        # rescue some Pending pods by hand (their shapes may go) and move a pod
        b.pending = [p for p in b.pending if rng.random() < 0.6]
        b._pending_changed()
        evict = rng.sample(evictable, 1)
        outcome = b.simulate(evict, quick=False)
        changed = b.commit(evict, outcome) if not outcome.stranded else set()
        reported = b.take_mask_changes()
        after = _masks_afresh(b)
        differ = {k for k in range(len(after)) if after[k] != masks[k]}
        if b.shapes_seen == seen:
            assert not reported
        # every card whose mask moved is one a commit changed or one reported
        assert differ <= reported | changed
