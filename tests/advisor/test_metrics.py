"""The advisor's own series: textfile (promtool-clean) and a real Pushgateway."""

from __future__ import annotations

import shutil
import urllib.request
from dataclasses import replace
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from advisor.core.diagnosis import CAUSES
from advisor.metrics import RunFigures, push, write_textfile
from tests.realparts import promtool_check_metrics

pytestmark = pytest.mark.realservices  # promtool and a real Pushgateway

pytest_plugins = ["tests.advisor.pushgateway"]  # the `pushgateway` fixture

RUN = RunFigures(
    pending_by_cause={"fragmentation": 3, "capacity": 1},
    stranded_memory_bytes=8 * 2**30,
    fragmentation_ratio=0.25,
    plans_by_kind={"rebalance": 2},
    rescuable_pods=2,
    finished_at=1_764_480_000.0,
    duration_seconds=1.5,
    pending_ages={"fragmentation": [60.0, 7200.0]},
    latencies={"cce": [1.0, 150.0]},
)


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_textfile_has_every_series(tmp_path: Path) -> None:
    path = tmp_path / "xgpu_advisor.prom"
    write_textfile(path, RUN)
    got = samples(path.read_text())
    assert got[("xgpu_advisor_pending_pods", (("cause", "fragmentation"),))] == 3
    assert got[("xgpu_advisor_pending_pods", (("cause", "invalid"),))] == 0  # every cause present
    assert got[("xgpu_advisor_stranded_memory_bytes", ())] == 8 * 2**30
    assert got[("xgpu_advisor_fragmentation_ratio", ())] == 0.25
    assert got[("xgpu_advisor_plans", (("kind", "rebalance"),))] == 2
    assert got[("xgpu_advisor_plans", (("kind", "scale_up"),))] == 0
    assert got[("xgpu_advisor_rescuable_pods", ())] == 2
    assert got[("xgpu_advisor_last_success_timestamp_seconds", ())] == 1_764_480_000.0
    assert got[("xgpu_advisor_run_duration_seconds", ())] == 1.5
    assert got[("xgpu_advisor_pending_age_max_seconds", (("cause", "fragmentation"),))] == 7200
    assert got[("xgpu_advisor_pending_age_seconds_count", (("cause", "fragmentation"),))] == 2
    assert got[("xgpu_advisor_scheduling_latency_seconds_count", (("profile", "cce"),))] == 2
    assert list(tmp_path.iterdir()) == [path]  # the writer's temporary file is gone


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_textfile_is_lint_clean(tmp_path: Path) -> None:
    path = tmp_path / "xgpu_advisor.prom"
    write_textfile(path, RUN)
    status, findings = promtool_check_metrics(path.read_text())
    assert status == 0, findings


def test_push_replaces_the_group(pushgateway: str) -> None:
    push(pushgateway, RUN)
    push(pushgateway, RunFigures({"capacity": 5}, 0, 0.0, finished_at=1.0))
    text = urllib.request.urlopen(f"{pushgateway}/metrics", timeout=5).read().decode()
    got = samples(text)
    group = (("instance", ""), ("job", "xgpu-advisor"))
    assert got[("xgpu_advisor_pending_pods", (("cause", "capacity"), *group))] == 5
    # the second push replaced the first run's values
    assert got[("xgpu_advisor_pending_pods", (("cause", "fragmentation"), *group))] == 0


def test_every_cause_of_the_core_has_its_series(tmp_path: Path) -> None:
    """node-resources included: the core's list of causes is the one the series follow."""
    path = tmp_path / "xgpu_advisor.prom"
    write_textfile(path, replace(RUN, pending_by_cause={"node-resources": 2, "fragmentation": 3}))
    got = samples(path.read_text())
    pending = {
        dict(labels)["cause"]: value
        for (name, labels), value in got.items()
        if name == "xgpu_advisor_pending_pods"
    }
    assert set(pending) == set(CAUSES)
    assert "node-resources" in CAUSES
    assert pending["node-resources"] == 2
    assert pending["fragmentation"] == 3
    assert sum(pending.values()) == 5
