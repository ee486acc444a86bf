"""Fixtures for the dashboard tests: the built dashboards and a Prometheus with history."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from dashboards.build import render
from tests.dashboards.dashboards_grafana import Json
from tests.dashboards.dashboards_history import STEP, write_history
from tests.dashboards.dashboards_prometheus import Window
from tests.realparts import REPO, Prometheus, backfill, installed, running_prometheus

RULES = REPO / "deploy" / "rules" / "xgpu.rules.yaml"


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
    """A real Prometheus holding two hours of backfilled history (dashboards_history.py)
    and the recording rules' series over it, which the panels read where a rule exists."""
    home = tmp_path_factory.mktemp("history")
    end = time.time() // STEP * STEP
    start = write_history(home / "history.om", end)
    backfill(home / "history.om", home / "data")
    config = {"global": {"scrape_interval": "15s"}}
    with running_prometheus(home, config) as raw:
        backfill_rules(raw, RULES, start, end, home / "rules-blocks")
    for block in (home / "rules-blocks").iterdir():
        block.rename(home / "data" / block.name)
    with running_prometheus(home, config) as prometheus:
        yield prometheus, Window(start, end, STEP)


def backfill_rules(source: Prometheus, rules: Path, start: float, end: float, out: Path) -> None:
    """promtool evaluates the recording rules over [start, end] against `source`'s data,
    every history step, into TSDB blocks in `out` (as Prometheus would have recorded them)."""
    command = [
        installed("promtool"), "tsdb", "create-blocks-from", "rules",
        f"--url={source.url}", f"--start={int(start)}", f"--end={int(end) + 1}",
        f"--eval-interval={int(STEP)}s", f"--output-dir={out}", "--quiet", str(rules),
    ]  # fmt: skip
    created = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
    assert created.returncode == 0, created.stdout + created.stderr
    assert any(out.iterdir()), "promtool wrote no blocks"
