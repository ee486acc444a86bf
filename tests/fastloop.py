"""`--quick-properties`, for `make test-fast`: each hypothesis test tries a tenth of its
examples (at least ten), so the inner loop stays under a minute. `make test` and CI run
every example; this only shortens the loop a developer waits on between edits.

Loaded by tests/conftest.py. A test names its count through `examples(n)`, which reads the
option: pytest parses it (`pytest_configure`) before it imports any test module, so the
count is settled when the test's @settings decorator runs. Tests without a count of their
own get hypothesis's "quick" profile, loaded here.
"""

from __future__ import annotations

import pytest
from hypothesis import settings

OPTION = "--quick-properties"
SHARE = 10  # a tenth of the examples ...
AT_LEAST = 10  # ... but never fewer than this
_quick = False


def examples(count: int) -> int:
    """`count`, or a tenth of it (at least AT_LEAST) under `--quick-properties`."""
    return min(count, max(AT_LEAST, count // SHARE)) if _quick else count


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        OPTION,
        action="store_true",
        help="hypothesis tests try a tenth of their examples (make test-fast)",
    )


def pytest_configure(config: pytest.Config) -> None:
    global _quick
    _quick = bool(config.getoption(OPTION))
    if _quick:
        default = settings.get_profile("default").max_examples
        settings.register_profile("quick", max_examples=examples(default))
        settings.load_profile("quick")
