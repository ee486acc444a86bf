"""`xgpu-exporter`: flags in the style of Prometheus exporters, wiring, serving, shutdown.

Sources: card readings from NVML (or `--simulate`), pod allotments from the Kubernetes API
(or `--scenario`), process owners from procfs. Exit codes: 0 after SIGTERM/SIGINT,
2 on bad flags or a bad scenario file.
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
from dataclasses import dataclass
from pathlib import Path

from aiohttp import web

from advisor.core.model import Cluster
from advisor.scenario import ScenarioError
from exporter.allotments import PodSource
from exporter.attribution import PidResolver, ProcCgroupResolver
from exporter.collection import Engine, Reader
from exporter.logfmt import setup_logging
from exporter.metrics import exporter_version
from exporter.scenario_pods import ScenarioPodSource
from exporter.server import make_app
from exporter.simulate import SimulatedReader

log = logging.getLogger("xgpu.exporter")


class ConfigError(Exception):
    """A flag combination or input that makes no sense; exit code 2."""


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="xgpu-exporter",
        description="Per-node Prometheus exporter for virtualised GPUs (CCE xGPU, Volcano, HAMi).",
    )
    p.add_argument("--listen", default=":9400", help="address to serve on, [HOST]:PORT (:9400)")
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
        "--path.procfs",
        dest="procfs",
        type=Path,
        default=Path("/proc"),
        help="procfs mount point, e.g. /host/proc (/proc)",
    )
    p.add_argument(
        "--kubeconfig",
        default=os.environ.get("KUBECONFIG"),
        help="kubeconfig file for the Kubernetes API (env KUBECONFIG; default: in-cluster)",
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
        type=float,
        default=2.0,
        help="seconds one NVML call may take (2)",
    )
    p.add_argument(
        "--collection.freshness",
        dest="freshness",
        type=float,
        default=1.0,
        help="seconds a collection is reused by later scrapes (1)",
    )
    p.add_argument(
        "--collection.timeout",
        dest="timeout",
        type=float,
        default=3.0,
        help="seconds a collection may take; slower sources are reported failed (3)",
    )
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])
    p.add_argument("--version", action="version", version=f"%(prog)s {exporter_version()}")
    return p.parse_args(argv)


def parse_listen(listen: str) -> tuple[str | None, int]:
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ConfigError(f"--listen {listen!r}: expected [HOST]:PORT")
    host = host.strip("[]")
    return (host or None), int(port)


@dataclass
class Wiring:
    engine: Engine
    pods: PodSource | None


def build(args: argparse.Namespace) -> Wiring:
    """Sources and engine from the flags; raises ConfigError for what cannot work."""
    if args.simulate and args.scenario:
        raise ConfigError("--simulate and --scenario are exclusive (--simulate reads its pods too)")
    if (args.simulate or args.scenario) and args.kubernetes:
        raise ConfigError("--collector.kubernetes and a scenario file are exclusive")
    if not args.node:
        raise ConfigError("--node (or NODE_NAME) is required")
    if args.freshness < 0 or args.timeout <= 0 or args.call_timeout <= 0:
        raise ConfigError("durations must be positive (freshness may be 0)")

    reader: Reader | None = None
    resolver: PidResolver | None = None
    pods: PodSource | None = None
    if args.simulate:
        source, cluster = _scenario_source(args.simulate, args.node)
        node = next((n for n in cluster.nodes if n.name == args.node), None)
        if node is None:
            raise ConfigError(f"{args.simulate}: no node named {args.node!r} to simulate")
        view = source.view
        simulated = SimulatedReader(node, lambda: view().allotments, seed=args.seed)
        reader, pods = simulated, source
        resolver = simulated if args.attribution else None
    else:
        if args.scenario:
            pods, _ = _scenario_source(args.scenario, args.node)
        elif args.kubernetes is not False:
            pods = _kube_source(args.node, args.kubeconfig)
        if args.nvml:
            reader = _nvml_reader(args.call_timeout)
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
    )
    return Wiring(engine=engine, pods=pods)


def _scenario_source(path: Path, node: str) -> tuple[ScenarioPodSource, Cluster]:
    source = ScenarioPodSource(path, node)
    try:
        cluster = source.load()
    except (OSError, ScenarioError) as exc:
        raise ConfigError(str(exc)) from None
    if node not in {n.name for n in cluster.nodes}:
        log.warning("node not in the scenario: no allotments", extra={"node": node})
    return source, cluster


def _nvml_reader(call_timeout_s: float) -> Reader:
    from exporter.nvml import NvmlReader  # loads nothing until the first read

    return NvmlReader(call_timeout_s=call_timeout_s)


def _kube_source(node: str, kubeconfig: str | None) -> PodSource:
    from exporter.pods_kube import KubePodSource

    source: PodSource = KubePodSource(node, kubeconfig=kubeconfig)
    return source


async def serve(wiring: Wiring, host: str | None, port: int) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    if wiring.pods is not None:
        await wiring.pods.start()
    runner = web.AppRunner(make_app(wiring.engine), access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port, reuse_address=True)
    await site.start()
    log.info("listening", extra={"address": f"{host or ''}:{port}", "version": exporter_version()})
    first = asyncio.create_task(wiring.engine.latest(), name="first-collection")  # -> ready
    await stop.wait()
    log.info("shutting down")
    first.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await first
    await runner.cleanup()
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
        print(f"xgpu-exporter: {exc}", file=sys.stderr)
        return 2
    try:
        return asyncio.run(serve(wiring, host, port))
    except OSError as exc:  # e.g. the port is taken
        log.error("cannot serve", extra={"error": str(exc)})
        return 1
