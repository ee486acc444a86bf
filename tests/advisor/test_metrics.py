"""The advisor's own series: textfile (promtool-clean) and a real Pushgateway."""

from __future__ import annotations

import shutil
import urllib.request
from dataclasses import replace
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from advisor.core.autoscalers import Blocked, Reach
from advisor.core.diagnosis import CAUSES
from advisor.core.hpa import Autoscaler
from advisor.metrics import RunFigures, push, write_textfile
from tests.realparts import promtool_check_metrics

pytestmark = pytest.mark.realservices  # promtool and a real Pushgateway

pytest_plugins = ["tests.advisor.pushgateway"]  # the `pushgateway` fixture

# One autoscaler of each status (docs/design.md §12.2).
BLOCKED = Reach(
    Autoscaler("web/infer-hpa", "Deployment/web/infer", 1, 5, 1),
    "web/infer-0",
    3,
    Blocked("fragmentation", "…", "0/2 nodes are unavailable: 2 card-memory."),
)
REACHABLE = Reach(
    Autoscaler("web/search-hpa", "Deployment/web/search", 1, 4, 2), "web/s-0", 2, None
)
UNKNOWN = Reach(Autoscaler("web/lost-hpa", "Deployment/web/lost", 1, 3, 1), None, None, None)
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
    autoscalers=(BLOCKED, REACHABLE, UNKNOWN),
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
    assert got[("xgpu_advisor_autoscaler_replicas", (("autoscaler", "web/infer-hpa"),))] == 1
    assert got[("xgpu_advisor_autoscaler_max_replicas", (("autoscaler", "web/infer-hpa"),))] == 5
    assert (
        got[("xgpu_advisor_autoscaler_placeable_replicas", (("autoscaler", "web/infer-hpa"),))] == 3
    )
    blocked = (("autoscaler", "web/infer-hpa"), ("cause", "fragmentation"))
    assert got[("xgpu_advisor_autoscaler_blocked", blocked)] == 1
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


def autoscaler_series(
    got: dict[tuple[str, tuple[tuple[str, str], ...]], float],
) -> dict[str, dict[tuple[str, ...], float]]:
    """name -> (autoscaler[, cause]) -> value, of the autoscaler series alone."""
    out: dict[str, dict[tuple[str, ...], float]] = {}
    for (name, labels), value in got.items():
        if name.startswith("xgpu_advisor_autoscaler_"):
            named = dict(labels)
            key = (named["autoscaler"], *([named["cause"]] if "cause" in named else []))
            out.setdefault(name, {})[key] = value
    return out


def test_autoscaler_series_say_only_what_is_known(tmp_path: Path) -> None:
    """replicas and max for all three; placeable for the two with a template (the unknown
    one has none, not 0); blocked for the blocked one alone, with its cause."""
    path = tmp_path / "xgpu_advisor.prom"
    write_textfile(path, RUN)
    got = autoscaler_series(samples(path.read_text()))
    every = {"web/infer-hpa", "web/search-hpa", "web/lost-hpa"}
    assert {k for (k,) in got["xgpu_advisor_autoscaler_replicas"]} == every
    assert got["xgpu_advisor_autoscaler_max_replicas"][("web/lost-hpa",)] == 3
    assert got["xgpu_advisor_autoscaler_placeable_replicas"] == {
        ("web/infer-hpa",): 3,
        ("web/search-hpa",): 2,
    }
    assert got["xgpu_advisor_autoscaler_blocked"] == {("web/infer-hpa", "fragmentation"): 1}
    # "cannot reach max" in numbers: replicas + placeable < max for the blocked one only
    short = {
        name
        for (name,), placeable in got["xgpu_advisor_autoscaler_placeable_replicas"].items()
        if got["xgpu_advisor_autoscaler_replicas"][(name,)] + placeable
        < got["xgpu_advisor_autoscaler_max_replicas"][(name,)]
    }
    assert short == {"web/infer-hpa"}


def test_a_push_without_the_blocked_autoscaler_drops_its_series(pushgateway: str) -> None:
    """The next run found room: its push replaces the group, so no blocked series lingers
    for the alert to read."""
    push(pushgateway, RUN)
    url = f"{pushgateway}/metrics"
    first = autoscaler_series(samples(urllib.request.urlopen(url, timeout=5).read().decode()))
    assert first["xgpu_advisor_autoscaler_blocked"] == {("web/infer-hpa", "fragmentation"): 1}
    room = Reach(BLOCKED.autoscaler, "web/infer-0", 4, None)
    push(pushgateway, replace(RUN, autoscalers=(room, REACHABLE)))
    second = autoscaler_series(samples(urllib.request.urlopen(url, timeout=5).read().decode()))
    assert "xgpu_advisor_autoscaler_blocked" not in second
    assert second["xgpu_advisor_autoscaler_placeable_replicas"] == {
        ("web/infer-hpa",): 4,
        ("web/search-hpa",): 2,
    }
    assert ("web/lost-hpa",) not in second["xgpu_advisor_autoscaler_replicas"]
