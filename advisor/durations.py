"""Durations on the command line, one grammar for both programs: Prometheus's.

A duration is one or more `<number><unit>` terms, units from the largest to the smallest,
each at most once, as Prometheus parses `5m` or `1h30m` (its `model.ParseDuration`):
`y` (365 days), `w`, `d`, `h`, `m`, `s`, `ms`; and `0`. Two forms that the CLIs took before
this grammar was shared still work: a decimal number in a term (`1.5h`, `0.5s`), and, where the
caller allows it, plain seconds (`2`, `0.5`, `.25`: every exporter flag that takes a duration).

Pure: text in, seconds out, ValueError with a one-line reason for anything else (never a
negative, NaN or infinite number of seconds).
"""

from __future__ import annotations

import math
import re

UNIT_SECONDS: dict[str, float] = {
    "y": 365 * 86400.0,
    "w": 7 * 86400.0,
    "d": 86400.0,
    "h": 3600.0,
    "m": 60.0,
    "s": 1.0,
    "ms": 0.001,
}
_ORDER = tuple(UNIT_SECONDS)  # largest first
# `ms` before `m` and `s`, so that "5ms" is one term, not "5m" and a stray "s".
_TERM = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|y|w|d|h|m|s)")
_PLAIN_SECONDS = re.compile(r"[0-9]+(?:\.[0-9]*)?|\.[0-9]+")


def parse_duration(text: str, *, plain_seconds: bool = False) -> float:
    """Seconds in `text` ("1h30m" -> 5400.0); plain numbers are seconds when `plain_seconds`."""
    stripped = text.strip()
    if stripped == "0" or (plain_seconds and _PLAIN_SECONDS.fullmatch(stripped)):
        return _finite(float(stripped), text)
    example = "seconds or a duration" if plain_seconds else "a duration"
    expected = f"expected {example} like 500ms, 90s, 1h30m or 7d, got {text!r}"
    seconds, position, last_rank = 0.0, 0, -1
    while position < len(stripped):
        term = _TERM.match(stripped, position)
        if term is None:
            raise ValueError(expected)
        rank = _ORDER.index(term.group(2))
        if rank <= last_rank:
            raise ValueError(
                f"expected units from the largest to the smallest, each once (as in 1h30m), "
                f"got {text!r}"
            )
        seconds += float(term.group(1)) * UNIT_SECONDS[term.group(2)]
        position, last_rank = term.end(), rank
    if position == 0:
        raise ValueError(expected)
    return _finite(seconds, text)


def _finite(seconds: float, text: str) -> float:
    if not math.isfinite(seconds):  # float() of a thousand digits is inf, not an error
        raise ValueError(f"duration {text!r} is too large")
    return seconds
