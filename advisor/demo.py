"""The end-to-end demo (`make demo`): no GPU, no cluster.

Starts a simulated exporter for every node of a bundled scenario, a real Prometheus scraping
them when one is installed (the advisor scrapes the exporters directly otherwise), runs
`xgpu-advisor report`, prints a short summary and where to open the HTML, and stops
everything it started. Without `--scenario` it does so twice: the demo's cluster, then the
Volcano training cluster (gangs, queues, preemption), whose report is a second page in
`training/` under the first.
"""

from __future__ import annotations

import argparse
import json
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from advisor import metricnames as M
from advisor.core.diagnosis import shown_causes
from advisor.render.diagnose.data import placeable_text
from advisor.scenario import ScenarioError, load_scenario
from advisor.words import plural

PACKAGE = Path(__file__).resolve().parent
DEFAULT_SCENARIO = PACKAGE / "examples" / "demo.yaml"
TRAINING_SCENARIO = PACKAGE / "examples" / "training.yaml"
TRAINING_PAGE = "training"  # the training cluster's report, a folder in the demo's
TRAINING_STORY = "a Volcano training cluster (a gang, a full queue, a useless eviction)"
RULES = PACKAGE.parent / "deploy" / "rules" / "xgpu.rules.yaml"
JOB = "xgpu-exporter"


# Right-sizing advises only from a day of history (24 h, 288 samples), which a Prometheus
# started seconds ago lacks: one pod's day is backfilled with promtool (exporter.backfill),
# so the report shows one real recommendation and every other workload says why it has none.
HISTORY_POD = "infer/embed-0"  # the pod given a day, when the scenario runs it
HISTORY = "24h"  # the report's window and step when a day is backfilled
HISTORY_STEP = "5m"
BACKFILL_S = 86400 + 900  # a day and a bit, so that the report's 24 h window starts inside it
BACKFILL_STEP_S = 60


