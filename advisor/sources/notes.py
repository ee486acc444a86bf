"""What assembling the live state learns on the way: warnings, stale series, what they drop."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from advisor.sources.values import Stale

NAMES_SHOWN = 8


@dataclass(slots=True)
class Notes:
    warnings: list[str] = field(default_factory=list)
    stale: list[Stale] = field(default_factory=list)
    stale_nodes: set[str] = field(default_factory=set)  # left out entirely
    stale_pods: set[str] = field(default_factory=set)  # "namespace/pod", left out


def names(items: Iterable[str]) -> str:
    """A few names for a one-line message, sorted; the rest counted."""
    ordered = sorted(items)
    shown = ", ".join(ordered[:NAMES_SHOWN])
    more = len(ordered) - NAMES_SHOWN
    return f"{shown} and {more} more" if more > 0 else shown
