"""`Board.idle_at` and `covers_at` (allocate's fit error read on many nodes at once, core.
preemption.predicates) agree with `Board.idle` and `covers` node by node, under every
profile, on random clusters with their running pods bound."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.core.model import ProfileName
from advisor.core.occupancy import build_state
from advisor.core.preemption.board import Board, covers, covers_at
from advisor.core.profiles import profile_names
from advisor.scenario import scenario_from_data
from tests.advisor.core.test_profile_property import random_scenario
from tests.fastloop import examples


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.sampled_from(profile_names()))
def test_many_nodes_at_once_as_one_by_one(seed: int, profile: ProfileName) -> None:
    cluster = scenario_from_data(random_scenario(seed, profile), "t.yaml")
    state = build_state(cluster)
    board = Board(cluster, state)
    nodes = np.arange(len(state.node_names), dtype=np.int64)
    rows = board.idle_at(nodes)
    assert rows.shape == (nodes.size, 6)
    for node in nodes.tolist():
        np.testing.assert_array_equal(rows[node], board.idle(node))
    for pod in cluster.pending:
        request = board.request(pod)
        one_by_one = [covers(request, board.idle(node)) for node in nodes.tolist()]
        assert covers_at(request, rows).tolist() == one_by_one
