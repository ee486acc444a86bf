"""Coexistence: dcgm-exporter's and HAMi vGPU monitor's series, scraped by a real Prometheus
with docs/coexistence.md's scrape jobs, read under this project's names through
deploy/rules/coexistence.rules.yaml, and xgpu.rules.yaml's rules working on them.

The two exporters are stood in by an HTTP server serving their expositions in the shapes
their sources write (dcgm-exporter 4.5.3-4.8.2; HAMi v2.8.3, legacy names only, and
v2.10.0 with the Helm chart's --legacy-metrics). As in test_scrape_config.py, Debian's
Prometheus has no kubernetes_sd: the jobs' discovery is swapped for static targets
carrying the `__meta_kubernetes_*` labels it would supply; the relabeling is the real thing.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.realparts import Prometheus, Sample, running_prometheus

pytestmark = pytest.mark.realservices

REPO = Path(__file__).resolve().parents[2]
RULES = REPO / "deploy" / "rules"
DOC = REPO / "docs" / "coexistence.md"
GIB = 1 << 30
MIB = 1 << 20

U_DCGM = "GPU-5fd4e4b0-3c1e-4a57-9f0e-1c2d3e4f5a6b"  # gpu-node-1: dcgm-exporter only
U_OLD = "GPU-1b2c3d4e-5f60-4718-92a3-b4c5d6e7f809"  # gpu-node-3: dcgm-exporter + HAMi v2.8
U_NEW = "GPU-9e8d7c6b-5a49-4837-a625-14f3e2d1c0b9"  # gpu-node-4: HAMi v2.10 only


def dcgm_card(gpu: str, uuid: str, host: str, pod: str = "") -> str:
    labels = (
        f'gpu="{gpu}",UUID="{uuid}",pci_bus_id="00000000:3B:00.0",device="nvidia{gpu}",'
        f'modelName="Tesla V100-SXM2-32GB",Hostname="{host}",DCGM_FI_DRIVER_VERSION="550.54.15"'
    )
    return labels + (f',container="main",namespace="ml",pod="{pod}"' if pod else "")


# One dcgm-exporter per node; the card of gpu-node-3 repeated for each of its two pods.
DCGM = {
    "gpu-node-1": f"""\
# HELP DCGM_FI_DEV_FB_USED Framebuffer memory used (in MiB).
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{{{dcgm_card("0", U_DCGM, "gpu-node-1")}}} 2048
# TYPE DCGM_FI_DEV_FB_FREE gauge
DCGM_FI_DEV_FB_FREE{{{dcgm_card("0", U_DCGM, "gpu-node-1")}}} 30166
# TYPE DCGM_FI_DEV_FB_RESERVED gauge
DCGM_FI_DEV_FB_RESERVED{{{dcgm_card("0", U_DCGM, "gpu-node-1")}}} 286
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{{{dcgm_card("0", U_DCGM, "gpu-node-1")}}} 12
""",
    "gpu-node-3": f"""\
# TYPE DCGM_FI_DEV_FB_USED gauge
DCGM_FI_DEV_FB_USED{{{dcgm_card("1", U_OLD, "gpu-node-3", "bert-0")}}} 5200
DCGM_FI_DEV_FB_USED{{{dcgm_card("1", U_OLD, "gpu-node-3", "bert-1")}}} 5200
# TYPE DCGM_FI_DEV_FB_FREE gauge
DCGM_FI_DEV_FB_FREE{{{dcgm_card("1", U_OLD, "gpu-node-3", "bert-0")}}} 27014
DCGM_FI_DEV_FB_FREE{{{dcgm_card("1", U_OLD, "gpu-node-3", "bert-1")}}} 27014
# TYPE DCGM_FI_DEV_FB_RESERVED gauge
DCGM_FI_DEV_FB_RESERVED{{{dcgm_card("1", U_OLD, "gpu-node-3", "bert-0")}}} 286
DCGM_FI_DEV_FB_RESERVED{{{dcgm_card("1", U_OLD, "gpu-node-3", "bert-1")}}} 286
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{{{dcgm_card("1", U_OLD, "gpu-node-3", "bert-0")}}} 61
DCGM_FI_DEV_GPU_UTIL{{{dcgm_card("1", U_OLD, "gpu-node-3", "bert-1")}}} 61
""",
}


def hami_old(pod: str, uuid: str) -> str:
    return f'podnamespace="ml",podname="{pod}",ctrname="main",vdeviceid="0",deviceuuid="{uuid}"'


V100 = 'devicetype="NVIDIA-Tesla V100-SXM2-32GB"'
HOST_OLD = f'deviceidx="1",deviceuuid="{U_OLD}",{V100}'
HOST_NEW = f'device_index="0",device_uuid="{U_NEW}",device_type="NVIDIA-A100-SXM4-40GB"'
HOST_NEW_OLD = f'nodeid="gpu-node-4",deviceidx="0",deviceuuid="{U_NEW}",devicetype="NVIDIA-A100"'
NEW = f'namespace="infer",pod="llm-0",container="srv",vdevice_index="0",device_uuid="{U_NEW}"'
OLD_ON_NEW = (
    f'podnamespace="infer",podname="llm-0",ctrname="srv",vdeviceid="0",deviceuuid="{U_NEW}"'
)
HAMI = {
    # v2.8.3: legacy names only; the host series without a node label
    "gpu-node-3": f"""\
