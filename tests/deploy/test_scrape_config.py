"""Scrape configs: promtool-valid, and a real Prometheus labels the series as the rules expect.

Debian's Prometheus has no kubernetes_sd and there is no Prometheus Operator here, so
the Kubernetes side is replaced by static targets carrying the labels it would supply:
the `__meta_kubernetes_*` labels for the plain config, and the target labels the
Operator sets before a monitor's own relabelings (tests/deploy/live.py). Everything after
that - relabeling, honor_labels, the recording rules - is the real thing, scraping a
loopback exporter. The Pushgateway jobs are checked live in test_pushgateway.py.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.live import operator_job
from tests.realparts import Prometheus, at_least, running_prometheus

pytestmark = pytest.mark.realservices  # promtool, Prometheus, Pushgateway, exporters

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
PLAIN = DEPLOY / "prometheus" / "scrape-config.yaml"
STATIC = DEPLOY / "prometheus" / "scrape-config.static.yaml"
RULES = DEPLOY / "rules" / "xgpu.rules.yaml"
NO_KUBERNETES_SD = "field kubernetes_sd_configs not found"

# What an exporter on a node with one shared card would publish (docs/design.md §6).
CARD = 'gpu_index="0",gpu_uuid="GPU-a"'
TRAIN = f'namespace="team-a",pod="train-0",container="main",{CARD}'
INFER = f'namespace="team-b",pod="infer-0",container="srv",{CARD}'
EXPOSITION = f"""\
# TYPE xgpu_card_memory_total_bytes gauge
xgpu_card_memory_total_bytes{{{CARD}}} 16000000000
# TYPE xgpu_card_memory_allotted_bytes gauge
xgpu_card_memory_allotted_bytes{{{CARD}}} 6000000000
# TYPE xgpu_card_vgpus gauge
xgpu_card_vgpus{{{CARD}}} 2
# TYPE xgpu_memory_total gauge
xgpu_memory_total{{{TRAIN}}} 4000000000
xgpu_memory_total{{{INFER}}} 2000000000
# TYPE xgpu_memory_used gauge
xgpu_memory_used{{{TRAIN}}} 1000000000
xgpu_memory_used{{{INFER}}} 2000000000
"""
CARD_LABELS = {"__name__", "gpu_index", "gpu_uuid", "node", "job", "instance"}
WORKLOAD_LABELS = CARD_LABELS | {"namespace", "pod", "container"}

# Target labels as each discovery path would hand them to relabeling.
EXPORTER_POD_META = {
    "__meta_kubernetes_namespace": "xgpu-exporter",
    "__meta_kubernetes_pod_name": "xgpu-exporter-x2k9f",
    "__meta_kubernetes_pod_label_app_kubernetes_io_name": "xgpu-exporter",
    "__meta_kubernetes_pod_container_name": "exporter",
    "__meta_kubernetes_pod_container_port_name": "metrics",
    "__meta_kubernetes_pod_phase": "Running",
}
# One node per path, so that each path's series and recorded sums stay apart.
NODES = {
    "static": "local",
    "plain": "gpu-node-1",
    "servicemonitor": "gpu-node-2",
    "podmonitor": "gpu-node-3",
}
DROPPED_NODES = ("gpu-node-8", "gpu-node-9")


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, check=False, timeout=60)


def load_job(path: Path, name: str = "xgpu-exporter") -> dict[str, Any]:
    jobs = yaml.safe_load(path.read_text())["scrape_configs"]
    (job,) = [job for job in jobs if job["job_name"] == name]
    assert isinstance(job, dict)
    return job


def plain_job_on_static_targets(address: str) -> dict[str, Any]:
    """The plain job with kubernetes_sd swapped for targets with the labels it would add."""
    job = load_job(PLAIN)
    assert job.pop("kubernetes_sd_configs") == [
        {"role": "pod", "namespaces": {"names": ["xgpu-exporter"]}}
    ]
    exporter = {**EXPORTER_POD_META, "__meta_kubernetes_pod_node_name": NODES["plain"]}
    other_app = {
        **exporter,
        "__meta_kubernetes_pod_label_app_kubernetes_io_name": "something-else",
        "__meta_kubernetes_pod_node_name": DROPPED_NODES[0],
    }
    pending = {
        **exporter,
        "__meta_kubernetes_pod_phase": "Pending",
        "__meta_kubernetes_pod_node_name": DROPPED_NODES[1],
    }
    job["static_configs"] = [
        {"targets": [address], "labels": labels} for labels in (exporter, other_app, pending)
    ]
    return job


def monitor_job(monitor_file: str, job_label: str, node: str, address: str) -> dict[str, Any]:
    """The Operator's job for an exporter monitor, its target on `node`."""
    return operator_job(monitor_file, address, job_label, {"__meta_kubernetes_pod_node_name": node})


class ExporterHandler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = EXPOSITION.encode()
        self.send_response(200 if self.path == "/metrics" else 404)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def exporter_address() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), ExporterHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.realservices  # promtool
def test_static_variant_passes_promtool(promtool: str) -> None:
    result = run(promtool, "check", "config", str(STATIC))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 1 rule files found" in result.stdout


@pytest.mark.realservices  # promtool
def test_plain_config_passes_promtool(promtool: str, tmp_path: Path) -> None:
    result = run(promtool, "check", "config", str(PLAIN))
    if result.returncode != 0 and NO_KUBERNETES_SD in result.stderr + result.stdout:
        # Debian's build: check everything but the SD block, swapped for static targets.
        jobs = yaml.safe_load(PLAIN.read_text())["scrape_configs"]
        swapped_job = plain_job_on_static_targets("127.0.0.1:19400")
        jobs = [swapped_job if j["job_name"] == "xgpu-exporter" else j for j in jobs]
        swapped = tmp_path / "plain.yaml"
        swapped.write_text(yaml.safe_dump({"scrape_configs": jobs}))
        result = run(promtool, "check", "config", str(swapped))
    assert result.returncode == 0, result.stdout + result.stderr


