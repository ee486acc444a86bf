"""`xgpu-exporter --simulate` as a real process, scraped by a real Prometheus."""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.realparts import (
    Exporter,
    Prometheus,
    Sample,
    exporter_command,
    free_port,
    promtool_check_metrics,
)

pytestmark = pytest.mark.realservices  # xgpu-exporter processes and Prometheus

DATA = Path(__file__).resolve().parents[1] / "data"
GIB = 1024**3
UUID = {
    i: f"GPU-{str(i) * 8}-{str(i) * 4}-{str(i) * 4}-{str(i) * 4}-{str(i) * 12}" for i in range(4)
}
SCENARIO = DATA / "exporter-node.yaml"


@pytest.fixture(scope="module")
def exporter(start_exporter: Callable[..., Exporter]) -> Exporter:
    return start_exporter(
        ["--simulate", str(SCENARIO), "--node", "gpu-node-1", "--simulate.seed", "3"]
    )


@pytest.fixture(scope="module")
def prometheus(exporter: Exporter, start_prometheus: Callable[..., Prometheus]) -> Prometheus:
    prometheus = start_prometheus({exporter.url: "gpu-node-1"})
    prometheus.wait_for("xgpu_memory_total", lambda r: len(r) == 3)
    return prometheus


def by(result: list[Sample], *keys: str) -> dict[tuple[str, ...], float]:
    return {tuple(s["metric"].get(k, "") for k in keys): float(s["value"][1]) for s in result}


def test_prometheus_stores_the_vgpu_series_with_their_labels(prometheus: Prometheus) -> None:
    result = prometheus.query("xgpu_memory_total")
    labels = {frozenset(s["metric"]) for s in result}
    assert labels == {
        frozenset(
            {
                "__name__",
                "namespace",
                "pod",
                "container",
                "gpu_index",
                "gpu_uuid",
                "node",
                "instance",
                "job",
            }
        )
    }
    assert by(result, "namespace", "pod", "container", "gpu_index", "gpu_uuid") == {
        ("team-a", "infer-0", "server", "0", UUID[0]): 4 * GIB,
        ("team-a", "infer-0", "server", "1", UUID[1]): 4 * GIB,
        ("team-b", "train-1", "train-1", "0", UUID[0]): 2 * GIB,
    }
    assert {s["metric"]["node"] for s in result} == {"gpu-node-1"}  # added by the scrape config
    cores = by(prometheus.query("xgpu_core_percentage_total"), "pod", "gpu_index")
    assert cores == {("infer-0", "0"): 20, ("infer-0", "1"): 20, ("train-1", "0"): 30}


def test_usage_stays_inside_allotments(prometheus: Prometheus) -> None:
    used = prometheus.wait_for("xgpu_memory_used", lambda r: len(r) == 3)
    assert all(float(s["value"][1]) > 0 for s in used)
    # every vGPU: used <= allotted, for memory and for core (all mode 1 here)
    assert len(prometheus.query("xgpu_memory_used <= xgpu_memory_total")) == 3
    assert len(prometheus.query("xgpu_core_percentage_used <= xgpu_core_percentage_total")) == 3


def test_card_series(prometheus: Prometheus) -> None:
    policy = by(
        prometheus.wait_for("gpu_schedule_policy", lambda r: len(r) == 4), "gpu_index", "gpu_uuid"
    )
    assert policy == {("0", UUID[0]): 1, ("1", UUID[1]): 1, ("2", UUID[2]): 2, ("3", UUID[3]): 2}
    health = by(prometheus.query("xgpu_device_health"), "gpu_index")
    assert health == {("0",): 0, ("1",): 0, ("2",): 0, ("3",): 1}
    info = by(prometheus.query("xgpu_card_info"), "gpu_index", "model", "driver_version")
    assert info[("0", "Tesla T4", "simulated")] == 1
    allotted = by(prometheus.query("xgpu_card_memory_allotted_bytes"), "gpu_index")
    assert allotted == {("0",): 6 * GIB, ("1",): 4 * GIB, ("2",): 0, ("3",): 0}
    assert by(prometheus.query("xgpu_card_core_allotted_ratio"), "gpu_index")[("0",)] == 0.5
    assert by(prometheus.query("xgpu_card_vgpus"), "gpu_index")[("0",)] == 2
    assert by(prometheus.query("xgpu_card_memory_total_bytes"), "gpu_index")[("2",)] == 16 * GIB
    assert by(prometheus.query("xgpu_node_info"), "node") == {("gpu-node-1",): 1}
    success = by(prometheus.query("xgpu_exporter_collector_success"), "collector")
    assert success == {("simulate",): 1, ("scenario",): 1, ("attribution",): 1}
    assert by(prometheus.query("up"), "job") == {("xgpu-exporter",): 1}


