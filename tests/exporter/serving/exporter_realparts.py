"""Real parts for serving tests: `xgpu-exporter` as a subprocess and a real Prometheus.

Helpers here; the fixtures that start them are in conftest.py next to this file.

`start_exporter(args, env)` runs the console script on a free loopback port and waits for
/readyz; `start_prometheus(targets)` runs Debian's prometheus with a generated config
(scrape every second, `honor_labels`, a `node` target label, its own tsdb dir) and gives an
object whose `query()` / `wait_for()` speak its HTTP API. Both are stopped at teardown.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
DATA = Path(__file__).resolve().parents[1] / "data"
Sample = dict[str, Any]  # one element of a Prometheus vector result


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def exporter_command() -> list[str]:
    script = Path(sys.executable).parent / "xgpu-exporter"
    return [str(script)] if script.exists() else [sys.executable, "-m", "exporter"]


def http_get(
    url: str, headers: Mapping[str, str] | None = None, timeout: float = 5.0
) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers=dict(headers or {}))
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


@dataclass
class Exporter:
    process: subprocess.Popen[bytes]
    url: str
    log_path: Path

    def get(
        self, path: str = "/metrics", headers: Mapping[str, str] | None = None, timeout: float = 5.0
    ) -> tuple[int, dict[str, str], bytes]:
        return http_get(self.url + path, headers, timeout)

    def metrics(self) -> str:
        status, _, body = self.get("/metrics", {"Accept-Encoding": "identity"})
        assert status == 200, body
        return body.decode()

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        return self.process.returncode

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@dataclass
class Prometheus:
    process: subprocess.Popen[bytes]
    url: str

    def query(self, expr: str) -> list[Sample]:
        query = urllib.parse.urlencode({"query": expr})
        status, _, body = http_get(f"{self.url}/api/v1/query?{query}")
        answer = json.loads(body)
        assert status == 200, answer
        assert answer["status"] == "success", answer
        result: list[Sample] = answer["data"]["result"]
        return result

    def wait_for(
        self, expr: str, ready: Callable[[list[Sample]], bool] = bool, timeout: float = 20.0
    ) -> list[Sample]:
        """Polls `expr` until `ready(result)`; the first scraped sample takes a few seconds."""
        deadline = time.monotonic() + timeout
        while True:
            result = self.query(expr)
            if ready(result) or time.monotonic() > deadline:
                return result
            time.sleep(0.2)
