"""Autoscaler targets from history (docs/design.md §12.2) through `xgpu-advisor report`, all
real: `xgpu-exporter --simulate` for the one node, a real Prometheus scraping it that also
holds two hours of history backfilled with promtool (as test_report_live.py writes it), and
the pods and the HorizontalPodAutoscaler from `--pods-from`.

Two replicas of Deployment web/infer (8 GiB and 50 % core each, on card 0) use 5 % core all
along, but for ten minutes in the middle where a third replica (scaled down since: no pod
now, so no owner in the history) joins and all three use 45 %. Card 1 holds two more
replicas. So the HPA saw demand 135 at p95 and peak (ten steps of about 120 are over 5 %),
over 3 replicas at most; at 70 % of 50 (35) the peak needs ceil(135 / 35) = 4 replicas,
which the cluster places. The few live samples at the end are at most 2 x 47.5 = 95.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from advisor.cli import main
from tests.realparts import (
    Prometheus,
    http_get,
    scrape_config,
    simulated_exporters,
    start_prometheus,
    write_backfill,
)

pytestmark = pytest.mark.realservices  # a real exporter and Prometheus

MIB = 2**20
HISTORY_S = 7200
STEP_S = 60
GAP_S = 90  # history ends this long before Prometheus starts
JOB = "xgpu-exporter"  # scrape_config's job
NOW_PODS = ("infer-7d9f8-aaaaa", "infer-7d9f8-bbbbb")
GONE = "infer-7d9f8-ccccc"
CORE = "xgpu_core_percentage_used"


def replica(name: str) -> dict[str, Any]:
    request = {"gpus": 1, "memory_mib": 8192, "core_percent": 50}
    return {
        "name": f"web/{name}",
        "node": "n1",
        "cards": [0],
        "request": request,
        "owner": "ReplicaSet/web/infer-7d9f8",
    }


SCENARIO = {
    "nodes": [
        {
            "name": "n1",
            "allocatable": {"cpu": "32", "memory": "128Gi", "pods": 110},
            "cards": [
                {
                    "index": i,
                    "memory_mib": 16384,
                    "uuid": f"GPU-00000000-0000-4000-8000-00000000000{i}",
                }
                for i in (0, 1)
            ],
        }
    ],
    "pods": [replica(name) for name in NOW_PODS],
    "autoscalers": [
        {
            "name": "web/infer-hpa",
            "target": "Deployment/web/infer",
            "min_replicas": 1,
            "max_replicas": 4,
            "replicas": 2,
            "metrics": [{"pod_metric": CORE, "target_average": 60}],
        }
    ],
}


def history_lines(url: str, end: float) -> list[str]:
    """Two hours of the replicas' vGPU series, labelled as the scrape labels them; the gone
    replica's only in the spike, labelled as its namesakes' but for its pod."""
    status, _, body = http_get(f"{url}/metrics")
    assert status == 200
    target = {"node": "n1", "job": JOB, "instance": url.split("//")[1]}
    labels: dict[str, dict[str, str]] = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            if sample.name == "xgpu_memory_total":
                labels[sample.labels["pod"]] = {**sample.labels, **target}
    assert set(labels) == set(NOW_PODS)
    labels[GONE] = {**labels[NOW_PODS[0]], "pod": GONE}
    times = [end - HISTORY_S + i * STEP_S for i in range(HISTORY_S // STEP_S + 1)]
    middle = len(times) // 2
    spike = set(times[middle : middle + 10])
    values: dict[str, Callable[[float], float]] = {
        "xgpu_memory_total": lambda t: 8192.0 * MIB,
        "xgpu_memory_used": lambda t: 2048.0 * MIB,
        "xgpu_core_percentage_total": lambda t: 50.0,
        CORE: lambda t: 45.0 if t in spike else 5.0,
    }
    lines = []
    for metric, value in values.items():
        lines.append(f"# TYPE {metric} gauge")
        for pod, tags in sorted(labels.items()):
            text = ",".join(f'{k}="{v}"' for k, v in sorted(tags.items()))
            for t in times:
                if pod != GONE or t in spike:
                    lines.append(f"{metric}{{{text}}} {value(t)} {t:.3f}")
    return lines


@dataclass
class Live:
    prometheus: Prometheus
    pods: Path


def _count(result: list[dict[str, Any]]) -> int:
    return int(float(result[0]["value"][1])) if result else 0


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    home = tmp_path_factory.mktemp("report-hpa-targets")
    scenario = home / "cluster.json"
    scenario.write_text(json.dumps(SCENARIO))  # JSON is YAML
    with ExitStack() as stack:
        (exporter,) = simulated_exporters(stack, scenario, ["n1"], home)
        write_backfill(history_lines(exporter.url, time.time() - GAP_S), home / "data")
        prometheus = start_prometheus(home, scrape_config({exporter.url: "n1"}))
        stack.callback(prometheus.stop)
        prometheus.wait_for("count(xgpu_node_info)", lambda r: _count(r) == 1)
        fresh = "count(time() - timestamp(xgpu_memory_used) < 30)"
        prometheus.wait_for(fresh, lambda r: _count(r) == len(NOW_PODS))
        yield Live(prometheus, scenario)


def run_report(live: Live, out: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> Any:
    args = ["report", "--prometheus", live.prometheus.url, "--pods-from", str(live.pods)]
    history = ["--history", "2h", "--history-step", "1m"]
    code = main([*args, *history, *extra, "--output-dir", str(out)])
    assert code == 0, capsys.readouterr().err
    return json.loads((out / "report.json").read_text())


def test_targets_from_the_backfilled_history(
    live: Live, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # two hours: less than right-sizing's default 24 h, so the gate is asked for less
    enough = ["--rightsizing.min-history", "1h", "--rightsizing.min-samples", "60"]
    data = run_report(live, tmp_path, capsys, *enough)
    (reach,) = data["diagnosis"]["autoscalers"]  # --pods-from brought the HPA
    assert (reach["placeable"], reach["status"]) == (2, "reachable")
    (entry,) = data["autoscaler_targets"]
    assert (entry["status"], entry["metric"], entry["reason"]) == ("advised", CORE, None)
    assert entry["recommended"] == {"target_average": 35.0, "max_replicas": 4}
    observed = entry["observed"]
    assert (observed["demand_p95"], observed["demand_peak"]) == (135.0, 135.0)
    assert (observed["replicas_max"], observed["per_pod_allotted"]) == (3, 50.0)
    assert observed["average_peak"] == 45.0
    assert entry["reachable_replicas"] == 4
    assert entry["confidence"] == {"level": "high", "why": []}
    evidence = entry["evidence"]
    assert evidence["samples"] > HISTORY_S // STEP_S - 5
    assert evidence["window_seconds"] >= 3600
    assert evidence["step_seconds"] == STEP_S
    # the series the HPA saw: 3 replicas at 45 in the spike, 2 at 5 before it
    series = entry["series"]
    assert (series["replicas"][0], series["average"][0]) == (2, 5.0)
    assert 45.0 in series["average"]
    markdown = (tmp_path / "report.md").read_text()
    assert (
        "- web/infer-hpa on xgpu_core_percentage_used: target_average 60 % → 35 %, "
        "max_replicas 4 → 4;"
    ) in markdown


def test_too_little_history_for_the_default_gate(
    live: Live, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (entry,) = run_report(live, tmp_path, capsys)["autoscaler_targets"]
    assert (entry["status"], entry["recommended"]) == ("not-advised", None)
    reason = entry["reason"]
    assert reason.startswith("not enough history (")
    assert " over 2 h" in reason
    assert reason.endswith("; need 288 over 24 h)")
