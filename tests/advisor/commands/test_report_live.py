"""`xgpu-advisor report` on live sources, all real: `xgpu-exporter --simulate` for each node of
the demo, a real Prometheus scraping them that also holds two hours of their history
(backfilled with promtool), and the Kubernetes API double holding the demo's pods.

The history is written as the very series the live scrape continues (same labels, `node`,
`job` and `instance` included) and ends before Prometheus starts, so the backfilled blocks
and the live head block never overlap. Every vGPU used 40% of its allotment all along, with
one spike to 50% an hour ago, so the p95 the report finds is the history's, not the few live
samples'. Tests share the parts; the last one stops an exporter.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from advisor.cli import main
from advisor.core.mig_cycle import is_mig
from advisor.scenario import load_scenario
from tests.advisor.realservices import kubernetes_holding
from tests.realparts import (
    LIVE_DEMO,
    Exporter,
    Prometheus,
    http_get,
    scrape_config,
    simulated_exporters,
    start_prometheus,
    write_backfill,
)

pytestmark = pytest.mark.realservices  # real exporters, Prometheus and the API double

DEMO_CLUSTER = load_scenario(LIVE_DEMO)
MIB = 2**20
HISTORY_S = 7200
STEP_S = 60
GAP_S = 90  # history ends this long before Prometheus starts
USE, SPIKE = 0.4, 0.5
HISTORY_METRICS = (
    "xgpu_memory_total",
    "xgpu_memory_used",
    "xgpu_core_percentage_total",
    "xgpu_core_percentage_used",
)
JOB = "xgpu-exporter"  # scrape_config's job
SeriesKey = tuple[tuple[str, str], ...]


def history_lines(exporters: list[Exporter], end: float) -> list[str]:
    """Two hours of each exporter's vGPU series, labelled as the scrape will label them."""
    allotted: dict[SeriesKey, dict[str, float]] = {}  # series -> metric -> value
    labels_of: dict[SeriesKey, dict[str, str]] = {}
    for exporter in exporters:
        status, _, body = http_get(f"{exporter.url}/metrics")
        assert status == 200
        target = {"node": exporter.node, "job": JOB, "instance": exporter.url.split("//")[1]}
        for family in text_string_to_metric_families(body.decode()):
            for sample in family.samples:
                if sample.name in ("xgpu_memory_total", "xgpu_core_percentage_total"):
                    labels = {**sample.labels, **target}
                    key = tuple(sorted(labels.items()))
                    labels_of[key] = labels
                    allotted.setdefault(key, {})[sample.name] = sample.value
    times = [end - HISTORY_S + i * STEP_S for i in range(HISTORY_S // STEP_S + 1)]
    spike = times[len(times) // 2]
    lines = []
    for metric in HISTORY_METRICS:
        lines.append(f"# TYPE {metric} gauge")
        for key, values in sorted(allotted.items()):
            text = ",".join(f'{k}="{v}"' for k, v in sorted(labels_of[key].items()))
            for t in times:
                value = _value(metric, values, SPIKE if t == spike else USE)
                if value is not None:
                    lines.append(f"{metric}{{{text}}} {value} {t:.3f}")
    return lines


def _value(metric: str, allotted: dict[str, float], share: float) -> float | None:
    memory, core = allotted["xgpu_memory_total"], allotted.get("xgpu_core_percentage_total")
    if metric == "xgpu_memory_total":
        return memory
    if metric == "xgpu_memory_used":
        return float(int(memory * share) // MIB * MIB)
    if metric == "xgpu_core_percentage_total":
        return core  # memory-isolation vGPUs have none
    return round((core or 20.0) * share, 1)


@dataclass
class Live:
    exporters: list[Exporter]
    prometheus: Prometheus
    kubeconfig: Path
    history_end: float


def _count(result: list[dict[str, Any]]) -> int:
    return int(float(result[0]["value"][1])) if result else 0


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    home = tmp_path_factory.mktemp("report-live")
    with ExitStack() as stack:
        exporters = simulated_exporters(
            stack, LIVE_DEMO, (n.name for n in DEMO_CLUSTER.nodes), home
        )
        end = time.time() - GAP_S
        write_backfill(history_lines(exporters, end), home / "data")
        prometheus = start_prometheus(home, scrape_config({e.url: e.node for e in exporters}))
        stack.callback(prometheus.stop)
        _, kubeconfig = stack.enter_context(kubernetes_holding(DEMO_CLUSTER, home))
        # a MIG pod holds instances, no vGPU: the exporter serves it no vGPU series
        vgpus = sum(
            len(p.placement.cards) for p in DEMO_CLUSTER.running if p.placement and not is_mig(p)
        )
        # live samples in: the node series (never backfilled) and fresh vGPU samples
        nodes = len(DEMO_CLUSTER.nodes)
        prometheus.wait_for("count(xgpu_node_info)", lambda r: _count(r) == nodes)
        fresh = "count(time() - timestamp(xgpu_memory_used) < 30)"
        prometheus.wait_for(fresh, lambda r: _count(r) == vgpus)
        yield Live(exporters, prometheus, kubeconfig, end)


def run_report(
    live: Live, out: Path, capsys: pytest.CaptureFixture[str], *source: str
) -> tuple[dict[str, Any], str]:
    source = source or ("--prometheus", live.prometheus.url)
    args = ["report", *source, "--kubeconfig", str(live.kubeconfig)]
    history = ["--history", "2h", "--history-step", "1m"]
    # two hours of history: less than right-sizing's default 24 h, so it is asked for less
    enough = ["--rightsizing.min-history", "1h", "--rightsizing.min-samples", "60"]
    code = main([*args, *history, *enough, "--output-dir", str(out)])
    err = capsys.readouterr().err
    assert code == 0, err
    data: dict[str, Any] = json.loads((out / "report.json").read_text())
    return data, err


def test_prometheus_holds_the_backfill_and_the_live_series(live: Live) -> None:
    old = live.history_end - 60  # only the backfill has points this old
    result = live.prometheus.query(f'xgpu_memory_used{{pod="train-a"}} @ {old:.3f}')
    ((sample,),) = [result]
    assert sample["metric"]["node"] == "cce-node-1"
    assert float(sample["value"][1]) == 12288 * USE * MIB // MIB * MIB
    points = live.prometheus.query('count_over_time(xgpu_memory_used{pod="train-a"}[3h])')
    assert _count(points) > HISTORY_S // STEP_S + 1  # history and live samples, one series


def test_report_from_prometheus_and_kubernetes(
    live: Live, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, err = run_report(live, tmp_path, capsys)
    assert "warning" not in err
    assert "stale" not in err
    assert data["source"].startswith(f"prometheus {live.prometheus.url}")
    assert data["stale"] == []
    summary = data["diagnosis"]["summary"]
    assert (summary["pending"], summary["fragmentation"], summary["invalid"]) == (9, 1, 1)
    # Kubernetes gives the nodes' cpu, labels and taints and the pods' requests and
    # tolerations: the demo's node-resources pod and its selector-bound pod come out as
    # from the scenario itself.
    causes = {p["pod"]: (p["cause"], p["placement"]) for p in data["diagnosis"]["pods"]}
    assert causes["vision/train-xl"] == ("node-resources", None)
    assert causes["research/sweep-1"] == (
        "schedulable",
        {"node": "research-node-1", "cards": [0]},
    )
    (rescue,) = data["plan"]["plans"]
    assert (rescue["rescues"], rescue["evict"]) == (["web/infer-2"], ["ml/train-a"])


def test_rightsizing_reads_the_backfilled_history(
    live: Live, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, _ = run_report(live, tmp_path, capsys)
    sizing = data["rightsizing"]
    assert sizing["window"]["seconds"] > HISTORY_S - 2 * STEP_S
    workloads = {(w["workload"], w["container"]): w for w in sizing["workloads"]}
    # Kubernetes names the owners; every running vGPU has its workload
    owners = {p.owner for p in DEMO_CLUSTER.running}
    assert {w for w, _ in workloads} == owners
    train = workloads["Job/ml/train-a", "train-a"]
    assert train["vgpus"] == 1
    assert train["samples"] > HISTORY_S // STEP_S - 5
    memory = train["memory_mib"]
    assert memory["allotted"] == 12288
    assert memory["used_p95"] == pytest.approx(12288 * USE, abs=1)  # the history's level
    assert memory["used_peak"] >= 12288 * SPIKE - 1  # at least the spike
    assert memory["recommended"] >= memory["used_peak"]
    # the evidence it stands on: the flags' thresholds were met, the peak is the one above
    assert (train["advised"], train["not_advised"]) == (True, None)
    evidence = train["evidence"]
    assert evidence["samples"] > HISTORY_S // STEP_S - 5
    assert evidence["window_seconds"] >= 3600
    assert evidence["memory_mib"]["percentile"] == 100
    assert evidence["memory_mib"]["peak"] == memory["used_peak"]
    llm = workloads["StatefulSet/infer/llm", "llm"]  # containers are named by workload
    assert (llm["vgpus"], llm["mode"]) == (2, "memory+core")
    assert llm["memory_mib"]["used_p95"] == pytest.approx(28672 * USE, abs=1)
    fit = sizing["pending_fit"]
    assert (fit["pending"], fit["schedulable_now"]) == (9, 4)


def test_usage_series_and_chart(
    live: Live, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, _ = run_report(live, tmp_path, capsys)
    usage = data["usage"]
    stamps = usage["timestamps"]
    assert len(stamps) > HISTORY_S // STEP_S - 5
    assert stamps[-1] - stamps[0] > HISTORY_S - 2 * STEP_S
    running = sum(p.request.memory_mib for p in DEMO_CLUSTER.running) * MIB
    assert usage["allotted_bytes"][0] == running  # the backfilled start
    assert usage["allotted_bytes"][-1] == running  # the live end
    assert math.isclose(usage["used_bytes"][0], running * USE, rel_tol=1e-3)
    page = (tmp_path / "report.html").read_text()
    assert 'class="chart usage-chart"' in page
    assert "Job/ml/train-a" in page  # the right-sizing table
    assert "No history" not in page


def test_report_from_the_exporters_directly(
    live: Live, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    urls = ",".join(e.url for e in live.exporters)
    data, err = run_report(live, tmp_path, capsys, "--exporters", urls)
    assert "warning" not in err
    assert data["source"].startswith("exporters http://127.0.0.1:")
    assert data["diagnosis"]["summary"]["pending"] == 9
    (rescue,) = data["plan"]["plans"]
    assert rescue["rescues"] == ["web/infer-2"]
    assert (data["rightsizing"], data["usage"]) == (None, None)  # no history without Prometheus
    assert "No history" in (tmp_path / "report.html").read_text()


def test_a_stopped_exporter_is_reported_stale(
    live: Live, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Runs last: it stops the v100 node's exporter for good."""
    (v100,) = [e for e in live.exporters if e.node == "v100-node-1"]
    v100.stop()
    live.prometheus.wait_for('xgpu_node_info{node="v100-node-1"}', lambda r: not r)
    data, err = run_report(live, tmp_path, capsys)
    assert "xgpu-advisor: stale, left out: node v100-node-1: xgpu_node_info series ended" in err
    (stale,) = data["stale"]
    assert (stale["subject"], stale["metric"], stale["ended"]) == (
        "node v100-node-1",
        "xgpu_node_info",
        True,
    )
    assert "v100-node-1" not in {n["name"] for n in data["view"]["nodes"]}
    assert "Stale series LEFT OUT" in (tmp_path / "report.html").read_text()
