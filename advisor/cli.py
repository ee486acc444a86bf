"""`xgpu-advisor`: explain Pending GPU pods, replay traces (DESIGN.md §4, §5, §7)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from advisor.core.diagnose import DEFAULT_NODE_DETAIL, diagnose
from advisor.core.model import POLICIES, Policy
from advisor.output import cluster_view, diagnosis_json
from advisor.replay import TraceError, load_trace, replay
from advisor.scenario import ScenarioError, load_scenario, save_scenario, write_atomic

EXIT_OK, EXIT_INPUT = 0, 2


class InputError(Exception):
    """Bad input or unreachable source: exit code 2 with this message."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="xgpu-advisor",
        description="Explain Pending vGPU pods and advise on shared-GPU clusters.",
    )
    sub = parser.add_subparsers(dest="command", required=True)

    d = sub.add_parser("diagnose", help="why each Pending GPU pod is Pending")
    d.add_argument("--scenario", required=True, type=Path, help="scenario file (YAML or JSON)")
    d.add_argument("--format", choices=("json", "markdown", "html"), default="markdown")
    d.add_argument("--output", type=Path, help="write here (atomically) instead of stdout")
    d.add_argument(
        "--node-detail",
        type=int,
        default=DEFAULT_NODE_DETAIL,
        metavar="N",
        help="list the reasons of at most N nodes per pod, nearest to fitting first "
        f"(default {DEFAULT_NODE_DETAIL}; -1 for all); counts always cover every node",
    )

    r = sub.add_parser("replay", help="replay an openb trace onto the scheduler model")
    r.add_argument("--nodes", required=True, type=Path, help="node list CSV (sn, gpu, model)")
    r.add_argument("--pods", required=True, type=Path, help="pod list CSV (openb columns)")
    r.add_argument("--node-policy", choices=POLICIES, default="binpack")
    r.add_argument("--card-policy", choices=POLICIES, default="binpack")
    r.add_argument("--format", choices=("json", "markdown"), default="markdown")
    r.add_argument("--output", type=Path, help="write here (atomically) instead of stdout")
    r.add_argument(
        "--write-scenario", type=Path, metavar="FILE", help="save the end state as a scenario"
    )
    return parser


def _emit(text: str, output: Path | None) -> None:
    if output is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return
    try:
        write_atomic(output, text)
    except OSError as err:
        raise InputError(f"{output}: cannot write: {err.strerror or err}") from None


def _run_diagnose(args: argparse.Namespace) -> None:
    cluster = load_scenario(args.scenario)
    limit = None if args.node_detail < 0 else args.node_detail
    diagnosis = diagnose(cluster, node_detail_limit=limit)
    data = diagnosis_json(diagnosis)
    if args.format == "json":
        text = json.dumps(data, indent=2)
    elif args.format == "markdown":
        from advisor.render.markdown import render_markdown

        text = render_markdown(data, cluster_view(cluster, diagnosis))
    else:
        from advisor.render.html import render_html

        title = f"xgpu-advisor diagnosis: {args.scenario.name}"
        text = render_html(data, cluster_view(cluster, diagnosis), title=title)
    _emit(text, args.output)


def _replay_markdown(figures: dict[str, Any]) -> str:
    failed = ", ".join(f"{n} {cause}" for cause, n in figures["failed"].items()) or "none"
    policy = figures["policy"]
    return "\n".join(
        [
            f"# Replay ({policy['node']} nodes, {policy['card']} cards)",
            "",
            "| figure | value |",
            "|---|---|",
            f"| GPU pods replayed | {figures['pods']} |",
            f"| capacity (GPUs) | {figures['capacity_gpus']} |",
            f"| demand (GPUs) | {figures['demand_gpus']:.2f} |",
            f"| placed (GPUs) | {figures['placed_gpus']:.2f} |",
            f"| allocation ratio | {figures['allocation_ratio']:.2%} |",
            f"| Pending pods | {failed} |",
            "",
        ]
    )


def _run_replay(args: argparse.Namespace) -> None:
    policy = Policy(node=args.node_policy, card=args.card_policy)
    result = replay(load_trace(args.nodes, args.pods, policy))
    figures = result.figures()
    text = json.dumps(figures, indent=2) if args.format == "json" else _replay_markdown(figures)
    if args.write_scenario is not None:
        try:
            save_scenario(args.write_scenario, result.end_state())
        except OSError as err:
            raise InputError(
                f"{args.write_scenario}: cannot write: {err.strerror or err}"
            ) from None
    _emit(text, args.output)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "diagnose":
            _run_diagnose(args)
        elif args.command == "replay":
            _run_replay(args)
    except (ScenarioError, TraceError, InputError) as err:
        print(f"xgpu-advisor: error: {err}", file=sys.stderr)
        return EXIT_INPUT
    return EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
