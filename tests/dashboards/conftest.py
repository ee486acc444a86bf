"""Fixtures for the dashboard tests: the built dashboards and a Prometheus with history."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the dashboards_* helpers

from dashboards_grafana import Json
from dashboards_history import STEP, write_history
from dashboards_prometheus import Window

from dashboards.build import render
from tests.realparts import Prometheus, backfill, running_prometheus


@pytest.fixture(scope="session")
def built() -> dict[str, Json]:
    """uid -> dashboard JSON, from a fresh build (what `xgpu-dashboards build` writes)."""
    boards: dict[str, Json] = {}
    for text in render().values():
        board = json.loads(text)
        boards[board["uid"]] = board
    return boards


@pytest.fixture(scope="session")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Prometheus, Window]]:
    """A real Prometheus holding two hours of backfilled history (dashboards_history.py)."""
    home = tmp_path_factory.mktemp("history")
    end = time.time() // STEP * STEP
    start = write_history(home / "history.om", end)
    backfill(home / "history.om", home / "data")
    with running_prometheus(home, {"global": {"scrape_interval": "15s"}}) as prometheus:
        yield prometheus, Window(start, end, STEP)
