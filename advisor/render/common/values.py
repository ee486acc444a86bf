"""Reading the JSON-ready dicts tolerantly, and the numbers every page prints.

A report may come from an older or newer advisor, or be hand-edited: a missing, null or odd
value becomes a neutral default or "?", never an exception (a report must never crash a cron
run).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

GIB = 2**30


def as_int(value: Any, default: int = 0) -> int:
    """An int from JSON (bools are not counts; floats are truncated)."""
    if type(value) is int:  # the common case first: a report's card view holds ~10^6 of them
        return value
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value == value:  # not NaN
        return int(value)
    return default


def as_str(value: Any, default: str = "") -> str:
    return value if isinstance(value, str) else default


def as_map(value: Any) -> Mapping[str, Any]:
    if type(value) is dict:  # before the slower Mapping check, as in `as_int`
        return value
    return value if isinstance(value, Mapping) else {}


def as_list(value: Any) -> Sequence[Any]:
    return value if isinstance(value, list | tuple) else ()


def as_float(value: Any) -> float | None:
    """A finite number from JSON, else None (bools are not numbers)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def fmt_age(seconds: float | None) -> str:
    """ "45 s", "32 min", "2 h 2 min"; "?" when unknown."""
    if seconds is None:
        return "?"
    if seconds < 120:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    if minutes < 120:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"


def fmt_num(value: Any, digits: int = 3) -> str:
    """At most `digits` decimals, no trailing zeros: 0.5, 19, 3.688; "?" when unknown."""
    number = as_float(value)
    if number is None:
        return "?"
    text = f"{number:.{digits}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def fmt_pct(value: Any) -> str:
    number = as_float(value)
    return "?" if number is None else f"{number:.1%}"


def fmt_int(value: Any) -> str:
    """Rounded, thousands grouped: 39,936 ("?" when unknown); for table cells."""
    number = as_float(value)
    return "?" if number is None else f"{round(number):,}"


def fmt_mib(value: Any) -> str:
    text = fmt_int(value)
    return text if text == "?" else f"{text} MiB"
