"""How much history a piece of advice stands on, and whether that is enough to give it.

Right-sizing from a few minutes of a young or bursty pod's use recommends a request its next
peak overruns (out of memory for GPU memory); advice waits for enough sample times over a
long enough span. Pure: sample times in, a verdict out.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from itertools import pairwise
from statistics import median


@dataclass(frozen=True, slots=True)
class History:
    """What one subject's samples cover: how many sample times, the first and last, the step."""

    samples: int  # distinct sample times (several series sampled at one time count once)
    first: float
    last: float
    step: float  # median gap between sample times; 0 with fewer than two

    @classmethod
    def of(cls, times: Iterable[float]) -> History:
        distinct = sorted({float(t) for t in times})
        if not distinct:
            return cls(0, 0.0, 0.0, 0.0)
        gaps = [b - a for a, b in pairwise(distinct)]
        return cls(len(distinct), distinct[0], distinct[-1], float(median(gaps)) if gaps else 0.0)

    @property
    def covered_s(self) -> float:
        """First to last sample plus one step: each sample stands for one step of time, so
        288 samples 5 minutes apart cover 24 h."""
        return self.last - self.first + self.step


def not_enough(history: History, min_samples: int, min_seconds: float) -> str | None:
    """Why `history` is too short to advise from, or None when it is enough."""
    # A millisecond of slack: 288 samples 300.0 s apart cover 86400 s, float noise aside.
    if history.samples >= min_samples and history.covered_s >= min_seconds - 1e-3:
        return None
    noun = "sample" if history.samples == 1 else "samples"
    return (
        f"not enough history ({history.samples} {noun} over "
        f"{duration_text(history.covered_s)}; need {min_samples} over "
        f"{duration_text(min_seconds)})"
    )


def duration_text(seconds: float) -> str:
    """A span as people say it: 45 s, 15 m, 24 h, 7 d; a remainder one unit down (1 h 30 m)."""
    whole = round(seconds)
    for unit, size, smaller, smaller_size in (
        ("d", 86400, "h", 3600),
        ("h", 3600, "m", 60),
        ("m", 60, "s", 1),
    ):
        # days only from two days on: "24 h" reads better than "1 d"
        if whole >= size * (2 if unit == "d" else 1):
            major, rest = divmod(whole, size)
            minor = rest // smaller_size
            return f"{major} {unit}" + (f" {minor} {smaller}" if minor else "")
    return f"{whole} s"
