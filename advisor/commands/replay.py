"""`xgpu-advisor replay`: the openb trace on the scheduler model (docs/design.md §7)."""

from __future__ import annotations

import argparse
import json

from advisor.commands import emit
from advisor.core.fragmentation import fragmentation
from advisor.core.model import Policy, Scheduler
from advisor.errors import InputError
from advisor.output.fragmentation import replay_fragmentation_json
from advisor.replay import read_trace, replay
from advisor.scenario import save_scenario
from advisor.scenario.profile import defaults
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
    scheduler = Scheduler(args.scheduler)
    default, card_policies, _ = defaults(scheduler.profile)
    card = args.card_policy or default.card
    if card not in card_policies:
        raise InputError(
            f"--card-policy {card}: {scheduler.profile} knows {', '.join(card_policies)}"
        )
    policy = Policy(node=args.node_policy or default.node, card=card)
    result = replay(read_trace(args.nodes, args.pods, policy, args.resources, scheduler))
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
