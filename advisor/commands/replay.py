"""`xgpu-advisor replay`: the openb trace on the scheduler model (docs/design.md §7)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from advisor.commands import emit
from advisor.defaults import BUILT_IN_CARD_POLICIES
from advisor.errors import InputError
from advisor.trace_rows import read_trace_rows

# The model (the core, numpy, the output) loads once the trace is read, so that a missing or
# unreadable file is refused at once (README "Start-up").
if TYPE_CHECKING:
    from advisor.schemas import ReplayJson


def markdown(figures: ReplayJson) -> str:
    failed = ", ".join(f"{n} {cause}" for cause, n in figures["failed"].items()) or "none"
    policy, frag = figures["policy"], figures["fragmentation"]
    return "\n".join(
        [
            f"# Replay ({figures['scheduler']['profile']}: {policy['node']} nodes, "
            f"{policy['card']} cards{_scope(figures)})",
            "",
            "| figure | value |",
            "|---|---|",
            f"| GPU pods replayed | {figures['pods']} |",
            f"| capacity (GPUs) | {figures['capacity_gpus']} |",
            f"| demand (GPUs) | {figures['demand_gpus']:.2f} |",
            f"| placed (GPUs) | {figures['placed_gpus']:.2f} |",
            f"| allocation ratio | {figures['allocation_ratio']:.2%} |",
            f"| Pending pods | {failed} |",
            *_node_rows(figures),
            f"| free (GPUs) | {frag['free_gpus']:.2f} |",
            f"| FGD fragmentation (GPUs) | {frag['fragment_gpus']:.2f} "
            f"({frag['fragmentation_ratio']:.1%} of free) |",
            f"| stranded (GPUs) | {frag['stranded_gpus']:.2f} |",
            "",
        ]
    )


def _scope(figures: ReplayJson) -> str:
    return ", cpu and memory too" if figures["resources"] == "all" else ""


def _node_rows(figures: ReplayJson) -> list[str]:
    """With `--resources all`: the CPU-only pods and how much cpu and memory is requested."""
    if figures["resources"] != "all":
        return []
    cpu_pods, share = figures["cpu_only_pods"], figures["node_allocation"]
    return [
        f"| CPU-only pods placed | {cpu_pods['placed']} of {cpu_pods['replayed']} |",
        f"| cpu requested | {share['cpu']:.2%} of allocatable |",
        f"| memory requested | {share['memory']:.2%} of allocatable |",
    ]


def run(args: argparse.Namespace) -> int:
    # The profile's default card policy is one it knows; a given one is checked here.
    card_policies = BUILT_IN_CARD_POLICIES[args.scheduler]
    if args.card_policy is not None and args.card_policy not in card_policies:
        raise InputError(
            f"--card-policy {args.card_policy}: {args.scheduler} knows {', '.join(card_policies)}"
        )
    rows = read_trace_rows(args.nodes, args.pods, args.resources == "all")
    from advisor.core.fragmentation import fragmentation
    from advisor.core.model import Policy, Scheduler
    from advisor.output.fragmentation import replay_fragmentation_json
    from advisor.replay import replay, trace_from_rows
    from advisor.scenario import save_scenario
    from advisor.scenario.profile import defaults

    scheduler = Scheduler(args.scheduler)
    default, _, _ = defaults(scheduler.profile)
    policy = Policy(node=args.node_policy or default.node, card=args.card_policy or default.card)
    result = replay(trace_from_rows(rows, policy, args.resources, scheduler))
    figures = result.figures()
    figures["fragmentation"] = replay_fragmentation_json(fragmentation(result.end_state()))
    text = json.dumps(figures, indent=2) if args.format == "json" else markdown(figures)
    if args.write_scenario is not None:
        try:
            save_scenario(args.write_scenario, result.end_state())
        except OSError as err:
            raise InputError(
                f"{args.write_scenario}: cannot write: {err.strerror or err}"
            ) from None
    emit(text, args.output)
    return 0
