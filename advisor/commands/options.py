"""Command-line flags for the live sources, shared by every command that reads them.

The flags are the CLI's; `advisor.sources` takes the plain `SourceConfig` that
`source_config` makes of them, and knows nothing of argparse.
"""

from __future__ import annotations

import argparse

from advisor.commands import add_scheduler_argument, scheduler_choice
from advisor.commands.flag_types import count, positive_seconds
from advisor.core.model import PolicyName
from advisor.errors import InputError
from advisor.scenario_profile import NODE_POLICIES
from advisor.sources.exporters import parse_exporter_list
from advisor.sources.gather import DEFAULT_STALE_AFTER_S, DEFAULT_TIMEOUT_S, SourceConfig

CARD_POLICIES: tuple[PolicyName, ...] = ("binpack", "spread", "legacy")  # legacy: volcano-vgpu


def add_source_arguments(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    metrics = parser.add_mutually_exclusive_group(required=required)
    metrics.add_argument(
        "--prometheus", metavar="URL", help="Prometheus (or any store with its HTTP API)"
    )
    metrics.add_argument(
        "--exporters", metavar="URL[,URL...]", help="scrape these xgpu exporters directly"
    )
    parser.add_argument(
        "--kubernetes",
        action="store_true",
        help="read Pending pods, priorities, owners, every pod's cpu and memory requests and "
        "node constraints, and the nodes' allocatable, labels, taints and cordons from the "
        "Kubernetes API (in-cluster, or the kubeconfig)",
    )
    parser.add_argument(
        "--kubeconfig", metavar="FILE", help="kubeconfig file (implies --kubernetes)"
    )
    parser.add_argument(
        "--stale-after",
        type=positive_seconds,
        default=DEFAULT_STALE_AFTER_S,
        metavar="SECONDS",
        help=f"series older than this are reported and left out ({DEFAULT_STALE_AFTER_S:g})",
    )
    parser.add_argument(
        "--source-timeout",
        type=positive_seconds,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"per request ({DEFAULT_TIMEOUT_S:g})",
    )
    # None: the scheduler profile's default (cce binpack/binpack 20, hami binpack/spread 10,
    # volcano-vgpu binpack/legacy 10).
    parser.add_argument(
        "--node-policy", choices=NODE_POLICIES, help="default: the scheduler profile's"
    )
    parser.add_argument(
        "--card-policy",
        choices=CARD_POLICIES,
        help="default: the scheduler profile's (legacy: volcano-vgpu's n-1..0 walk)",
    )
    parser.add_argument(
        "--max-vgpus-per-card", type=count(1), metavar="N", help="default: the scheduler profile's"
    )
    add_scheduler_argument(parser)  # every command reading a live source judges by a profile


def source_config(args: argparse.Namespace) -> SourceConfig:
    exporters = parse_exporter_list(args.exporters) if args.exporters is not None else ()
    if args.exporters is not None and not exporters:
        raise InputError("--exporters: no URL given")
    return SourceConfig(
        prometheus=args.prometheus,
        exporters=exporters,
        kubernetes=args.kubernetes or args.kubeconfig is not None,
        kubeconfig=args.kubeconfig,
        stale_after_s=args.stale_after,
        timeout_s=args.source_timeout,
        scheduler=scheduler_choice(args) or "auto",
        node_policy=args.node_policy,
        card_policy=args.card_policy,
        max_vgpus_per_card=args.max_vgpus_per_card,
    )
