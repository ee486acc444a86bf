"""What the search worked out per card, kept while the card and the Pending shapes stay the
same: the greedy lists every card's victims for every Pending shape after each change of
the queue's shapes, and each run of the portfolio starts on the same board again, so most
of those answers are ones worked out before.

An answer about a card is stamped with the card's stamp and which of its pods may move now
(`Board.movable_mask`: the Pending shapes decide): a card's stamp is 0 as the input has it
and a number never used before each time a commit changes it, so one memo serves every
board built from the same input (the portfolio's runs, the look above the caps). A stale
answer is never read: its stamps differ.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

E = TypeVar("E")
Victims = tuple[int, ...]
# (the card's stamp, its movable pods, the answer): one flat tuple, as there are many
CardEntry = tuple[int, int, Victims | None]
RoomEntry = tuple[int, int, int]
# (per card of the node: its stamp and movable pods; cards checked; the cards chosen)
NodeEntry = tuple[tuple[tuple[int, int], ...], int, Victims | None]


class Answers(Generic[E]):
    """Entries per (question, card or node): `question` is any hashable value, say a Shape;
    an entry holds its answer and what the answer was worked out on."""

    def __init__(self) -> None:
        self._tables: dict[Hashable, dict[int, E]] = {}
        # by identity first: hashing a Shape costs more than the answer's lookup
        self._by_id: dict[int, tuple[object, dict[int, E]]] = {}

    def table(
        self, question: Hashable, asks: Callable[[Any], Hashable] | None = None
    ) -> dict[int, E]:
        """The answers to `question`, per card. `asks`: what of `question` the answers read
        (questions alike in it share one table); by default all of it."""
        found = self._by_id.get(id(question))
        if found is not None:
            return found[1]
        table = self._tables.setdefault(question if asks is None else asks(question), {})
        # the entry keeps `question` alive, so its id names no other object meanwhile
        self._by_id[id(question)] = (question, table)
        return table


class CardMemo:
    """The stamps, and the answers of `plan.victims`: a card's victims for a shape, per
    bound on the victims per card (`victims`; None: none), the most memory evictions could
    free on it (`room`), and a node's cards cheapest to free for a shape (`nodes`)."""

    def __init__(self) -> None:
        self._fresh = itertools.count(1)
        self._victims: dict[int, Answers[CardEntry]] = {}
        self._nodes: dict[int, Answers[NodeEntry]] = {}
        self.room: Answers[RoomEntry] = Answers()

    def victims(self, most: int) -> Answers[CardEntry]:
        """The victims answers for at most `most` victims per card."""
        found = self._victims.get(most)
        if found is None:
            found = self._victims[most] = Answers()
        return found

    def nodes(self, most: int) -> Answers[NodeEntry]:
        """The nodes' answers for at most `most` victims per card."""
        found = self._nodes.get(most)
        if found is None:
            found = self._nodes[most] = Answers()
        return found

    def fresh_stamp(self) -> int:
        """A card stamp never handed out before (0 is the input's)."""
        return next(self._fresh)
