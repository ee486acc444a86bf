"""Real parts every test area starts the same way, each on a free loopback port.

- processes: `start_process` / `running_process` start a server, wait until a URL answers
  200 (failing with the tail of its log if it exits or never does) and stop it;
- `xgpu-exporter` subprocesses (`start_exporter`, `simulated_exporter`);
- Debian's Prometheus (`start_prometheus` / `running_prometheus`: a config, its own tsdb
  dir, `query()` / `wait_for()` on its HTTP API) and history for it (`write_backfill`,
  promtool's create-blocks-from);
- Debian's Pushgateway (`running_pushgateway`).

Importable as `tests.realparts`; registered for assert rewriting in tests/conftest.py.
"""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "advisor" / "examples" / "demo.yaml"


def _live_demo() -> Path:
    """The demo without its MIG node, for the tests that hold a live read of the demo to
    the demo itself: live, which MIG instance a pod holds is a guess and is said so
    (docs/design.md §13), so those tests would compare a warning and a guess; the live
    MIG path has tests of its own (tests/advisor/sources/test_*mig*.py)."""
    import tempfile

    import yaml

    from conformance.files import without_mig

    data = without_mig(yaml.safe_load(DEMO.read_text()))
    folder = Path(tempfile.mkdtemp(prefix="xgpu-live-demo-"))
    out = folder / "demo.yaml"
    out.write_text(yaml.safe_dump(data, sort_keys=False))
    return out