def test_content_negotiation(exporter: Exporter) -> None:
    _, headers, body = exporter.get(
        "/metrics", {"Accept": "application/openmetrics-text; version=1.0.0"}
    )
    assert headers["Content-Type"].startswith("application/openmetrics-text")
    assert body.decode().endswith("# EOF\n")
    _, headers, body = exporter.get("/metrics", {"Accept": "text/plain"})
    assert headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    assert b"# EOF" not in body
    assert b"# TYPE xgpu_memory_total gauge" in body


@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_promtool_reports_only_the_cce_total_gauges(exporter: Exporter) -> None:
    _, findings = promtool_check_metrics(exporter.metrics())
    assert findings == [
        'xgpu_core_percentage_total non-counter metrics should not have "_total" suffix',
        'xgpu_memory_total non-counter metrics should not have "_total" suffix',
    ]


async def test_concurrent_scrapes_get_one_collections_bytes(exporter: Exporter) -> None:
    async with aiohttp.ClientSession() as http:

        async def scrape() -> tuple[str, bytes]:
            async with http.get(exporter.url + "/metrics") as response:
                return response.headers["X-Xgpu-Collection"], await response.read()

        answers = await asyncio.gather(*(scrape() for _ in range(50)))
    # freshness 1 s: a burst shares at most the collection in the window and its successor
    assert len({seq for seq, _ in answers}) <= 2
    by_seq: dict[str, set[bytes]] = {}
    for seq, body in answers:
        by_seq.setdefault(seq, set()).add(body)
    assert all(len(bodies) == 1 for bodies in by_seq.values())


def test_scenario_without_nvml_labels_allotments_by_index(
    start_exporter: Callable[..., Exporter],
) -> None:
    exporter = start_exporter(
        ["--scenario", str(SCENARIO), "--node", "gpu-node-1", "--no-collector.nvml"]
    )
    text = exporter.metrics()
    assert (
        'xgpu_memory_total{container="server",gpu_index="1",gpu_uuid="",namespace="team-a",'
        'pod="infer-0"} 4.294967296e+09' in text
    )
    assert 'gpu_schedule_policy{gpu_index="0",gpu_uuid=""} 1.0' in text
    # nothing NVML would say, and no usage: absent, not zero
    present = {s.name for f in text_string_to_metric_families(text) for s in f.samples}
    absent = {
        "xgpu_memory_used",
        "xgpu_core_percentage_used",
        "xgpu_device_health",
        "xgpu_card_info",
        "xgpu_card_memory_total_bytes",
        "xgpu_card_unattributed_memory_bytes",
    }
    assert not absent & present
    assert {"xgpu_card_memory_allotted_bytes", "xgpu_card_vgpus"} <= present
    assert 'xgpu_exporter_collector_success{collector="scenario"} 1.0' in text
    assert 'collector="nvml"' not in text


def test_kubernetes_api_down_keeps_serving(
    start_exporter: Callable[..., Exporter], tmp_path: Path
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {"name": "c", "cluster": {"server": f"http://127.0.0.1:{free_port()}"}}
                ],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    exporter = start_exporter(
        ["--node", "gpu-node-1", "--no-collector.nvml", "--kubeconfig", str(kubeconfig)]
    )
    text = exporter.metrics()
    assert 'xgpu_exporter_collector_success{collector="kubernetes"} 0.0' in text
    assert 'xgpu_node_info{node="gpu-node-1"} 1.0' in text


def test_sigterm_stops_cleanly_and_bad_input_exits_2(
    start_exporter: Callable[..., Exporter], tmp_path: Path
) -> None:
    exporter = start_exporter(["--simulate", str(SCENARIO), "--node", "gpu-node-1"])
    assert exporter.stop() == 0
    assert "msg=stopped" in exporter.log()
    bad = tmp_path / "bad.yaml"
    bad.write_text("nodes:\n  - name: n\n    cards: [{index: 0}]\n")
    result = subprocess.run(
        [*exporter_command(), "--simulate", str(bad), "--node", "n"],
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2
    assert str(bad) in result.stderr.decode()
    assert "memory_mib" in result.stderr.decode()
    result = subprocess.run(
        [*exporter_command(), "--simulate", str(SCENARIO), "--node", "no-such-node"],
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2
    assert "no-such-node" in result.stderr.decode()
