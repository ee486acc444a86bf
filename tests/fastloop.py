"""`--quick-properties`, for `make test-fast`: each hypothesis test tries a tenth of its
examples (at least ten), so the inner loop stays under a minute. `make test` and CI run
every example; this only shortens the loop a developer waits on between edits.

Loaded by tests/conftest.py. Hypothesis has no public switch that scales the counts tests
set with @settings(max_examples=...), so the test's own settings object is replaced by a
copy with the smaller count (the attribute @settings itself writes).
"""

from __future__ import annotations

import pytest
from hypothesis import settings

OPTION = "--quick-properties"
SHARE = 10  # a tenth of the examples ...
AT_LEAST = 10  # ... but never fewer than this
_SETTINGS = "_hypothesis_internal_use_settings"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        OPTION,
        action="store_true",
        help="hypothesis tests try a tenth of their examples (make test-fast)",
    )


def quick(current: settings) -> settings:
    count = current.max_examples
    return settings(current, max_examples=min(count, max(AT_LEAST, count // SHARE)))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.getoption(OPTION):
        return
    done: set[int] = set()  # a parametrized test is one function under several items
    for item in items:
        test = getattr(item, "obj", None)
        current = getattr(test, _SETTINGS, None)
        if isinstance(current, settings) and id(test) not in done:
            done.add(id(test))
            setattr(test, _SETTINGS, quick(current))