@dataclass(frozen=True, slots=True)
class Services:
    exporters: dict[str, str]  # node -> base URL
    prometheus: str | None  # base URL, None when not installed
    backfilled: str | None = None  # the pod given a day of history, None when none was


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _get(url: str, timeout: float = 2.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        body: bytes = response.read()
        return body


class DemoError(RuntimeError):
    """A service would not start; the message ends with its log's last line."""


def _last_line(log: Path) -> str:
    """The log lives in a temporary directory that is gone by the time anyone looks."""
    try:
        lines = [line for line in log.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return f": {lines[-1].strip()}" if lines else ""


def _wait(
    what: str,
    ready: Callable[[], bool],
    proc: subprocess.Popen[bytes],
    timeout: float,
    log: Path,
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise DemoError(f"{what} exited with code {proc.returncode}{_last_line(log)}")
        try:
            if ready():
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise DemoError(f"{what} not ready after {timeout:.0f} s{_last_line(log)}")


@contextmanager
def _process(command: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        proc = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)
        try:
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def _exporter(stack: ExitStack, scenario: Path, node: str, work: Path) -> str:
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "exporter",
        "--simulate",
        str(scenario),
        "--node",
        node,
        "--listen",
        f"127.0.0.1:{port}",
        "--log-level",
        "warning",
    ]
    log = work / f"exporter-{node}.log"
    proc = stack.enter_context(_process(command, log))
    url = f"http://127.0.0.1:{port}"
    _wait(f"exporter for {node}", lambda: bool(_get(f"{url}/readyz")), proc, 30, log)
    return url


def _query(prometheus: str, promql: str) -> list[dict[str, Any]]:
    url = f"{prometheus}/api/v1/query?" + urllib.parse.urlencode({"query": promql})
    result: list[dict[str, Any]] = json.loads(_get(url))["data"]["result"]
    return result


def history_pod(scenario: Path) -> tuple[str, str] | None:
    """(node, pod) to backfill: HISTORY_POD where the scenario runs it, else its first
    running pod; None when no pod runs."""
    running = [p for p in load_scenario(scenario).running if p.placement]
    chosen = next((p for p in running if p.name == HISTORY_POD), running[0] if running else None)
    if chosen is None or chosen.placement is None:
        return None
    return chosen.placement.node, chosen.name


def _backfill(scenario: Path, exporters: dict[str, str], work: Path) -> str | None:
    """One pod's day of the simulated exporter's series, written as TSDB blocks where the
    demo's Prometheus will start (docs/design.md §6 names; the scrape's own labels, so the
    live samples continue the same series). None when promtool is not installed."""
    promtool = shutil.which("promtool")
    where = history_pod(scenario)
    if promtool is None or where is None:
        return None
    node, pod = where
    end = time.time()
    series = work / "backfill.om"
    labels = {"job": JOB, "instance": exporters[node].removeprefix("http://"), "node": node}
    command = [
        sys.executable,
        "-m",
        "exporter.backfill",
        "--simulate",
        str(scenario),
        "--node",
        node,
        "--pod",
        pod,
        "--start",
        f"{end - BACKFILL_S:.0f}",
        "--end",
        f"{end:.0f}",
        "--step",
        str(BACKFILL_STEP_S),
        *(f"--label={k}={v}" for k, v in labels.items()),
        "--output",
        str(series),
    ]
    blocks = [promtool, "tsdb", "create-blocks-from", "openmetrics", "--quiet"]
    blocks += [str(series), str(work / "tsdb")]
    for what, step in (("backfill", command), ("promtool", blocks)):
        done = subprocess.run(step, capture_output=True, check=False)
        if done.returncode != 0:
            log = work / f"{what}.log"
            log.write_bytes(done.stdout + done.stderr)
            raise DemoError(f"{what} exited with code {done.returncode}{_last_line(log)}")
    return pod


def _prometheus(stack: ExitStack, binary: str, exporters: dict[str, str], work: Path) -> str:
    config = {
        "global": {"scrape_interval": "2s", "evaluation_interval": "2s"},
        "rule_files": [str(RULES)] if RULES.exists() else [],
        "scrape_configs": [
            {
                "job_name": JOB,
                # The exporter's namespace/pod/container name the workload (docs/design.md §6).
                "honor_labels": True,
                "static_configs": [
                    {"targets": [url.removeprefix("http://")], "labels": {"node": node}}
                    for node, url in exporters.items()
                ],
            }
        ],
    }
    path = work / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    port = free_port()
    command = [
        binary,
        f"--config.file={path}",
        f"--storage.tsdb.path={work / 'tsdb'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--log.level=warn",
    ]
    log = work / "prometheus.log"
    proc = stack.enter_context(_process(command, log))
    url = f"http://127.0.0.1:{port}"
    want = len(exporters)
    # Prometheus needs a few seconds to discover and scrape new targets.
    _wait("Prometheus", lambda: len(_query(url, M.NODE_INFO.name)) >= want, proc, 60, log)
    return url


@contextmanager
def services(scenario: Path, work: Path, use_prometheus: bool = True) -> Iterator[Services]:
    nodes = [n.name for n in load_scenario(scenario).nodes]
    with ExitStack() as stack:
        exporters = {node: _exporter(stack, scenario, node, work) for node in nodes}
        binary = shutil.which("prometheus") if use_prometheus else None
        if binary is None:
            yield Services(exporters, None)
            return
        backfilled = _backfill(scenario, exporters, work)  # before Prometheus opens the TSDB
        yield Services(exporters, _prometheus(stack, binary, exporters, work), backfilled)


def report_command(svc: Services, scenario: Path, out: Path) -> list[str]:
    if svc.prometheus is None:
        source = ["--exporters", ",".join(svc.exporters.values())]
    elif svc.backfilled is None:  # seconds of history: a fine step shows them
        source = ["--prometheus", svc.prometheus, "--history", "10m", "--history-step", "2s"]
    else:
        source = ["--prometheus", svc.prometheus, "--history", HISTORY]
        source += ["--history-step", HISTORY_STEP]
    return [
        sys.executable,
        "-m",
        "advisor.cli",
        "report",
        *source,
        "--pods-from",
        str(scenario),
        "--output-dir",
        str(out),
        "--textfile",
        str(out / "xgpu_advisor.prom"),
        "--time-budget",
        "20",
    ]


def summary(out: Path) -> str:
    data = json.loads((out / "report.json").read_text())
    counts = data["diagnosis"]["summary"]
    causes = ", ".join(f"{counts[c]} {c}" for c in shown_causes(counts) if counts.get(c))
    plan = data["plan"]["summary"]
    frag = data["fragmentation"]
    lines = [
        f"source: {data['source']}",
        f"{plural(counts['pending'], 'Pending GPU pod')}: {causes}",
        *_jobs_lines(data["diagnosis"]),
        f"{plural(plan['plans'], 'plan')} rescuing {plural(plan['rescued_pods'], 'pod')} "
        f"with {plural(plan['evictions'], 'eviction')}",
        f"fragmentation: {frag['ratio']:.1%} of the {frag['free_mib']:,} MiB free is unusable "
        f"by the typical requests (FGD); {frag['stranded_mib']:,} MiB stranded",
        *_autoscaler_lines(data["diagnosis"]),
        *_sizing_line(data["rightsizing"]),
        f"open the report: file://{(out / 'report.html').resolve()}",
    ]
    return "\n".join(lines)


def _jobs_lines(diagnosis: dict[str, Any]) -> list[str]:
    """The gangs' outcomes and the evictions preemption would make (docs/design.md §10):
    only where the cluster has them, so the demo's own page keeps its summary."""
    lines = []
    if groups := diagnosis.get("groups"):
        lines.append(
            "gangs: "
            + "; ".join(
                f"{g['name']} {g['state']} ({g['ready']} running, {g['pending']} Pending, "
                f"min_member {g['min_member']}, queue {g['queue']})"
                for g in groups
            )
        )
    for pod in diagnosis["pods"]:
        found = pod.get("preemption") or {}
        if found.get("verdict") == "evicts":
            useless = "it still fits no card there (helps: false)"
            result = "then it fits" if found["helps"] else useless
            lines.append(
                f"preemption: {pod['pod']} evicts {', '.join(found['victims'])} on "
                f"{found['node']}; {result}"
            )
    return lines


def _autoscaler_lines(diagnosis: dict[str, Any]) -> list[str]:
    """How far each autoscaler's replicas place (docs/design.md §12.2), in the reports'
    words: only where the cluster lists autoscalers."""
    lines = []
    for a in diagnosis.get("autoscalers", []):
        line = f"autoscaler {a['name']}: {placeable_text(a)}"
        if a["blocked"] is not None:
            line += f"; the next stays Pending ({a['blocked']['cause']})"
        lines.append(line)
    return lines


def _sizing_line(sizing: dict[str, Any] | None) -> list[str]:
    if sizing is None:
        return []
    workloads = sizing["workloads"]
    advised = [w["workload"] for w in workloads if w.get("advised") is not False]
    named = f" ({', '.join(advised)})" if advised else ""
    return [
        f"right-sizing: {plural(len(advised), 'workload')} advised{named}; "
        f"{len(workloads) - len(advised)} without the history it needs"
    ]


def run_demo(
    scenario: Path,
    out: Path,
    use_prometheus: bool = True,
    while_up: Callable[[Services], None] | None = None,
) -> int:
    """Start, report, stop; `while_up` runs (for tests) while the services are still up."""
    with (
        tempfile.TemporaryDirectory(prefix="xgpu-demo-") as tmp,
        services(scenario, Path(tmp), use_prometheus) as svc,
    ):
        where = f"Prometheus {svc.prometheus}" if svc.prometheus else "the exporters directly"
        print(f"xgpu-demo: {len(svc.exporters)} simulated exporters up; reading {where}")
        if svc.backfilled:
            print(
                f"xgpu-demo: {svc.backfilled} has a day of simulated history, backfilled into "
                "Prometheus with promtool: right-sizing needs 24 h"
            )
        if svc.prometheus:
            time.sleep(4)  # a little history for the usage chart
        proc = subprocess.run(report_command(svc, scenario, out), check=False)
        if while_up is not None:
            while_up(svc)
    if proc.returncode != 0:
        return proc.returncode
    print(summary(out))
    return 0


def default_pages(out: Path) -> list[tuple[Path, Path]]:
    """(scenario, output folder) of each report `make demo` writes, in order."""
    return [(DEFAULT_SCENARIO, out), (TRAINING_SCENARIO, out / TRAINING_PAGE)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m advisor.demo", description=__doc__)
    parser.add_argument(
        "--scenario",
        type=Path,
        help="this scenario alone (default: the demo's cluster, then the training cluster)",
    )
    parser.add_argument("--output-dir", type=Path, default=Path("out/demo-report"))
    parser.add_argument("--no-prometheus", action="store_true", help="scrape exporters directly")
    args = parser.parse_args(argv)
    out: Path = args.output_dir
    pages = [(args.scenario, out)] if args.scenario is not None else default_pages(out)
    try:
        for number, (scenario, where) in enumerate(pages):
            if number:  # the second page: what it shows, and where it goes
                print(f"xgpu-demo: next, {TRAINING_STORY}: {scenario}, reported in {where}")
            code = run_demo(scenario, where, use_prometheus=not args.no_prometheus)
            if code != 0:
                return code
        return 0
    except ScenarioError as err:
        print(f"xgpu-demo: error: {err}", file=sys.stderr)
        return err.exit_code
    except DemoError as err:  # everything started is stopped by now
        print(f"xgpu-demo: error: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
