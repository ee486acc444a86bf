"""`CardState.eligible_per_node` sums each node's run of cards; nodes without a card (first,
between, last) count none."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.core.model import Card, Cluster, Node
from advisor.core.state import BoolArray, CardState


@st.composite
def marked(draw: st.DrawFn) -> tuple[CardState, BoolArray]:
    counts = draw(st.lists(st.integers(0, 3), max_size=6))
    nodes = tuple(
        Node(f"n{i}", tuple(Card(c, 16384) for c in range(n))) for i, n in enumerate(counts)
    )
    state = CardState(Cluster(nodes))
    eligible = np.array(draw(st.lists(st.booleans(), min_size=sum(counts), max_size=sum(counts))))
    return state, eligible.astype(np.bool_)


@settings(max_examples=100, deadline=None)
@given(marked())
def test_each_node_counts_its_own_eligible_cards(drawn: tuple[CardState, BoolArray]) -> None:
    state, eligible = drawn
    expected = np.bincount(state.node_of[eligible], minlength=len(state.node_names))
    assert state.eligible_per_node(eligible).tolist() == expected.tolist()
