"""Shared test setup. Area fixtures live in each tests/<package>/conftest.py."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.trace_dir import find_openb, not_found

# Helper modules that assert (or are plugins that tests also import from): rewrite their
# asserts, as in a test, before anything imports them.
pytest.register_assert_rewrite("tests.realparts", "tests.exporter.kube_source")

# servicecheck: fails a test that starts a process or a server without the `realservices`
# marker. fastloop: `--quick-properties` for `make test-fast`. scenario_recorder: inert unless
# XGPU_RECORD_SCENARIOS names a folder (`python -m conformance.fixtures`).
pytest_plugins = ["tests.servicecheck", "tests.fastloop", "tests.scenario_recorder"]

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


@pytest.fixture(autouse=True)
def root_logging_restored() -> Iterator[None]:
    """Each test gets the root logger back as it found it: `xgpu-exporter`'s main, run in
    process, points it at sys.stderr as captured during that test (closed afterwards), and a
    later test that logs would write to the closed stream."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
