"""Where a command's cluster comes from, as flags: `--scenario` and its limits, the live
sources, `--scheduler`, `--pods-from` (read by `commands.cluster_input`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from advisor.commands.flags.scenario import add_scenario_limits
from advisor.commands.flags.sources import add_source_arguments

# The `--help` description of the commands that read a cluster and print what they find.
READS = (
    "Reads the cluster live (--prometheus URL or --exporters URL,..., with --kubernetes for "
    "Pending pods, owners and the nodes' cpu and memory) or from a scenario file (--scenario "
    "FILE, e.g. a snapshot): exactly one of --scenario, --prometheus, --exporters."
)


def add_cluster_arguments(
    parser: argparse.ArgumentParser, *, scenario: bool = True, several_schedulers: bool = False
) -> None:
    """`--scenario` (unless `scenario` is False: snapshot writes one) and its limits, the
    live sources and their access, caps and timeouts, `--scheduler`, `--pods-from`."""
    if scenario:
        parser.add_argument(
            "--scenario",
            type=Path,
            metavar="FILE",
            help="read the cluster from this scenario file (YAML or JSON) instead of live "
            "sources, e.g. a snapshot",
        )
        add_scenario_limits(parser)
    else:
        parser.set_defaults(scenario=None)
    add_source_arguments(parser, required=not scenario, several_schedulers=several_schedulers)
    add_pods_from_argument(parser)


def add_pods_from_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--pods-from",
        type=Path,
        metavar="FILE",
        help="Pending pods, owners and priorities of running ones, PodGroups and Queues, "
        "HorizontalPodAutoscalers, from this scenario file instead of the Kubernetes API "
        "(hosts without Kubernetes, demos)",
    )