def test_scrape_jobs_honor_exporter_labels() -> None:
    for path in (PLAIN, STATIC):
        names = [job["job_name"] for job in yaml.safe_load(path.read_text())["scrape_configs"]]
        assert names == ["xgpu-exporter", "xgpu-pushgateway"], path
        job = load_job(path)
        assert job["job_name"] == "xgpu-exporter"  # XGPUExporterDown matches on it
        assert job["honor_labels"] is True


def test_pushgateway_jobs_honor_the_pushed_labels() -> None:
    """Without honor_labels the advisor's job="xgpu-advisor" would become exported_job."""
    for path in (PLAIN, STATIC):
        job = load_job(path, "xgpu-pushgateway")
        assert job["honor_labels"] is True, path
        assert "relabel_configs" not in job, path
        assert not any("xgpu-exporter" in str(v) for v in job.values()), path
    (target,) = load_job(PLAIN, "xgpu-pushgateway")["static_configs"][0]["targets"]
    # The Service in deploy/base, by its cluster DNS name.
    service = yaml.safe_load((DEPLOY / "base" / "pushgateway-service.yaml").read_text())
    name, namespace = service["metadata"]["name"], service["metadata"]["namespace"]
    assert target == f"{name}.{namespace}.svc:{service['spec']['ports'][0]['port']}"


@pytest.fixture(scope="module")
def prometheus(
    exporter_address: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Prometheus]:
    """A real Prometheus running our rules and all four scrape paths against the exporter."""
    directory = tmp_path_factory.mktemp("prometheus")
    static = yaml.safe_load(STATIC.read_text())
    static_job = load_job(STATIC)
    static_job["static_configs"][0]["targets"] = [exporter_address]
    assert static_job["static_configs"][0]["labels"] == {"node": NODES["static"]}
    plain_job = plain_job_on_static_targets(exporter_address)
    plain_job["job_name"] = "emulated-kubernetes-sd"
    config = {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
        # The static variant's rule file, resolved from the variant's own folder.
        "rule_files": [str((STATIC.parent / static["rule_files"][0]).resolve())],
        "scrape_configs": [
            static_job,
            {**plain_job, "scrape_interval": "1s", "scrape_timeout": "1s"},
            monitor_job(
                "exporter-servicemonitor.yaml",
                "xgpu-exporter",
                NODES["servicemonitor"],
                exporter_address,
            ),
            monitor_job(
                "exporter-podmonitor.yaml",
                "xgpu-exporter/xgpu-exporter",
                NODES["podmonitor"],
                exporter_address,
            ),
        ],
    }
    with running_prometheus(directory, config) as server:
        yield server


@pytest.mark.realservices
def test_every_path_adds_node_and_keeps_workload_labels(prometheus: Prometheus) -> None:
    workloads = prometheus.wait_for("xgpu_memory_used", at_least(2 * len(NODES)))
    assert {series["metric"]["node"] for series in workloads} == set(NODES.values())
    for series in workloads:
        labels = series["metric"]
        assert set(labels) == WORKLOAD_LABELS, labels  # no exported_* and no extras
        assert (labels["namespace"], labels["pod"]) in {
            ("team-a", "train-0"),
            ("team-b", "infer-0"),
        }


@pytest.mark.realservices
def test_series_without_workload_labels_get_none_from_the_target(prometheus: Prometheus) -> None:
    cards = prometheus.wait_for("xgpu_card_vgpus", at_least(len(NODES)))
    assert {series["metric"]["node"] for series in cards} == set(NODES.values())
    for series in cards:
        assert set(series["metric"]) == CARD_LABELS, series["metric"]


@pytest.mark.realservices
def test_job_names_match_the_exporter_down_alert(prometheus: Prometheus) -> None:
    up = prometheus.wait_for('up{job=~".*xgpu-exporter.*"}', at_least(3))
    assert {series["metric"]["job"] for series in up} == {
        "xgpu-exporter",  # static variant and ServiceMonitor
        "xgpu-exporter/xgpu-exporter",  # PodMonitor: <namespace>/<name>
    }
    assert all(series["value"][1] == "1" for series in up)


@pytest.mark.realservices
def test_plain_config_drops_other_pods_and_pods_not_running(prometheus: Prometheus) -> None:
    prometheus.wait_for('xgpu_card_vgpus{node="gpu-node-1"}', at_least(1))
    dropped = "|".join(DROPPED_NODES)
    assert prometheus.query(f'{{__name__=~".+", node=~"{dropped}"}}') == []
    assert prometheus.query('up{job="emulated-kubernetes-sd"}')[0]["metric"]["node"] == "gpu-node-1"


@pytest.mark.realservices
def test_recording_rules_run_on_the_scraped_series(prometheus: Prometheus) -> None:
    allotted = prometheus.wait_for("node:xgpu_memory_allotted_bytes:sum", at_least(len(NODES)))
    by_node = {s["metric"]["node"]: float(s["value"][1]) for s in allotted}
    assert by_node == dict.fromkeys(NODES.values(), 6e9)
    usage = prometheus.wait_for("node_gpu:xgpu_memory_allotted_usage:ratio", at_least(len(NODES)))
    for series in usage:
        assert series["metric"]["gpu_index"] == "0"
        assert float(series["value"][1]) == pytest.approx(0.5)  # 3e9 used of 6e9
