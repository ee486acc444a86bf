"""Real parts for the sources' tests: Debian's Prometheus (live or on backfilled history) and
`xgpu-exporter --simulate` processes, each on a free loopback port, stopped by the caller."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
DEMO = REPO / "advisor" / "examples" / "demo.yaml"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def http_get(url: str, timeout: float = 5.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_ready(url: str, process: subprocess.Popen[bytes], log: Path, what: str) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited {process.returncode}: {log.read_text()[-2000:]}")
        try:
            if http_get(url, timeout=1)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"{what} not ready: {log.read_text()[-2000:]}")


@dataclass
class Exporter:
    process: subprocess.Popen[bytes]
    url: str
    node: str

    def stop(self) -> None:
        _stop(self.process)


def start_exporter(scenario: Path, node: str, home: Path) -> Exporter:
    script = Path(sys.executable).parent / "xgpu-exporter"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "exporter"]
    port = free_port()
    log = home / f"exporter-{node}.log"
    with log.open("wb") as err:
        process = subprocess.Popen(
            [
                *command,
                "--simulate",
                str(scenario),
                "--node",
                node,
                "--listen",
                f"127.0.0.1:{port}",
            ],
            cwd=REPO,
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    exporter = Exporter(process, f"http://127.0.0.1:{port}", node)
    try:
        _wait_ready(f"{exporter.url}/readyz", process, log, f"exporter {node}")
    except RuntimeError:
        exporter.stop()
        raise
    return exporter


def write_backfill(lines: Iterable[str], data_dir: Path) -> None:
    """OpenMetrics with timestamps (seconds) into TSDB blocks, through promtool."""
    source = data_dir.parent / "backfill.om"
    source.write_text("\n".join([*lines, "# EOF"]) + "\n")
    subprocess.run(
        ["promtool", "tsdb", "create-blocks-from", "openmetrics", str(source), str(data_dir)],
        check=True,
        capture_output=True,
    )


@dataclass
class Prometheus:
    process: subprocess.Popen[bytes]
    url: str

    def stop(self) -> None:
        _stop(self.process)

    def query(self, expr: str) -> list[dict[str, Any]]:
        status, body = http_get(
            f"{self.url}/api/v1/query?{urllib.parse.urlencode({'query': expr})}"
        )
        answer = json.loads(body)
        assert status == 200, answer
        assert answer["status"] == "success", answer
        result: list[dict[str, Any]] = answer["data"]["result"]
        return result

    def wait_for(
        self, expr: str, ready: Callable[[list[dict[str, Any]]], bool], timeout: float = 30.0
    ) -> list[dict[str, Any]]:
        deadline = time.monotonic() + timeout
        while True:
            result = self.query(expr)
            if ready(result):
                return result
            if time.monotonic() > deadline:
                raise AssertionError(f"{expr}: not ready in {timeout}s: {result}")
            time.sleep(0.2)


def start_prometheus(home: Path, targets: Mapping[str, str] | None = None) -> Prometheus:
    """targets: exporter URL -> node (the `node` target label, as deploy/'s scrape config);
    none: Prometheus serves whatever `home/data` holds (backfilled history)."""
    binary = shutil.which("prometheus")
    if binary is None:
        raise RuntimeError("prometheus is needed (Debian package `prometheus`)")
    scrape = [
        {
            "job_name": "xgpu-exporter",
            "honor_labels": True,
            "static_configs": [
                {"targets": [urllib.parse.urlsplit(url).netloc], "labels": {"node": node}}
                for url, node in (targets or {}).items()
            ],
        }
    ]
    config = {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
        "scrape_configs": scrape if targets else [],
    }
    (home / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
    port = free_port()
    log = home / "prometheus.log"
    with log.open("wb") as err:
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={home / 'prometheus.yml'}",
                f"--storage.tsdb.path={home / 'data'}",
                "--storage.tsdb.retention.time=100y",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    prometheus = Prometheus(process, f"http://127.0.0.1:{port}")
    try:
        _wait_ready(f"{prometheus.url}/-/ready", process, log, "prometheus")
    except RuntimeError:
        prometheus.stop()
        raise
    return prometheus
