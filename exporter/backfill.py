"""`python -m exporter.backfill`: one pod's simulated vGPU series over a past window, as
OpenMetrics with timestamps, for `promtool tsdb create-blocks-from openmetrics`.

A fresh Prometheus holds seconds of history, and right-sizing advises only from a day of it
(24 h and 288 samples): the demo backfills one pod's day so that the gate really passes, on
data Prometheus serves like any other. The values are the simulated exporter's own: the same
`SimulatedReader` (a seeded sine of the wall clock), read at each past instant, joined by the
same `build_snapshot` and named by the same metric families, so that the backfilled series
runs on into what the live exporter then serves. `--label` adds the labels the scrape would
(job, instance, node), so that both are one series.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import cast

from prometheus_client import CollectorRegistry
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.openmetrics.exposition import ALLOWUTF8, generate_latest

from advisor.metricnames import VGPU_LABELS
from advisor.scenario import ScenarioError
from exporter.metrics import _vgpu_families
from exporter.scenario_pods import ScenarioPodSource
from exporter.simulate import SimulatedReader
from exporter.snapshot import build_snapshot


class _Families:
    """A collector of ready families (the registry only asks it to collect)."""

    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterator[Metric]:
        return iter(self.families)

    def describe(self) -> Iterator[Metric]:
        return iter(())


def backfill(
    scenario: Path,
    node: str,
    pod: str,
    times: Sequence[float],
    labels: dict[str, str],
    seed: int = 0,
) -> bytes:
    """The vGPU families of `pod` ("namespace/name") on `node` at each of `times`; raises
    ValueError when the scenario runs no such pod there."""
    source = ScenarioPodSource(scenario, node)
    cluster = source.load()
    where = next((n for n in cluster.nodes if n.name == node), None)
    if where is None:
        raise ValueError(f"{scenario}: no node named {node!r}")
    view = source.view()
    now = [0.0]
    reader = SimulatedReader(where, lambda: view.allotments, seed=seed, clock=lambda: now[0])
    extra = sorted(labels.items())
    names = [*VGPU_LABELS, *(k for k, _ in extra)]
    out: dict[str, GaugeMetricFamily] = {}
    for stamp in times:
        now[0] = stamp
        reading = reader.read()
        snapshot = build_snapshot(
            node=node,
            collected_at=stamp,
            reading=reading,
            pods=view,
            owners=reader.owners(p.pid for p in reading.processes),
            collectors=(),
        )
        rows = tuple(v for v in snapshot.vgpus if f"{v.namespace}/{v.pod}" == pod)
        if not rows:
            raise ValueError(f"{scenario}: no vGPU of {pod} on {node}")
        for family in _vgpu_families(rows):
            into = out.setdefault(
                family.name, GaugeMetricFamily(family.name, family.documentation, labels=names)
            )
            for sample in family.samples:
                values = [sample.labels[k] for k in VGPU_LABELS] + [v for _, v in extra]
                into.add_metric(values, sample.value, timestamp=stamp)
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Families(list(out.values())))
    body = generate_latest(registry, escaping=ALLOWUTF8)  # type: ignore[no-untyped-call]
    return cast(bytes, body)


def _label(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m exporter.backfill", description=__doc__)
    parser.add_argument("--simulate", type=Path, required=True, metavar="SCENARIO")
    parser.add_argument("--node", required=True)
    parser.add_argument("--pod", required=True, metavar="NAMESPACE/NAME")
    parser.add_argument("--start", type=float, required=True, help="unix seconds")
    parser.add_argument("--end", type=float, required=True, help="unix seconds (excluded)")
    parser.add_argument("--step", type=float, default=60.0, help="seconds between samples (60)")
    parser.add_argument("--simulate.seed", dest="seed", type=int, default=0)
    parser.add_argument("--label", type=_label, action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--output", type=Path, required=True)
    args = parser.parse_args(argv)
    if not args.step > 0 or not args.end > args.start:
        parser.error("need --step > 0 and --end after --start")
    count = int((args.end - args.start) // args.step)
    times = [args.start + i * args.step for i in range(count)]
    try:
        body = backfill(args.simulate, args.node, args.pod, times, dict(args.label), args.seed)
    except (OSError, ScenarioError, ValueError) as exc:
        print(f"xgpu-backfill: error: {exc}", file=sys.stderr)
        return 2
    args.output.write_bytes(body)
    return 0


if __name__ == "__main__":
    sys.exit(main())
