"""The ideal repack's placements (`plan.ideal`), the same as `CardState.place` makes over
every node, made over the few nodes that can win.

Two nodes alike in everything the scheduler core reads of a node (its cards, labels,
taints, cordon, allocatable and the pods that stay on it; not its name, nor its hostname
label where no pod's filters read that label) and both still
empty score alike under every profile's rules, which are per node, and the real scheduler's
ties go to the node first by name (`CardState.place`) or, in the best-fit packer, to the
lowest card position. So of each class of empty twins only the first by name and the first
by position can be chosen: the packers look at those and at the nodes already used, which
is the same choice over far fewer nodes. A pod whose node affinity reads node names
(matchFields) tells twins apart: then every node competes (`Twins.of` gives None).

And a repack only adds pods: room only shrinks, so a node a shape's filters refuse once
refuses it for the rest of the repack (`RepackPlacer` remembers them per shape).
"""

from __future__ import annotations

import dataclasses
from collections import OrderedDict
from collections.abc import Iterable

import numpy as np

from advisor.core.model import Cluster, Node, PolicyName
from advisor.core.nodefilters import HOSTNAME_LABEL, reads_label
from advisor.core.profiles.base import FloatArray
from advisor.core.state import BoolArray, CardState, IntArray, Shape

SCORED_SHAPES = 32  # shapes whose node scores a repack keeps (two arrays of nodes each)
Policy = tuple[PolicyName, PolicyName]


class Twins:
    """Which nodes may win a placement on `state`, built on `cluster` with no pods yet."""

    def __init__(self, cluster: Cluster, state: CardState, hostname: bool = False) -> None:
        """`hostname`: whether some pod's filters read the hostname label (then it counts)."""
        n = len(state.node_names)
        self.state = state
        self.empty: BoolArray = np.ones(n, dtype=np.bool_)
        self.keep: BoolArray = np.zeros(n, dtype=np.bool_)  # nodes that compete
        classes: dict[str, list[int]] = {}
        for i, node in enumerate(cluster.nodes):
            classes.setdefault(_likeness(node, hostname), []).append(i)
        self.class_of = [0] * n
        # per class its nodes by position and by name, and how far each order is used up
        self.orders: list[tuple[list[int], list[int]]] = []
        self.next: list[list[int]] = []
        rank = state.name_rank
        for c, members in enumerate(classes.values()):
            for i in members:
                self.class_of[i] = c
            self.orders.append((members, sorted(members, key=lambda i: int(rank[i]))))
            self.next.append([0, 0])
            self.keep[members[0]] = True
            self.keep[self.orders[-1][1][0]] = True
        self._cards: IntArray | None = None

    @staticmethod
    def of(cluster: Cluster, state: CardState, shapes: Iterable[Shape]) -> Twins | None:
        """Twins for a repack of pods of `shapes`; None where one reads node names."""
        hostname = False
        for shape in shapes:
            terms = shape.constraints.required or ()
            if any(term.fields for term in terms):
                return None
            hostname = hostname or reads_label(shape.constraints, HOSTNAME_LABEL)
        return Twins(cluster, state, hostname)

    def cards(self) -> IntArray:
        """Card positions of the competing nodes, ascending."""
        if self._cards is None:
            self._cards = np.flatnonzero(self.keep[self.state.node_of]).astype(np.int64)
        return self._cards

    def used(self, node: int) -> None:
        """A pod landed on `node`: it is no one's twin any more; the next of its class in
        each order competes in its place."""
        if not self.empty[node]:
            return
        self.empty[node] = False
        self.keep[node] = True
        c = self.class_of[node]
        for which, order in enumerate(self.orders[c]):
            at = self.next[c][which]
            while at < len(order) and not self.empty[order[at]]:
                at += 1
            self.next[c][which] = at
            if at < len(order):
                self.keep[order[at]] = True
        self._cards = None


def _likeness(node: Node, hostname: bool) -> str:
    """What the core reads of a node but its name: of the pods that stay on it, only what
    they request in all (`CardState`); its hostname label only where a pod reads it (a live
    node always carries it, and it is the node's name)."""
    others = (*(node.other_pods or ()), *node.resident_pods)
    requested = (
        len(others),
        sum(p.resources.cpu_milli for p in others),
        sum(p.resources.memory_bytes for p in others),
    )
    labels = node.labels
    if not hostname and HOSTNAME_LABEL in labels:
        labels = {k: v for k, v in labels.items() if k != HOSTNAME_LABEL}
    bare = dataclasses.replace(node, name="", other_pods=None, resident_pods=(), labels=labels)
    return repr((bare, requested))


