"""Shared test setup. Area fixtures live in each tests/<package>/conftest.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.trace_dir import find_openb, not_found

# Helper modules that assert (or are plugins that tests also import from): rewrite their
# asserts, as in a test, before anything imports them.
pytest.register_assert_rewrite("tests.realparts", "tests.exporter.kube_source")

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO


@pytest.fixture(scope="session")
def openb_dir() -> Path:
    path = find_openb()
    if path is None:
        pytest.skip(not_found())
    return path
