"""Fixtures starting real parts (see exporter_realparts.py): exporters and Prometheus."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # makes `exporter_realparts` importable

from exporter_realparts import REPO, Exporter, Prometheus, exporter_command, free_port, http_get


@pytest.fixture(scope="module")
def start_exporter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Exporter]]:
    started: list[Exporter] = []

    def start(args: Sequence[str], env: Mapping[str, str] | None = None) -> Exporter:
        port = free_port()
        log_path = tmp_path_factory.mktemp("exporter") / "stderr.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [*exporter_command(), "--listen", f"127.0.0.1:{port}", *args],
                cwd=REPO,
                env=dict(env) if env is not None else None,
                stdout=subprocess.DEVNULL,
                stderr=log,
            )
        exporter = Exporter(process, f"http://127.0.0.1:{port}", log_path)
        started.append(exporter)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if process.poll() is not None:
                pytest.fail(f"exporter exited {process.returncode}: {exporter.log()}")
            try:
                if exporter.get("/readyz", timeout=1)[0] == 200:
                    return exporter
            except OSError:
                pass
            time.sleep(0.05)
        pytest.fail(f"exporter not ready: {exporter.log()}")

    yield start
    for exporter in started:
        exporter.stop()


@pytest.fixture(scope="module")
def start_prometheus(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., Prometheus]]:
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail("prometheus is needed (make system-deps installs Debian's package)")
    started: list[subprocess.Popen[bytes]] = []

    def start(targets: Mapping[str, str]) -> Prometheus:
        """targets: exporter URL -> node name (added as the `node` target label)."""
        home = tmp_path_factory.mktemp("prometheus")
        config = {
            "global": {"scrape_interval": "1s", "scrape_timeout": "1s"},
            "scrape_configs": [
                {
                    "job_name": "xgpu-exporter",
                    "honor_labels": True,
                    "static_configs": [
                        {"targets": [urllib.parse.urlsplit(url).netloc], "labels": {"node": node}}
                        for url, node in targets.items()
                    ],
                }
            ],
        }
        (home / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
        port = free_port()
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={home / 'prometheus.yml'}",
                f"--storage.tsdb.path={home / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
                "--log.level=warn",
            ],
            stdout=subprocess.DEVNULL,
            stderr=(home / "stderr.log").open("wb"),
        )
        started.append(process)
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            try:
                if http_get(f"{url}/-/ready", timeout=1)[0] == 200:
                    return Prometheus(process, url)
            except OSError:
                pass
            time.sleep(0.05)
        pytest.fail("prometheus did not become ready")

    yield start
    for process in started:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
