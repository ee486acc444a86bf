"""The test suite's scenarios, recorded for the differential harness (docs/conformance.md,
`python -m conformance.fixtures`). Inert unless XGPU_RECORD_SCENARIOS names a folder: then
every scenario the reader accepts (`scenario_from_data`, `load_scenario`, `scenario_from_text`
all go through `read._read_cluster`) is written there as JSON, named by its content hash,
once. Hypothesis draws are left out: they change from run to run and are no fixture.

Loaded by tests/conftest.py."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ENV = "XGPU_RECORD_SCENARIOS"


def pytest_configure(config: pytest.Config) -> None:
    folder = os.environ.get(ENV)
    if folder:
        install(Path(folder))


def install(folder: Path) -> Callable[[], None]:
    """Records into `folder` from now on; the function returned stops it."""
    import hypothesis

    from advisor.scenario import read

    folder.mkdir(parents=True, exist_ok=True)
    reader = read._read_cluster

    def recording(data: object, source: str, limits: Any) -> Any:
        cluster = reader(data, source, limits)  # a ScenarioError records nothing
        if not hypothesis.currently_in_test_context():
            try:
                text = json.dumps(data, sort_keys=True)
            except (TypeError, ValueError):
                return cluster  # not JSON (a YAML date, a non-finite number): not recorded
            path = folder / (hashlib.sha256(text.encode()).hexdigest()[:16] + ".json")
            if not path.exists():  # a scenario many tests read is written once
                path.write_text(text + "\n")
        return cluster

    read._read_cluster = recording

    def uninstall() -> None:
        read._read_cluster = reader

    return uninstall
