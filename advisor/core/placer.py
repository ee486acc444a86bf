"""`CardState.place` for the pods of one queue placed in a row, each shape's verdicts kept.

Placing one pod reads every card of the cluster (`CardState.verdicts`): at 20,000 nodes
about a millisecond, and a queue check places thousands of pods. But every filter and every
profile's node score reads only the node's own cards and sums (`Profile.node_scores`), and
binding a pod changes one node. So `QueuePlacer` keeps, per shape and policy, which nodes
pass every filter, their scores and which cards are eligible, and before each pick judges
again only the nodes bound since it last looked; the pick among the passing nodes is the
profile's own (`Profile.pick_best`). The same picks as `CardState.place`, tied counts
included, as long as every node changed is named: a pod bound (`bound`), a copy of the
state changed on some nodes (`fork`, as scale-down's trials), the state moved on to such a
copy (`moved_to`, a scale-down step committed).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from advisor.core.model import PolicyName
from advisor.core.profiles.base import FloatArray
from advisor.core.state import BoolArray, CardState, IntArray, Shape
from advisor.core.verdicts import count_per_node, eligible_of

# Past one changed node in this many, every node is judged again in one pass over the cards.
WHOLE = 8

# The arrays a profile reads per card and per node (`profiles.base.CardView`).
CARD_ARRAYS = (
    "slots",
    "vgpus",
    "capacity",
    "free_memory",
    "free_core",
    "mode",
    "healthy",
    "numa",
    "card_index",
)
NODE_ARRAYS = (
    "name_rank",
    "healthy_count",
    "uniform_capacity",
    "allotted_healthy",
    "node_used",
    "node_core_asked",
    "node_total",
)


class FewNodes:
    """A `CardView` of a few nodes of a state, numbered 0.. in the order given (their cards
    at `positions` of the state), for the profile to judge them alone."""

    slots: IntArray
    vgpus: IntArray
    capacity: IntArray
    free_memory: IntArray
    free_core: IntArray
    mode: IntArray
    healthy: BoolArray
    numa: IntArray
    card_index: IntArray
    name_rank: IntArray
    healthy_count: IntArray
    uniform_capacity: IntArray
    allotted_healthy: IntArray
    node_used: IntArray
    node_core_asked: IntArray
    node_total: IntArray

    def __init__(self, state: CardState, nodes: IntArray) -> None:
        self.positions = state.cards_of(nodes)
        for name in CARD_ARRAYS:
            setattr(self, name, getattr(state, name)[self.positions])
        for name in NODE_ARRAYS:
            setattr(self, name, getattr(state, name)[nodes])
        self.card_count: IntArray = state.card_count[nodes]
        self.first_card: IntArray = np.cumsum(self.card_count) - self.card_count
        self.node_of: IntArray = np.repeat(np.arange(nodes.size, dtype=np.int64), self.card_count)
        self.carded: IntArray = np.flatnonzero(self.card_count > 0)
        self.tied = 0

    def node_positions(self, node: int) -> range:
        start = int(self.first_card[node])
        return range(start, start + int(self.card_count[node]))

    def eligible_per_node(self, eligible: BoolArray) -> IntArray:
        return count_per_node(eligible, self.node_of, self.first_card, self.carded)


@dataclass(slots=True)
class _Judged:
    """One shape's verdicts under one policy, right for the state as of `seen` changes."""

    ok: BoolArray  # per node: every filter passes
    scores: FloatArray  # per node: the profile's score (where ok)
    eligible: BoolArray  # per card: no card check rejects it
    seen: int


