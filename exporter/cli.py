"""`xgpu-exporter`: flags in the style of Prometheus exporters, wiring, serving, shutdown.

Sources: card readings from NVML (or `--simulate`), pod allotments from the Kubernetes API
(or `--scenario`), process owners from procfs. Exit codes: 0 after SIGTERM/SIGINT,
2 on bad flags or a bad scenario file (one line on stderr saying which and why).
Durations are seconds ("2", "0.5") or carry a unit as Prometheus writes them ("500ms",
"30s", "5m", "1h").
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NoReturn

from aiohttp import web

from advisor.connections import (
    ConnectionLimits,
    add_limit_arguments,
    connection_count,
    fit_file_limit,
    limits_of,
    serve_guarded,
)
from advisor.core.model import Cluster
from advisor.durations import parse_duration
from advisor.errors import InputError, known
from advisor.flagparse import SuggestingParser
from advisor.listen import parse_listen as listen_address
from advisor.scenario import ScenarioError
from advisor.terminal import one_line
from exporter.allotments import PodSource
from exporter.attribution import PidResolver, ProcCgroupResolver
from exporter.collection import Engine, Reader
from exporter.logfmt import setup_logging
from exporter.metrics import FAMILY_GROUPS, exporter_version
from exporter.scenario_pods import ScenarioPodSource
from exporter.server import make_app
from exporter.simulate import SimulatedReader

log = logging.getLogger("xgpu.exporter")

# Neither dcgm-exporter's 9400 nor any port of Prometheus's default-port allocations (whose
# 9100-9999 range is full), below the Linux ephemeral range: docs/coexistence.md.
DEFAULT_PORT = 19400


class ConfigError(InputError):
    """A flag combination or input that makes no sense; exit code 2."""


def duration(text: str) -> float:
    """Seconds from "2", "0.5", "500ms", "30s", "5m" or "1h30m" (advisor.durations, the
    advisor's grammar too); never negative, NaN or infinite."""
    try:
        return parse_duration(text, plain_seconds=True)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


class _Parser(SuggestingParser):
    help_hint = False  # error() points at --help itself

    def error(self, message: str) -> NoReturn:
        """One line, as for the flag checks after parsing (not the whole usage text)."""
        self.exit(2, f"{self.prog}: {message} (see --help)\n")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = _Parser(
        prog="xgpu-exporter",
        description="Per-node Prometheus exporter for virtualised GPUs (CCE xGPU, Volcano, HAMi).",
    )
    p.add_argument(
        "--web.listen-address",
        "--listen",  # the short name the first releases used
        dest="listen",
        default=f":{DEFAULT_PORT}",
        metavar="[HOST]:PORT",
        help=f"address to serve on (:{DEFAULT_PORT})",
    )
    add_limit_arguments(p, "web.", duration, connection_count)
    p.add_argument(
        "--node", default=os.environ.get("NODE_NAME", ""), help="node name (env NODE_NAME)"
    )
    p.add_argument(
        "--collector.nvml",
        dest="nvml",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="read cards and processes from NVML (default on)",
    )
    p.add_argument(
        "--collector.kubernetes",
        dest="kubernetes",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="read pod allotments from the Kubernetes API "
        "(default on unless --scenario or --simulate)",
    )
    p.add_argument(
        "--collector.attribution",
        dest="attribution",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="attribute GPU processes to containers via procfs (default on)",
    )
    p.add_argument(
        "--collector.cce",
        dest="cce",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="serve the six families CCE's own exporter publishes under the same names "
        "(xgpu_memory_*, xgpu_core_percentage_*, gpu_schedule_policy, xgpu_device_health); "
        "--no-collector.cce beside CCE's exporter (default on)",
    )
    p.add_argument(
        "--path.procfs",
        dest="procfs",
        type=Path,
        default=Path("/proc"),
        help="procfs mount point, e.g. /host/proc (/proc)",
    )
    p.add_argument(
        "--kubeconfig",
        help="kubeconfig file for the Kubernetes API (default: the files $KUBECONFIG names, "
        "else in-cluster in a pod, else ~/.kube/config)",
    )
    p.add_argument(
        "--kubernetes.backoff-initial",
        dest="backoff_initial",
        type=duration,
        default=0.5,
        metavar="DURATION",
        help="wait before the first retry after a failed pod list or watch; doubles per "
        "failure in a row, with jitter (0.5s)",
    )
    p.add_argument(
        "--kubernetes.backoff-max",
        dest="backoff_max",
        type=duration,
        default=30.0,
        metavar="DURATION",
        help="longest wait between retries of the Kubernetes API (30s)",
    )
    p.add_argument(
        "--scenario", type=Path, help="pod allotments from a scenario file (no Kubernetes)"
    )
    p.add_argument(
        "--simulate",
        type=Path,
        metavar="SCENARIO",
        help="no GPU: cards, allotments and moving usage from a scenario's node",
    )
    p.add_argument("--simulate.seed", dest="seed", type=int, default=0, help="simulation seed (0)")
    p.add_argument(
        "--nvml.call-timeout",
        dest="call_timeout",
        type=duration,
        default=2.0,
        metavar="DURATION",
        help="how long one NVML call may take (2s)",
    )
    p.add_argument(
        "--nvml.xid-hold",
        dest="xid_hold",
        type=duration,
        default=600.0,  # longer than the XGPUCardUnhealthy alert's `for: 5m`: one Xid fires it
        metavar="DURATION",
        help="how long a critical Xid event keeps its card unhealthy (10m)",
    )
    p.add_argument(
        "--collection.freshness",
        dest="freshness",
        type=duration,
        default=1.0,
        metavar="DURATION",
        help="how long a collection is reused by later scrapes; 0: every scrape collects (1s)",
    )
    p.add_argument(
        "--collection.timeout",
        dest="timeout",
        type=duration,
        default=3.0,
        metavar="DURATION",
        help="how long a collection may take; slower sources are reported failed (3s)",
    )
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.add_argument("--version", action="version", version=f"%(prog)s {exporter_version()}")
    return p.parse_args(argv)


def parse_listen(listen: str) -> tuple[str | None, int]:
    try:
        return listen_address(listen)
    except ValueError as error:
        raise ConfigError(f"--listen {error}") from None


@dataclass
class Wiring:
    engine: Engine
    pods: PodSource | None
    limits: ConnectionLimits = field(default_factory=ConnectionLimits)


def build(args: argparse.Namespace) -> Wiring:
    """Sources and engine from the flags; raises ConfigError for what cannot work."""
    if args.simulate and args.scenario:
        raise ConfigError("--simulate and --scenario are exclusive (--simulate reads its pods too)")
    if (args.simulate or args.scenario) and args.kubernetes:
        raise ConfigError("--collector.kubernetes and a scenario file are exclusive")
    if not args.node:
        raise ConfigError("--node (or NODE_NAME) is required")
    _check_durations(args)
    limits = limits_of(args)
    if limits.problems():
        raise ConfigError(limits.problems()[0])

    reader: Reader | None = None
    resolver: PidResolver | None = None
    pods: PodSource | None = None
    if args.simulate:
        source, cluster = _scenario_source(args.simulate, args.node)
        node = next((n for n in cluster.nodes if n.name == args.node), None)
        if node is None:
            raise ConfigError(f"{args.simulate}: no node named {args.node!r} to simulate")
        view = source.view
        simulated = SimulatedReader(
            node, lambda: view().allotments, seed=args.seed, mig_holds=source.mig_holds
        )
        reader, pods = simulated, source
        resolver = simulated if args.attribution else None
    else:
        if args.scenario:
            pods, _ = _scenario_source(args.scenario, args.node)
        elif args.kubernetes is not False:
            pods = _kube_source(args)
        if args.nvml:
            reader = _nvml_reader(args.call_timeout, args.xid_hold)
        if args.attribution:
            resolver = ProcCgroupResolver(args.procfs)
    engine = Engine(
        node=args.node,
        reader=reader,
        reader_name="simulate" if args.simulate else "nvml",
        pods=pods,
        resolver=resolver,
        freshness_s=args.freshness,
        timeout_s=args.timeout,
        families=_families(args),
    )
    return Wiring(engine=engine, pods=pods, limits=limits)


def _families(args: argparse.Namespace) -> frozenset[str]:
    """The metric-family groups the `--[no-]collector.<group>` flags leave on."""
    return frozenset(group for group in FAMILY_GROUPS if getattr(args, group))


def _check_durations(args: argparse.Namespace) -> None:
    """Durations the parser accepted (finite, not negative) that still cannot work."""
    must_be_positive = {
        "--collection.timeout": args.timeout,
        "--nvml.call-timeout": args.call_timeout,
        "--nvml.xid-hold": args.xid_hold,
        "--kubernetes.backoff-initial": args.backoff_initial,
        "--kubernetes.backoff-max": args.backoff_max,
    }
    for flag, seconds in must_be_positive.items():
        if seconds <= 0:
            raise ConfigError(f"{flag} must be more than 0")
    if args.backoff_max < args.backoff_initial:
        raise ConfigError(
            f"--kubernetes.backoff-max ({args.backoff_max:g}s) is below "
            f"--kubernetes.backoff-initial ({args.backoff_initial:g}s)"
        )


def _scenario_source(path: Path, node: str) -> tuple[ScenarioPodSource, Cluster]:
    source = ScenarioPodSource(path, node)
    try:
        cluster = source.load()
    except (OSError, ScenarioError) as exc:
        raise ConfigError(str(exc)) from None
    if node not in {n.name for n in cluster.nodes}:
        log.warning("node not in the scenario: no allotments", extra={"node": node})
    return source, cluster


def _nvml_reader(call_timeout_s: float, xid_hold_s: float) -> Reader:
    from exporter.nvml import NvmlReader  # loads nothing until the first read

    return NvmlReader(call_timeout_s=call_timeout_s, xid_hold_s=xid_hold_s)


def _kube_source(args: argparse.Namespace) -> PodSource:
    from exporter.pods_kube import KubePodSource

    source: PodSource = KubePodSource(
        args.node,
        kubeconfig=args.kubeconfig,
        backoff_initial_s=args.backoff_initial,
        backoff_max_s=args.backoff_max,
    )
    return source


async def serve(wiring: Wiring, host: str | None, port: int) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if wiring.pods is not None:
        await wiring.pods.start()
    cap = fit_file_limit(wiring.limits.max_connections)  # the open-file limit may lower it
    limits = replace(wiring.limits, max_connections=cap)
    runner = web.AppRunner(
        make_app(wiring.engine),
        access_log=None,
        handle_signals=False,
        keepalive_timeout=limits.idle_timeout_s,  # idle between requests: aiohttp knows when
    )
    await runner.setup()
    server, guard = await serve_guarded(
        known(runner.server, "the server of a set-up runner"), host, port, limits
    )
    log.info("listening", extra={"address": f"{host or ''}:{port}", "version": exporter_version()})
    first = asyncio.create_task(wiring.engine.latest(), name="first-collection")  # -> ready
    await stop.wait()
    log.info("shutting down")
    first.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await first
    server.close()
    await runner.cleanup()
    guard.close_all()  # those that never sent a byte aiohttp would wait for
    if wiring.pods is not None:
        await wiring.pods.close()
    await wiring.engine.close()
    log.info("stopped")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    setup_logging(args.log_level)
    try:
        host, port = parse_listen(args.listen)
        wiring = build(args)
    except ConfigError as exc:
        print(f"xgpu-exporter: {one_line(exc)}", file=sys.stderr)
        return exc.exit_code
    try:
        return asyncio.run(serve(wiring, host, port))
    except OSError as exc:  # e.g. the port is taken
        log.error("cannot serve", extra={"error": str(exc)})
        return 1
