"""A series as a source read it, checked before the model sees it: a value that is present
but unusable (not a number, NaN, infinite, negative, beyond any card) is reported as invalid
with the series named, never dropped to look "missing" further on."""

from __future__ import annotations

import math
from collections.abc import Mapping

from advisor.scenario.strict import MAX_MEMORY_MIB
from advisor.sources.values import CARD_FAMILIES, COLLECTOR_SUCCESS, VGPU_FAMILIES

# The largest value any family the model reads may hold: memory in bytes of the largest
# card the scenario format admits (1 EiB); counts, flags and percentages are far below.
MAX_VALUE = float(MAX_MEMORY_MIB * 2**20)
MAX_NAME = 200  # characters of a series' name in a message
# The labels that say what a series is about (besides `node`, checked with its own advice):
# without them its value would be filed under no card or no pod, and the card or pod it
# belongs to would look as if the series were missing.
REQUIRED_LABELS: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(CARD_FAMILIES, ("gpu_index",)),
    **dict.fromkeys(VGPU_FAMILIES, ("namespace", "pod", "gpu_index")),
    COLLECTOR_SUCCESS: ("collector",),
}


def series_name(metric: str, labels: Mapping[str, str]) -> str:
    """`metric{a="b",c="d"}`, shortened to MAX_NAME characters, control characters escaped."""
    inner = ",".join(f"{k}={_quoted(v)}" for k, v in sorted(labels.items()) if k != "__name__")
    text = f"{metric}{{{inner}}}"
    return text if len(text) <= MAX_NAME else text[: MAX_NAME - 3] + "..."


def _quoted(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + "".join(c if c.isprintable() else repr(c)[1:-1] for c in escaped) + '"'


def one_line(text: object, limit: int = 300) -> str:
    """Remote text as one short line of printable characters (controls escaped)."""
    flat = " ".join(str(text).split())
    printable = "".join(c if c.isprintable() else repr(c)[1:-1] for c in flat)
    return printable if len(printable) <= limit else printable[: limit - 3] + "..."


def number(text: object) -> float | None:
    """A sample value as Prometheus's API writes it (a string) or a JSON number; None when it
    is neither."""
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        return None
    try:
        return float(text)
    except (ValueError, OverflowError):
        return None


def label_problem(metric: str, labels: Mapping[str, str]) -> str | None:
    """Why a series' labels cannot say what it is about, or None."""
    absent = [name for name in REQUIRED_LABELS.get(metric, ()) if not labels.get(name)]
    return f"label {', '.join(absent)} missing" if absent else None


def value_problem(value: float | None, raw: object) -> str | None:
    """Why a state value cannot be used, or None."""
    if value is None:
        shown = repr(raw) if len(repr(raw)) <= 40 else repr(raw)[:37] + "..."
        return f"value {shown} is not a number"
    if not math.isfinite(value):
        return f"value {value} is not a finite number"
    if value < 0:
        return f"value {value:g} is negative"
    if value > MAX_VALUE:
        return f"value {value:g} is beyond any card (at most {MAX_VALUE:g})"
    return None


def string_labels(raw: object) -> dict[str, str] | None:
    """A series' labels when they are a mapping of strings to strings, else None."""
    if not isinstance(raw, dict):
        return None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in raw.items()):
        return None
    return dict(raw)
