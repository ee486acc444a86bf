"""The fuzz suite's two hypothesis profiles, chosen by the HYPOTHESIS_PROFILE environment
variable: "ci" (the default: derandomized, so every run tries the same examples, and bounded
so the whole suite takes well under a minute) and "fuzz" (`make fuzz`: random, and each
target tries 20 times as many examples).

The profiles are applied per test (`fuzz_settings`), not loaded globally, so the rest of the
test suite keeps its own hypothesis settings whichever profile is chosen here.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_QUIET = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

settings.register_profile(
    "ci", derandomize=True, database=None, deadline=None, suppress_health_check=_QUIET
)
settings.register_profile("fuzz", deadline=None, suppress_health_check=_QUIET)

PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
if PROFILE not in ("ci", "fuzz"):
    PROFILE = "ci"  # another profile named for the rest of the suite: this one's default
SCALE = 20 if PROFILE == "fuzz" else 1


def fuzz_settings(examples: int) -> settings:
    """The chosen profile with `examples` per target in CI (20 times as many under fuzz)."""
    return settings(settings.get_profile(PROFILE), max_examples=examples * SCALE)
