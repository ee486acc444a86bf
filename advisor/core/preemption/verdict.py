"""A Pending pod's preemption verdict (docs/design.md §10.2, §10.3): the value every output
renders, decided once by `advisor.core.preemption.judge`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Verdict = Literal["off", "not-eligible", "no-victims", "evicts"]
VERDICTS: tuple[Verdict, ...] = ("off", "not-eligible", "no-victims", "evicts")


@dataclass(frozen=True, slots=True)
class Preemption:
    """What the real scheduler's preemption would do for one Pending pod the cycle did not
    place: `off` (the configuration has none for it), `not-eligible`, `no-victims`, or
    `evicts` `victims` ("ns/pod", in the order evicted) on `node`; `helps`: whether the pod
    then fits its cards there (False: the eviction is useless), None unless `evicts`."""

    verdict: Verdict
    message: str
    node: str | None = None
    victims: tuple[str, ...] = ()
    helps: bool | None = None
