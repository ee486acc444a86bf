"""Real services for the deploy tests: a Prometheus and a Pushgateway on loopback ports,
and the scrape job the Prometheus Operator would generate for one of our monitors.

There is no Operator here, so a monitor's endpoint is turned into the plain scrape job the
Operator would write: the target labels it sets before the monitor's own relabelings
(namespace, pod, container, service, endpoint, job) are given as static labels, and
everything after that (the monitor's relabelings, honor_labels) is the real thing.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
Json = dict[str, Any]

# Target labels the Operator sets before a monitor's own relabelings.
OPERATOR_TARGET_LABELS = {
    "namespace": "xgpu-insight",
    "container": "main",
    "endpoint": "metrics",
}
RELABEL_KEYS = {
    "sourceLabels": "source_labels",
    "targetLabel": "target_label",
    "separator": "separator",
    "regex": "regex",
    "replacement": "replacement",
    "action": "action",
}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def operator_job(
    monitor_file: str, address: str, job_label: str, extra_labels: dict[str, str]
) -> Json:
    """The scrape job the Operator would generate for the one endpoint of a monitor in
    deploy/base (ServiceMonitor or PodMonitor), pointed at `address`."""
    monitor = yaml.safe_load((DEPLOY / "base" / monitor_file).read_text())
    kind = monitor["kind"]
    key = {"ServiceMonitor": "endpoints", "PodMonitor": "podMetricsEndpoints"}[kind]
    (endpoint,) = monitor["spec"][key]
    labels = {
        **OPERATOR_TARGET_LABELS,
        "pod": f"{monitor['metadata']['name']}-x2k9f",
        "endpoint": endpoint["port"],
        "job": job_label,
        **extra_labels,
    }
    if kind == "ServiceMonitor":
        labels["service"] = monitor["metadata"]["name"]
    return {
        "job_name": f"emulated-{kind.lower()}-{monitor['metadata']['name']}",
        "honor_labels": endpoint["honorLabels"],
        "metrics_path": endpoint["path"],
        "static_configs": [{"targets": [address], "labels": labels}],
        "relabel_configs": [
            {RELABEL_KEYS[k]: value for k, value in relabeling.items()}
            for relabeling in endpoint.get("relabelings", [])
        ],
    }


class Prometheus:
    def __init__(self, url: str) -> None:
        self.url = url

    def query(self, promql: str) -> list[Json]:
        query = urllib.parse.urlencode({"query": promql})
        with urllib.request.urlopen(f"{self.url}/api/v1/query?{query}", timeout=5) as response:
            payload = json.load(response)
        assert payload["status"] == "success", payload
        result: list[Json] = payload["data"]["result"]
        return result

    def wait_for(self, promql: str, count: int, timeout: float = 45.0) -> list[Json]:
        """The answer once it has at least `count` series (or the last one at the timeout)."""
        deadline = time.monotonic() + timeout
        while True:
            result = self.query(promql)
            if len(result) >= count or time.monotonic() > deadline:
                return result
            time.sleep(0.25)

    def wait_until_empty(self, promql: str, timeout: float = 30.0) -> list[Json]:
        deadline = time.monotonic() + timeout
        while True:
            result = self.query(promql)
            if not result or time.monotonic() > deadline:
                return result
            time.sleep(0.25)


def _wait_ready(process: subprocess.Popen[bytes], url: str, log: Path) -> None:
    deadline = time.monotonic() + 30
    while True:
        assert process.poll() is None, log.read_text()
        try:
            with urllib.request.urlopen(url, timeout=1) as response:
                if response.status == 200:
                    return
        except OSError:
            pass
        assert time.monotonic() < deadline, f"{url} not ready:\n{log.read_text()}"
        time.sleep(0.1)


@contextmanager
def _service(command: list[str], ready_url: str, log: Path) -> Iterator[None]:
    with log.open("wb") as out:
        process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        try:
            _wait_ready(process, ready_url, log)
            yield
        finally:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextmanager
def running_prometheus(directory: Path, config: Json) -> Iterator[Prometheus]:
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail("prometheus not found: install the Debian package (make system-deps)")
    config_file = directory / "prometheus.yml"
    config_file.write_text(yaml.safe_dump(config))
    url = f"http://127.0.0.1:{free_port()}"
    command = [
        binary,
        f"--config.file={config_file}",
        f"--storage.tsdb.path={directory / 'data'}",
        f"--web.listen-address={url.removeprefix('http://')}",
    ]
    with _service(command, f"{url}/-/ready", directory / "prometheus.log"):
        yield Prometheus(url)


@contextmanager
def running_pushgateway(directory: Path) -> Iterator[str]:
    """A Pushgateway keeping nothing on disk, as the deployed one; yields host:port."""
    binary = shutil.which("prometheus-pushgateway")
    if binary is None:
        pytest.fail("prometheus-pushgateway not found: install it (make system-deps)")
    address = f"127.0.0.1:{free_port()}"
    command = [binary, f"--web.listen-address={address}", "--persistence.file="]
    with _service(command, f"http://{address}/-/ready", directory / "pushgateway.log"):
        yield address
