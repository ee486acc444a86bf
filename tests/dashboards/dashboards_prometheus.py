"""A real Prometheus for the dashboard tests, and running the dashboards' queries on it."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dashboards_grafana import (
    Json,
    Selections,
    Target,
    all_values,
    interpolate,
    parse_label_values,
    query_variables,
    targets,
)

Series = dict[str, Any]  # one element of a matrix or vector result


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


class Prometheus:
    def __init__(self, url: str) -> None:
        self.url = url

    def get(self, path: str, params: list[tuple[str, str]]) -> Json:
        """The API's answer; a 4xx (a query that does not parse) comes back as its JSON."""
        url = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=10) as response:
                answer: Json = json.load(response)
        except urllib.error.HTTPError as error:
            answer = json.loads(error.read())
        return answer

    def query_range(self, expr: str, start: float, end: float, step: float) -> list[Series]:
        params = [("query", expr), ("start", str(start)), ("end", str(end)), ("step", str(step))]
        answer = self.get("/api/v1/query_range", params)
        assert answer["status"] == "success", f"{expr}: {answer.get('error')}"
        result: list[Series] = answer["data"]["result"]
        return result

    def query(self, expr: str, at: float) -> list[Series]:
        answer = self.get("/api/v1/query", [("query", expr), ("time", str(at))])
        assert answer["status"] == "success", f"{expr}: {answer.get('error')}"
        result: list[Series] = answer["data"]["result"]
        return result

    def label_values(self, label: str, match: str | None, start: float, end: float) -> list[str]:
        params = [("start", str(start)), ("end", str(end))]
        if match is not None:
            params.append(("match[]", match))
        answer = self.get(f"/api/v1/label/{label}/values", params)
        assert answer["status"] == "success", f"{label} {match}: {answer.get('error')}"
        values: list[str] = answer["data"]
        return values


@contextmanager
def running_prometheus(home: Path, config: Json) -> Iterator[Prometheus]:
    """Prometheus on a free loopback port, its tsdb in home/data (backfilled or empty)."""
    binary = shutil.which("prometheus")
    assert binary, "prometheus not found: install Debian's package (make system-deps)"
    (home / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
    url = f"http://127.0.0.1:{free_port()}"
    command = [
        binary,
        f"--config.file={home / 'prometheus.yml'}",
        f"--storage.tsdb.path={home / 'data'}",
        "--storage.tsdb.retention.time=100y",
        f"--web.listen-address={url.removeprefix('http://')}",
        "--log.level=warn",
    ]
    with running_service(command, f"{url}/-/ready", home / "prometheus.log"):
        yield Prometheus(url)


@dataclass(frozen=True)
class Window:
    start: float
    end: float
    step: float


def choose(
    prometheus: Prometheus, dashboard: Json, window: Window, first: bool
) -> dict[str, list[str] | None]:
    """Walk the variable chain as Grafana does: each query sees the choices before it.

    `first`: pick each variable's first option (in the variable's sort order), else "All".
    Every variable must offer at least one option.
    """
    selections: dict[str, list[str] | None] = {"datasource": ["test"]}
    for variable in query_variables(dashboard):
        match, label = parse_label_values(
            interpolate(variable["query"], selections, all_values(dashboard))
        )
        options = prometheus.label_values(label, match, window.start, window.end)
        assert options, f"{dashboard['uid']}: variable {variable['name']} has no options"
        numeric = variable["sort"] in (3, 4)
        options.sort(key=lambda v: (float(v), v) if numeric else (0.0, v))
        selections[variable["name"]] = [options[0]] if first else None
    return selections


@dataclass(frozen=True)
class Answer:
    target: Target
    expr: str
    series: list[Series]

    def values(self) -> list[float]:
        return [float(v) for s in self.series for _, v in s.get("values", [s.get("value")])]


def run_all(
    prometheus: Prometheus, dashboard: Json, selections: Selections, window: Window
) -> list[Answer]:
    """Every target of the dashboard as a range query; instant targets also as instant."""
    answers = []
    for target in targets(dashboard):
        expr = interpolate(target.target["expr"], selections, all_values(dashboard))
        series = prometheus.query_range(expr, window.start, window.end, window.step)
        if target.target.get("instant"):
            instant = prometheus.query(expr, window.end)
            answers.append(Answer(target, expr, instant))
        answers.append(Answer(target, expr, series))
    return answers


@contextmanager
def running_service(command: list[str], ready_url: str, log_path: Path) -> Iterator[None]:
    """A server process, ready once `ready_url` answers 200; stopped on exit."""
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert process.poll() is None, f"{command[0]} exited: {log_path.read_text()}"
            try:
                with urllib.request.urlopen(ready_url, timeout=1) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, f"{command[0]} not ready: {log_path.read_text()}"
            time.sleep(0.05)
        yield
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
