"""`xgpu-advisor whatif`: the scenario under each node × card policy (binpack, spread)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from advisor.commands import add_output, emit
from advisor.core.whatif import what_if, whatif_json
from advisor.scenario import load_scenario

GIB = 1024


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "whatif", help="Pending pods placed and fragmentation under each scheduler policy"
    )
    parser.add_argument("--scenario", required=True, type=Path, help="scenario file (YAML or JSON)")
    add_output(parser, ("markdown", "json"))
    parser.set_defaults(func=run)


def _frag(f: dict[str, Any]) -> str:
    return f"{f['ratio']:.1%} of {f['free_mib'] / GIB:,.1f} GiB"


def markdown(data: dict[str, Any]) -> str:
    current = data["current"]
    policy = current["policy"]
    lines = [
        "# Scheduler policy what-if",
        "",
        f"Now ({policy['node']} nodes, {policy['card']} cards): {current['running']} running, "
        f"{current['pending']} Pending ({current['pending_mib'] / GIB:,.1f} GiB); "
        f"fragmentation {_frag(current['fragmentation'])} free.",
        "",
        "## The Pending queue, running pods where they are",
        "",
        "| node policy | card policy | Pending placed | GiB placed | fragmentation after "
        "| stranded after |",
        "|---|---|---|---|---|---|",
    ]
    for p in data["policies"]:
        f = p["fragmentation"]
        lines.append(
            f"| {p['node']} | {p['card']} | {p['pending_placed']} of {current['pending']} "
            f"| {p['pending_placed_mib'] / GIB:,.1f} | {_frag(f)} "
            f"| {f['stranded_mib'] / GIB:,.1f} GiB |"
        )
    lines += [
        "",
        "## Every pod placed again from empty (running first, then the queue)",
        "",
        "| node policy | card policy | pods placed | running lost | Pending placed "
        "| fragmentation after |",
        "|---|---|---|---|---|---|",
    ]
    for p in data["policies"]:
        r = p["repack"]
        lines.append(
            f"| {p['node']} | {p['card']} | {r['placed']} of {r['pods']} | {r['running_lost']} "
            f"| {r['pending_placed']} | {_frag(r['fragmentation'])} |"
        )
    lines += [
        "",
        "Fragmentation is FGD's measure (ATC '23): free memory the workload's typical request "
        "shapes cannot use, as a share of all free memory on healthy cards.",
        "",
    ]
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    data = whatif_json(what_if(load_scenario(args.scenario)))
    text = json.dumps(data, indent=2) if args.format == "json" else markdown(data)
    emit(text, args.output)
    return 0
