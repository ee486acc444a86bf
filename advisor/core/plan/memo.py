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
from collections.abc import Hashable
from typing import Generic, TypeVar

T = TypeVar("T")
# (the card's stamp, its movable pods, the answer): one flat tuple, as there are many
Entry = tuple[int, int, T]


class Answers(Generic[T]):
    """Answers per (question, card): `question` is any hashable value, say a Shape."""

    def __init__(self) -> None:
        self._tables: dict[Hashable, dict[int, Entry[T]]] = {}
        # by identity first: hashing a Shape costs more than the answer's lookup
        self._by_id: dict[int, tuple[object, dict[int, Entry[T]]]] = {}

    def table(self, question: Hashable) -> dict[int, Entry[T]]:
        """The answers to `question`, per card."""
        found = self._by_id.get(id(question))
        if found is not None:
            return found[1]
        table = self._tables.setdefault(question, {})
        # the entry keeps `question` alive, so its id names no other object meanwhile
        self._by_id[id(question)] = (question, table)
        return table


class CardMemo:
    """The stamps, and the answers of `plan.victims`: a card's victims for a shape, per
    bound on the victims per card (`victims`; None: none), and the most memory evictions
    could free on it (`room`)."""

    def __init__(self) -> None:
        self._fresh = itertools.count(1)
        self._victims: dict[int, Answers[tuple[int, ...] | None]] = {}
        self.room: Answers[int] = Answers()

    def victims(self, most: int) -> Answers[tuple[int, ...] | None]:
        """The victims answers for at most `most` victims per card."""
        return self._victims.setdefault(most, Answers())

    def fresh_stamp(self) -> int:
        """A card stamp never handed out before (0 is the input's)."""
        return next(self._fresh)
