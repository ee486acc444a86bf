"""The scenario limits as flags, for every command that reads a scenario file: how large a
file, and how many nodes, cards and pods the tools take before refusing it (one line naming
the flag that raises the limit)."""

from __future__ import annotations

import argparse

from advisor.commands.flags.values import byte_size, count
from advisor.defaults import DEFAULT_LIMITS, ScenarioLimits


def add_scenario_limits(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("scenario limits")
    group.add_argument(
        "--scenario.max-bytes",
        dest="scenario_max_bytes",
        type=byte_size,
        default=DEFAULT_LIMITS.max_bytes,
        metavar="SIZE",
        help=f"refuse a larger scenario file, unread ({DEFAULT_LIMITS.max_bytes // 2**20}MiB)",
    )
    for what, default in (
        ("nodes", DEFAULT_LIMITS.max_nodes),
        ("cards", DEFAULT_LIMITS.max_cards),
        ("pods", DEFAULT_LIMITS.max_pods),
    ):
        group.add_argument(
            f"--scenario.max-{what}",
            dest=f"scenario_max_{what}",
            type=count(1),
            default=default,
            metavar="N",
            help=f"refuse a scenario with more {what} ({default:,})",
        )


def scenario_limits(args: argparse.Namespace) -> ScenarioLimits:
    return ScenarioLimits(
        max_bytes=args.scenario_max_bytes,
        max_nodes=args.scenario_max_nodes,
        max_cards=args.scenario_max_cards,
        max_pods=args.scenario_max_pods,
    )