# HELP HostGPUMemoryUsage GPU device memory usage
# TYPE HostGPUMemoryUsage gauge
HostGPUMemoryUsage{{{HOST_OLD}}} 5.4525952e+09
# TYPE HostCoreUtilization gauge
HostCoreUtilization{{{HOST_OLD}}} 60
# TYPE vGPU_device_memory_limit_in_bytes gauge
vGPU_device_memory_limit_in_bytes{{{hami_old("bert-0", U_OLD)}}} 4.294967296e+09
vGPU_device_memory_limit_in_bytes{{{hami_old("bert-1", U_OLD)}}} 2.147483648e+09
# TYPE vGPU_device_memory_usage_in_bytes gauge
vGPU_device_memory_usage_in_bytes{{{hami_old("bert-0", U_OLD)}}} 3.221225472e+09
vGPU_device_memory_usage_in_bytes{{{hami_old("bert-1", U_OLD)}}} 1.073741824e+09
# TYPE Device_utilization_desc_of_container gauge
Device_utilization_desc_of_container{{{hami_old("bert-0", U_OLD)}}} 35
Device_utilization_desc_of_container{{{hami_old("bert-1", U_OLD)}}} 20
# TYPE Device_memory_desc_of_container counter
Device_memory_desc_of_container{{{hami_old("bert-0", U_OLD)}}} 3.221225472e+09
""",
    # v2.10.0 with --legacy-metrics: both namings of the same values
    "gpu-node-4": f"""\
# TYPE hami_host_gpu_memory_used_bytes gauge
hami_host_gpu_memory_used_bytes{{node="gpu-node-4",{HOST_NEW}}} 1.7179869184e+10
# TYPE HostGPUMemoryUsage gauge
HostGPUMemoryUsage{{{HOST_NEW_OLD}}} 1.7179869184e+10
# TYPE hami_vgpu_memory_limit_bytes gauge
hami_vgpu_memory_limit_bytes{{{NEW}}} 2.147483648e+10
# TYPE vGPU_device_memory_limit_in_bytes gauge
vGPU_device_memory_limit_in_bytes{{{OLD_ON_NEW}}} 2.147483648e+10
# TYPE hami_vgpu_memory_used_bytes gauge
hami_vgpu_memory_used_bytes{{{NEW}}} 1.6106127360e+10
# TYPE vGPU_device_memory_usage_in_bytes gauge
vGPU_device_memory_usage_in_bytes{{{OLD_ON_NEW}}} 1.6106127360e+10
""",
}
PAGES = {
    **{f"/dcgm/{node}": text for node, text in DCGM.items()},
    **{f"/hami/{node}": text for node, text in HAMI.items()},
}


class StandIns(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = PAGES.get(self.path, "").encode()
        self.send_response(200 if self.path in PAGES else 404)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def documented_jobs() -> dict[str, dict[str, Any]]:
    """The scrape jobs of docs/coexistence.md's YAML block, by name."""
    blocks = re.findall(r"```yaml\n(.*?)```", DOC.read_text(), re.DOTALL)
    (block,) = [b for b in blocks if "job_name: hami-vgpu-monitor" in b]
    jobs = yaml.safe_load(block)["scrape_configs"]
    return {job["job_name"]: job for job in jobs}


def pod_target(address: str, path: str, node: str, meta: dict[str, str]) -> dict[str, Any]:
    labels = {"__metrics_path__": path, "__meta_kubernetes_pod_node_name": node, **meta}
    return {"targets": [address], "labels": labels}


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), StandIns)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    address = f"127.0.0.1:{server.server_address[1]}"
    jobs = documented_jobs()
    dcgm_meta = {
        "__meta_kubernetes_pod_label_app_kubernetes_io_name": "dcgm-exporter",
        "__meta_kubernetes_pod_container_port_name": "metrics",
    }
    hami_meta = {
        "__meta_kubernetes_pod_label_app_kubernetes_io_component": "hami-device-plugin",
        "__meta_kubernetes_pod_container_port_number": "9394",
    }
    elsewhere = {  # another pod on the node: the documented jobs must drop it
        "__meta_kubernetes_pod_label_app_kubernetes_io_name": "node-exporter",
        "__meta_kubernetes_pod_container_port_name": "metrics",
    }
    for name, meta, nodes in (
        ("dcgm-exporter", dcgm_meta, DCGM),
        ("hami-vgpu-monitor", hami_meta, HAMI),
    ):
        job = jobs[name]
        assert job.pop("kubernetes_sd_configs") == [{"role": "pod"}]
        kind = name.split("-")[0]
        job["static_configs"] = [
            pod_target(address, f"/{kind}/{node}", node, meta) for node in nodes
        ] + [pod_target(address, "/nowhere", "gpu-node-9", elsewhere)]
    config = {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(RULES / "coexistence.rules.yaml"), str(RULES / "xgpu.rules.yaml")],
        "scrape_configs": list(jobs.values()),
    }
    try:
        with running_prometheus(tmp_path_factory.mktemp("coexistence"), config) as running:
            yield running
    finally:
        server.shutdown()
        server.server_close()