class QueuePlacer:
    """Places shapes on `state` as `CardState.place` does; the caller binds each pick itself
    and names its node (`bound`), as it names any other change to a node."""

    def __init__(
        self,
        state: CardState,
        whole: int = WHOLE,
        parent: QueuePlacer | None = None,
        changed: Iterable[int] = (),
        keep: int | None = None,
    ) -> None:
        """`whole`: past one changed node in this many, every node is judged again (0:
        never, only the changed ones). `parent`, `changed`: see `fork`. `keep`: the most
        shapes whose verdicts are kept, those used last (None: every shape's; a placer
        with forks keeps all)."""
        self.state = state
        self.whole = whole
        self.parent = parent
        self.keep = keep
        self.changed: list[int] = list(changed)  # nodes changed, in order, repeats kept
        self.judged: dict[tuple[Shape, PolicyName, PolicyName], _Judged] = {}

    def fork(self, state: CardState, changed: Iterable[int]) -> QueuePlacer:
        """A placer for `state`, a copy of this placer's state since changed on the nodes
        `changed` only: each shape starts from this placer's verdicts (judged here on first
        need) and judges again those nodes, not every node. This placer's state must not
        change while the fork is used (scale-down's trials, each on a copy of one state)."""
        return QueuePlacer(state, self.whole, self, changed)

    def moved_to(self, state: CardState, changed: Iterable[int]) -> None:
        """From now on for `state`: this placer's state as it became, changed on the nodes
        `changed` (a copy that went on to be changed there, as a scale-down step's)."""
        self.state = state
        self.changed.extend(changed)

    def bound(self, node: int) -> None:
        """Node `node` changed (a pod bound there): judged again at its next pick."""
        self.changed.append(node)

    def place(
        self, shape: Shape, node_policy: PolicyName, card_policy: PolicyName
    ) -> list[int] | None:
        """`CardState.place(shape, node_policy, card_policy)`; sets the state's `tied`."""
        st = self.state
        policy = (node_policy, card_policy)
        judged = self._verdicts(shape, policy)
        nodes = np.flatnonzero(judged.ok)
        st.tied = 0
        if nodes.size == 0:
            return None
        scores = judged.scores[nodes]
        positions = st.profile.pick_best(st, nodes, scores, shape, judged.eligible, policy)
        if not st.profile.random_ties:
            st.tied = 0
        return positions

    def passing(self, shape: Shape, node_policy: PolicyName, card_policy: PolicyName) -> BoolArray:
        """Per node, whether every filter passes for `shape` now (a copy)."""
        return self._verdicts(shape, (node_policy, card_policy)).ok.copy()

    def _verdicts(self, shape: Shape, policy: tuple[PolicyName, PolicyName]) -> _Judged:
        """The shape's verdicts, right for the state as it is now."""
        key = (shape, *policy)
        judged = self.judged.get(key)
        if judged is not None and self.keep is not None:
            self.judged[key] = self.judged.pop(key)  # used last: kept longest
        if judged is None and self.parent is not None:
            theirs = self.parent._verdicts(shape, policy)
            judged = self.judged[key] = _Judged(
                theirs.ok.copy(), theirs.scores.copy(), theirs.eligible.copy(), 0
            )
        fresh = self.changed[judged.seen :] if judged is not None else ()
        if judged is None or len(fresh) * self.whole > len(self.state.node_names):
            judged = self.judged[key] = self._judge_all(shape, policy)
            if self.keep is not None and len(self.judged) > self.keep:
                del self.judged[next(iter(self.judged))]  # the one used longest ago
        elif fresh:
            self._judge_again(judged, np.unique(np.array(fresh, dtype=np.int64)), shape, policy)
        judged.seen = len(self.changed)
        return judged

    def _judge_all(self, shape: Shape, policy: tuple[PolicyName, PolicyName]) -> _Judged:
        st = self.state
        verdicts = st.verdicts(shape)
        ok = verdicts.passing
        scores = np.zeros(ok.size)
        nodes = np.flatnonzero(ok)
        if nodes.size:
            scores[nodes] = st.profile.node_scores(st, nodes, shape, verdicts.eligible, policy)
        return _Judged(ok, scores, verdicts.eligible, len(self.changed))

    def _judge_again(
        self,
        judged: _Judged,
        nodes: IntArray,
        shape: Shape,
        policy: tuple[PolicyName, PolicyName],
    ) -> None:
        """`_judge_all`'s verdicts and scores on `nodes` alone, written into `judged`."""
        st = self.state
        profile = st.profile
        few = FewNodes(st, nodes)
        eligible = eligible_of(profile.card_rejections(few, shape, slice(None)), few.positions.size)
        ok = profile.fits(few, shape, eligible) & st.static_ok(shape.constraints)[nodes]
        ok &= ~st.resource_shortfalls(shape, at=nodes).any(axis=1)
        judged.eligible[few.positions] = eligible
        judged.ok[nodes] = ok
        good = np.flatnonzero(ok)
        if good.size:
            judged.scores[nodes[good]] = profile.node_scores(few, good, shape, eligible, policy)