class RepackPlacer:
    """Placements on `state` (built on `cluster`, with no pods yet) as its own `place` and
    the best-fit packer's rule make them, looking only at nodes that can still win."""

    def __init__(self, cluster: Cluster, state: CardState, shapes: Iterable[Shape]) -> None:
        self.state = state
        self.twins = Twins.of(cluster, state, shapes)
        # per (packer rule, shape): nodes its filters refused once, for good
        self.refused: dict[tuple[bool, Shape], BoolArray] = {}
        # Per node, how many pods landed there. A node's score reads only its own cards and
        # sums (`Profile.node_scores`), so per shape and policy the scores taken are kept
        # with the count they were taken at, for the few shapes used last (SCORED_SHAPES).
        self.landed: IntArray = np.zeros(len(state.node_names), dtype=np.int64)
        self.scored: OrderedDict[tuple[Shape, Policy], tuple[FloatArray, IntArray]] = OrderedDict()

    def _candidates(self, best_fit: bool, shape: Shape) -> tuple[BoolArray, IntArray, IntArray]:
        st = self.state
        refused = self.refused.get((best_fit, shape))
        if refused is None:
            refused = self.refused[(best_fit, shape)] = np.zeros(len(st.node_names), np.bool_)
        mask = ~refused if self.twins is None else self.twins.keep & ~refused
        nodes = np.flatnonzero(mask)
        return refused, nodes, st.cards_of(nodes)

    def best_fit(self, shape: Shape) -> list[int] | None:
        """The eligible card with the least free memory (the first such) on a node that
        passes every non-GPU filter, for a single-card shape."""
        st = self.state
        refused, nodes, cards = self._candidates(True, shape)
        node_ok = st.static_ok(shape.constraints)[nodes]
        node_ok &= ~st.resource_shortfalls(shape, at=nodes).any(axis=1)
        ok_of = np.zeros(len(st.node_names), dtype=np.bool_)
        ok_of[nodes] = node_ok
        fits = cards[st.eligible(shape, cards) & ok_of[st.node_of[cards]]]
        counts = np.bincount(st.node_of[fits], minlength=len(st.node_names))
        refused[nodes[counts[nodes] == 0]] = True  # no eligible card on a node it admits
        return [int(fits[np.argmin(st.free_memory[fits])])] if fits.size else None

    def place(self, shape: Shape, policy: tuple[PolicyName, PolicyName]) -> list[int] | None:
        """`CardState.place(shape, *policy)`."""
        st = self.state
        refused, nodes, cards = self._candidates(False, shape)
        eligible = np.zeros(len(st.capacity), dtype=np.bool_)
        eligible[cards] = st.eligible(shape, cards)
        ok = st.gpu_fits(shape, eligible)[nodes] & st.static_ok(shape.constraints)[nodes]
        ok &= ~st.resource_shortfalls(shape, at=nodes).any(axis=1)
        refused[nodes[~ok]] = True
        winners = nodes[ok]
        if winners.size == 0:
            return None
        scores = self._scores(shape, policy, winners, eligible)
        return st.profile.pick_best(st, winners, scores, shape, eligible, policy)

    def _scores(
        self,
        shape: Shape,
        policy: Policy,
        winners: IntArray,
        eligible: BoolArray,
    ) -> FloatArray:
        """The profile's scores of `winners`, taken again only on nodes changed since."""
        key = (shape, policy)
        kept = self.scored.get(key)
        if kept is None:
            n = len(self.state.node_names)
            kept = self.scored[key] = (np.zeros(n), np.full(n, -1, dtype=np.int64))
            if len(self.scored) > SCORED_SHAPES:
                self.scored.popitem(last=False)
        else:
            self.scored.move_to_end(key)
        scores, taken_at = kept
        stale = winners[taken_at[winners] != self.landed[winners]]
        if stale.size:
            scores[stale] = self.state.profile.node_scores(
                self.state, stale, shape, eligible, policy
            )
            taken_at[stale] = self.landed[stale]
        return scores[winners]

    def used(self, node: int) -> None:
        self.landed[node] += 1
        if self.twins is not None:
            self.twins.used(node)
