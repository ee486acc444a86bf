"""Which running pods a plan may move, as the Pending shapes change (`Board.movable`).

Evicting a pod cannot pay while a Pending pod waits whose shape it needs no less than
(`Shape.needs_no_less`) and whose priority is not lower: that pod is queued first and fits
wherever this one would. The answer depends on a pod's (shape, priority) only, and a
board's running pods have few of those, so it is kept per pair. When the Pending shapes
change, only what changed can flip an answer: a pair free to move is held back only by a
shape that came (or whose highest priority rose), and a pair held back is freed only where
what held it went (or its priority fell). So each change compares every pair with the
shapes that changed, not with all of them, and returns the pods whose answer flipped: the
cards worth looking at again.
"""

from __future__ import annotations

from collections.abc import Sequence

from advisor.core.state import Shape

Pair = tuple[Shape, int]  # (shape, priority)


class Movability:
    """`pairs`: per pod its (shape, priority), None for a pod no plan may evict."""

    def __init__(self, pairs: Sequence[Pair | None]) -> None:
        ids: dict[Pair, int] = {}
        self.pair_of: list[int] = []  # per pod, the index of its pair; -1: never moves
        self.pods_of: list[list[int]] = []  # per pair, its pods
        for pod, pair in enumerate(pairs):
            if pair is None:
                self.pair_of.append(-1)
                continue
            i = ids.setdefault(pair, len(ids))
            if i == len(self.pods_of):
                self.pods_of.append([])
            self.pods_of[i].append(pod)
            self.pair_of.append(i)
        self.pairs: list[Pair] = list(ids)
        self.free: list[bool] = [True] * len(self.pairs)  # per pair: no Pending shape holds it
        self.shapes: dict[Shape, int] = {}  # Pending shape -> its highest priority

    def movable(self, pod: int) -> bool:
        i = self.pair_of[pod]
        return i >= 0 and self.free[i]

    def update(self, shapes: dict[Shape, int]) -> list[int]:
        """The Pending shapes are now `shapes` (each with its highest priority): the pods
        whose answer flipped."""
        before = self.shapes
        came = {s: top for s, top in shapes.items() if top > before.get(s, top - 1)}
        went = {s: top for s, top in before.items() if top > shapes.get(s, top - 1)}
        self.shapes = dict(shapes)
        flipped: list[int] = []
        for i, pair in enumerate(self.pairs):
            if self.free[i]:
                now = not _holds(came, pair)
            else:  # held by something: by what stays, unless all that held it went
                now = _holds(went, pair) and not _holds(shapes, pair)
            if now != self.free[i]:
                self.free[i] = now
                flipped.extend(self.pods_of[i])
        return flipped


def _holds(shapes: dict[Shape, int], pair: Pair) -> bool:
    shape, priority = pair
    return any(shape.needs_no_less(s) and top >= priority for s, top in shapes.items())