def values(result: list[Sample], *keys: str) -> dict[tuple[str, ...], float]:
    return {tuple(s["metric"].get(k, "") for k in keys): float(s["value"][1]) for s in result}


def settles(
    prometheus: Prometheus, expr: str, keys: tuple[str, ...], expected: Mapping[Any, float]
) -> None:
    """`expr` comes to read `expected` (series told apart by `keys`), or the test fails
    showing the last answer. Until every target has been scraped once, a rule may record
    what one source alone says (HAMi's copy of a card dcgm-exporter has not reported yet);
    the next evaluation replaces it."""
    prometheus.wait_for(expr, lambda answer: values(answer, *keys) == pytest.approx(expected))


def test_the_documented_jobs_keep_only_the_exporters_and_add_node(prometheus: Prometheus) -> None:
    expected = {
        ("dcgm-exporter", "gpu-node-1"): 1,
        ("dcgm-exporter", "gpu-node-3"): 1,
        ("hami-vgpu-monitor", "gpu-node-3"): 1,
        ("hami-vgpu-monitor", "gpu-node-4"): 1,
    }
    settles(prometheus, "up", ("job", "node"), expected)  # nothing from the other pod


def test_vgpus_read_as_xgpu_memory_series(prometheus: Prometheus) -> None:
    keys = ("node", "namespace", "pod", "container", "gpu_index", "gpu_uuid", "xgpu_source")
    total = {
        # card index 1 from HostGPUMemoryUsage's deviceidx, not the container's vdeviceid 0
        ("gpu-node-3", "ml", "bert-0", "main", "1", U_OLD, "hami-vgpu-monitor"): 4 * GIB,
        ("gpu-node-3", "ml", "bert-1", "main", "1", U_OLD, "hami-vgpu-monitor"): 2 * GIB,
        # both namings served: one series, not two
        ("gpu-node-4", "infer", "llm-0", "srv", "0", U_NEW, "hami-vgpu-monitor"): 20 * GIB,
    }
    settles(prometheus, "xgpu_memory_total", keys, total)
    used = {("bert-0",): 3 * GIB, ("bert-1",): GIB, ("llm-0",): 15 * GIB}
    settles(prometheus, "xgpu_memory_used", ("pod",), used)
    # v2.10's series above carry no utilisation
    settles(prometheus, "xgpu_core_percentage_used", ("pod",), {("bert-0",): 35, ("bert-1",): 20})


def test_cards_read_as_xgpu_card_series_each_card_once(prometheus: Prometheus) -> None:
    keys = ("node", "gpu_index", "xgpu_source")
    used = {
        ("gpu-node-1", "0", "dcgm-exporter"): 2048 * MIB,
        # dcgm-exporter's 5200 MiB, once for its two pods; HAMi's copy of the card left out
        ("gpu-node-3", "1", "dcgm-exporter"): 5200 * MIB,
        ("gpu-node-4", "0", "hami-vgpu-monitor"): 16 * GIB,  # no dcgm-exporter there
    }
    settles(prometheus, "xgpu_card_memory_used_bytes", keys, used)
    # 2048 + 30166 + 286 = 5200 + 27014 + 286 = 32500 MiB
    total = {
        ("gpu-node-1", "0", "dcgm-exporter"): 32500 * MIB,
        ("gpu-node-3", "1", "dcgm-exporter"): 32500 * MIB,
    }
    settles(prometheus, "xgpu_card_memory_total_bytes", keys, total)
    # gpu-node-3: dcgm-exporter's 61 %, not HAMi's 60 %; gpu-node-4 serves no utilisation
    utilization = {
        ("gpu-node-1", "0", "dcgm-exporter"): 0.12,
        ("gpu-node-3", "1", "dcgm-exporter"): 0.61,
    }
    settles(prometheus, "xgpu_card_utilization_ratio", keys, utilization)
    models = {("gpu-node-1", "Tesla V100-SXM2-32GB"): 1, ("gpu-node-3", "Tesla V100-SXM2-32GB"): 1}
    settles(prometheus, "xgpu_card_info", ("node", "model"), models)


def test_the_project_s_own_rules_run_on_the_mapped_series(prometheus: Prometheus) -> None:
    # (3 + 1) GiB used of (4 + 2) GiB allotted; 15 of 20 GiB
    usage = {("gpu-node-3",): 4 / 6, ("gpu-node-4",): 15 / 20}
    settles(prometheus, "node_gpu:xgpu_memory_allotted_usage:ratio", ("node",), usage)
    # Only gpu-node-3 has both: 6 GiB allotted (HAMi) of 32500 MiB (dcgm-exporter).
    allotted = {("gpu-node-3",): 6 * 1024 / 32500}
    settles(prometheus, "node:xgpu_memory_allotted:ratio", ("node",), allotted)