LIVE_DEMO = _live_demo()
Json = dict[str, Any]
Sample = dict[str, Any]  # one series of a Prometheus vector or matrix result
READY_TIMEOUT_S = 30.0
# Scrape and evaluate every second. Evaluation also sets a subquery's default step, so it
# matters even to a Prometheus that scrapes nothing.
EVERY_SECOND = {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def http_get(
    url: str, headers: Mapping[str, str] | None = None, timeout: float = 5.0
) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body; an HTTP error status is an answer, not an exception."""
    request = urllib.request.Request(url, headers=dict(headers or {}))
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def installed(program: str) -> str:
    """The program's path; the test fails when it is missing."""
    path = shutil.which(program)
    if path is None:
        pytest.fail(f"{program} not found: install the Debian packages (make system-deps)")
    return path


def _log_tail(log: Path) -> str:
    return log.read_text(errors="replace")[-4000:]


def stop_process(process: subprocess.Popen[bytes]) -> int:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode


def _answers(url: str) -> bool:
    try:
        return http_get(url, timeout=1)[0] == 200
    except OSError:
        return False


def start_process(
    command: Sequence[str],
    ready_url: str,
    log: Path,
    *,
    env: Mapping[str, str] | None = None,
    timeout: float = READY_TIMEOUT_S,
) -> subprocess.Popen[bytes]:
    """A server process (stdout and stderr to `log`), once `ready_url` answers 200."""
    with log.open("wb") as out:
        process = subprocess.Popen(
            list(command),
            cwd=REPO,
            env=dict(env) if env is not None else None,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + timeout
    while not _answers(ready_url):
        if process.poll() is not None:
            raise AssertionError(f"{command[0]} exited {process.returncode}: {_log_tail(log)}")
        if time.monotonic() > deadline:
            stop_process(process)
            raise AssertionError(f"{command[0]} not ready in {timeout}s: {_log_tail(log)}")
        time.sleep(0.05)
    return process


@contextmanager
def running_process(
    command: Sequence[str], ready_url: str, log: Path, **options: Any
) -> Iterator[subprocess.Popen[bytes]]:
    """`start_process`, stopped on exit."""
    process = start_process(command, ready_url, log, **options)
    try:
        yield process
    finally:
        stop_process(process)


def exporter_command() -> list[str]:
    script = Path(sys.executable).parent / "xgpu-exporter"
    return [str(script)] if script.exists() else [sys.executable, "-m", "exporter"]


@dataclass
class Exporter:
    process: subprocess.Popen[bytes]
    url: str
    log_path: Path
    node: str = ""  # the node it serves, where the test named one

    def get(
        self, path: str = "/metrics", headers: Mapping[str, str] | None = None, timeout: float = 5.0
    ) -> tuple[int, dict[str, str], bytes]:
        return http_get(self.url + path, headers, timeout)

    def metrics(self) -> str:
        status, _, body = self.get("/metrics", {"Accept-Encoding": "identity"})
        assert status == 200, body
        return body.decode()

    def metrics_when(self, ready: Callable[[str], bool], timeout: float = 10.0) -> str:
        """The first exposition for which `ready` holds, or the last one after the timeout
        (for the caller's assertion to show)."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.metrics()
            if ready(text) or time.monotonic() > deadline:
                return text
            time.sleep(0.05)

    def stop(self) -> int:
        return stop_process(self.process)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def start_exporter(
    args: Sequence[str], log: Path, *, env: Mapping[str, str] | None = None, node: str = ""
) -> Exporter:
    """`xgpu-exporter ARGS` on a free loopback port, once /readyz answers; the caller stops it."""
    url = f"http://127.0.0.1:{free_port()}"
    command = [*exporter_command(), "--listen", urllib.parse.urlsplit(url).netloc, *args]
    process = start_process(command, f"{url}/readyz", log, env=env)
    return Exporter(process, url, log, node)


def simulated_exporter(scenario: Path, node: str, home: Path) -> Exporter:
    """`xgpu-exporter --simulate` serving one node of a scenario file."""
    args = ["--simulate", str(scenario), "--node", node]
    return start_exporter(args, home / f"exporter-{node}.log", node=node)


def simulated_exporters(
    stack: ExitStack, scenario: Path, nodes: Iterable[str], home: Path
) -> list[Exporter]:
    """One `simulated_exporter` per node, each stopped when `stack` closes."""
    exporters = []
    for node in nodes:
        exporter = simulated_exporter(scenario, node, home)
        stack.callback(exporter.stop)
        exporters.append(exporter)
    return exporters


def at_least(count: int) -> Callable[[list[Sample]], bool]:
    """A `wait_for` condition: the answer has `count` series or more."""
    return lambda result: len(result) >= count


@dataclass
class Prometheus:
    """Prometheus's HTTP API; `process` is None where the test did not start it."""

    url: str
    process: subprocess.Popen[bytes] | None = None

    def stop(self) -> None:
        if self.process is not None:
            stop_process(self.process)

    def api(self, path: str, params: Sequence[tuple[str, str]]) -> Json:
        """The API's answer; a 4xx (a query that does not parse) comes back as its JSON."""
        _, _, body = http_get(f"{self.url}{path}?{urllib.parse.urlencode(params)}", timeout=10)
        answer: Json = json.loads(body)
        return answer

    def _data(self, path: str, params: Sequence[tuple[str, str]], what: str) -> Any:
        answer = self.api(path, params)
        assert answer["status"] == "success", f"{what}: {answer.get('error', answer)}"
        return answer["data"]

    def query(self, expr: str, at: float | None = None) -> list[Sample]:
        params = [("query", expr)] + ([("time", str(at))] if at is not None else [])
        result: list[Sample] = self._data("/api/v1/query", params, expr)["result"]
        return result

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[Sample]:
        params = [("query", expr), ("start", str(start)), ("end", str(end)), ("step", str(step))]
        result: list[Sample] = self._data("/api/v1/query_range", params, expr)["result"]
        return result

    def label_values(self, label: str, match: str | None, start: float, end: float) -> list[str]:
        params = [("start", str(start)), ("end", str(end))]
        if match is not None:
            params.append(("match[]", match))
        values: list[str] = self._data(f"/api/v1/label/{label}/values", params, f"{label} {match}")
        return values

    def wait_for(
        self, expr: str, ready: Callable[[list[Sample]], bool] = bool, timeout: float = 45.0
    ) -> list[Sample]:
        """The answer to `expr` once `ready(answer)`; the first scraped sample takes a few
        seconds. Fails at the timeout, showing the last answer."""
        deadline = time.monotonic() + timeout
        while True:
            result = self.query(expr)
            if ready(result):
                return result
            if time.monotonic() > deadline:
                raise AssertionError(f"{expr}: not ready in {timeout}s: {result}")
            time.sleep(0.2)


def scrape_config(targets: Mapping[str, str]) -> Json:
    """Scrape exporters as deploy/'s static job does (`honor_labels`, a `node` target label),
    every second. targets: exporter URL -> node."""
    job = {
        "job_name": "xgpu-exporter",
        "honor_labels": True,
        "static_configs": [
            {"targets": [urllib.parse.urlsplit(url).netloc], "labels": {"node": node}}
            for url, node in targets.items()
        ],
    }
    return {"global": EVERY_SECOND, "scrape_configs": [job]}


def start_prometheus(home: Path, config: Json | None = None) -> Prometheus:
    """Prometheus with `config` (none: scrape nothing, serve what `home/data` holds, e.g.
    backfilled history) and its tsdb in home/data; the caller stops it."""
    config = config or {"global": EVERY_SECOND}
    (home / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
    url = f"http://127.0.0.1:{free_port()}"
    command = [
        installed("prometheus"),
        f"--config.file={home / 'prometheus.yml'}",
        f"--storage.tsdb.path={home / 'data'}",
        "--storage.tsdb.retention.time=100y",  # backfilled history stays
        f"--web.listen-address={urllib.parse.urlsplit(url).netloc}",
        "--log.level=warn",
    ]
    process = start_process(command, f"{url}/-/ready", home / "prometheus.log")
    return Prometheus(url, process)


@contextmanager
def running_prometheus(home: Path, config: Json | None = None) -> Iterator[Prometheus]:
    prometheus = start_prometheus(home, config)
    try:
        yield prometheus
    finally:
        prometheus.stop()


def backfill(source: Path, data_dir: Path) -> None:
    """OpenMetrics with timestamps (ending in `# EOF`) into TSDB blocks in `data_dir`."""
    command = ["tsdb", "create-blocks-from", "openmetrics", str(source), str(data_dir)]
    created = subprocess.run(
        [installed("promtool"), *command], capture_output=True, text=True, check=False
    )
    assert created.returncode == 0, created.stdout + created.stderr


def promtool_check_metrics(exposition: str) -> tuple[int, list[str]]:
    """`promtool check metrics` on a text exposition: its exit status (0 clean, 3 lint
    findings, 1 parse errors) and its findings, sorted."""
    result = subprocess.run(
        [installed("promtool"), "check", "metrics"],
        input=exposition,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    return result.returncode, sorted(
        line for line in (result.stdout + result.stderr).splitlines() if line
    )


def write_backfill(lines: Iterable[str], data_dir: Path) -> None:
    """OpenMetrics lines (samples with timestamps in seconds) into TSDB blocks."""
    source = data_dir.parent / "backfill.om"
    source.write_text("\n".join([*lines, "# EOF"]) + "\n")
    backfill(source, data_dir)


@contextmanager
def running_pushgateway(home: Path) -> Iterator[str]:
    """Debian's prometheus-pushgateway keeping nothing on disk, as deployed; its base URL."""
    url = f"http://127.0.0.1:{free_port()}"
    address = urllib.parse.urlsplit(url).netloc
    command = [
        installed("prometheus-pushgateway"),
        f"--web.listen-address={address}",
        "--persistence.file=",
    ]
    with running_process(command, f"{url}/-/ready", home / "pushgateway.log"):
        yield url
