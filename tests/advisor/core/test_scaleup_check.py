"""Scale-up's fast check (`scaling.check`): every pass lands the queue exactly where a fresh
pass on the cluster with exactly those new nodes lands it, whatever passes came before."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.core.model import Cluster, queue_order
from advisor.core.occupancy import build_state
from advisor.core.scaling import NodeShape, ScaleUp, with_new_nodes
from advisor.core.scaling.check import QueueCheck
from advisor.core.scaling.up import _new_name
from advisor.core.whatif import place_queue
from tests.advisor.core.test_scaling import clusters, full_cluster, pending
from tests.fastloop import examples

SHAPES = (NodeShape(1, 4096), NodeShape(2, 8192), NodeShape(4, 16384))


def _grower(cluster: Cluster, plan: Sequence[ScaleUp]) -> QueueCheck:
    def grown(counts: Sequence[int]) -> Cluster:
        trial = [ScaleUp(e.shape, n, e.pods) for e, n in zip(plan, counts, strict=True)]
        return with_new_nodes(cluster, trial)

    return QueueCheck(grown, _new_name, len(plan))


def _fresh(cluster: Cluster, plan: Sequence[ScaleUp], counts: Sequence[int]) -> list[object]:
    trial = [ScaleUp(e.shape, n, e.pods) for e, n in zip(plan, counts, strict=True)]
    grown = with_new_nodes(cluster, trial)
    return list(place_queue(build_state(grown), queue_order(grown.pending), grown.policy))


@settings(max_examples=examples(150), deadline=None)
@given(clusters(), st.data())
def test_every_pass_lands_as_a_fresh_pass(cluster: Cluster, data: st.DataObject) -> None:
    """Counts that grow (the state built again), shrink and mix, in any order: each pass
    resumes from an earlier one where it can, and must still land every pod as a pass on a
    freshly built cluster with exactly those nodes."""
    shapes = data.draw(st.lists(st.sampled_from(SHAPES), min_size=1, max_size=2, unique=True))
    plan = [ScaleUp(s, 0, ()) for s in shapes]
    check = _grower(cluster, plan)
    counts_seq = data.draw(
        st.lists(
            st.lists(st.integers(0, 5), min_size=len(plan), max_size=len(plan)),
            min_size=1,
            max_size=6,
        )
    )
    for counts in counts_seq:
        assert list(check.landed(counts)) == _fresh(cluster, plan, counts), counts


def test_a_grown_state_binds_the_running_pods_as_a_fresh_one() -> None:
    """The state grown by copying the running pods' occupancy (the second pass asks more
    nodes than the first built room for) equals one built by binding them, array by array."""
    cluster = full_cluster(pending("w/1", 2, 16))
    plan = [ScaleUp(NodeShape(2, 16384), 0, ())]
    check = _grower(cluster, plan)
    check.landed([1])
    check.landed([3])
    assert check.capacity == [6]
    assert check.state is not None
    fresh = build_state(check.grown(check.capacity))
    arrays = {k for k, v in vars(fresh).items() if isinstance(v, np.ndarray)}
    assert {"free_memory", "requested", "node_used"} <= arrays
    for name in arrays:
        assert np.array_equal(getattr(check.state, name), getattr(fresh, name)), name
    assert check.state.excess == fresh.excess
