"""Every subcommand's flags, apart from the code that runs it: building the parser imports
only this package and `advisor.defaults`, so that `--help`, a bad flag and every command
before it reads its input start fast (README, "Start-up"). `cli` imports the chosen
command's module (`advisor.commands.<name>`, its `run`) only once the flags are parsed."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from advisor.commands.flags.cluster import READS, add_cluster_arguments
from advisor.commands.flags.output import add_output
from advisor.commands.flags.rightsizing import add_rightsizing_arguments, duration
from advisor.commands.flags.values import count, count_or_all, positive_duration, positive_seconds
from advisor.connections import add_limit_arguments
from advisor.defaults import (
    BUILT_IN_PROFILES,
    DEFAULT_MAX_EVICTIONS,
    DEFAULT_MAX_PLAN_EVICTIONS,
    DEFAULT_NODE_DETAIL,
    DEFAULT_TIME_BUDGET_S,
    DEFAULT_WORK,
    NODE_POLICIES,
    RESOURCE_MODES,
)

DEFAULT_PICTURES = 50
DEFAULT_KEEP = 30
DEFAULT_LISTEN = ":19401"
DEFAULT_MAX_EVICTIONS_TEXT = f"{DEFAULT_MAX_EVICTIONS:g}/card"


def causes(text: str) -> frozenset[str]:
    """--fail-on: every cause, the job layer's too (a summary counts those only when found)."""
    from advisor.core.diagnosis import EVERY_CAUSE  # the model, only once the flag is given

    chosen = frozenset(c.strip() for c in text.split(",") if c.strip())
    unknown = sorted(chosen - set(EVERY_CAUSE))
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(
            f"unknown cause {', '.join(unknown) or '(none)'}; known: {', '.join(EVERY_CAUSE)}"
        )
    return chosen


def _diagnose(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "diagnose",
        help="why each Pending GPU pod is Pending (live, or from a scenario file)",
        description=READS,
    )
    add_cluster_arguments(parser)
    add_output(parser, ("markdown", "json", "html"))
    parser.add_argument(
        "--node-detail",
        type=count_or_all,
        default=DEFAULT_NODE_DETAIL,
        metavar="N",
        help="list the reasons of at most N nodes per pod, nearest to fitting first "
        f"(default {DEFAULT_NODE_DETAIL}; -1 for all); counts always cover every node",
    )


def _plan(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "plan",
        help="evictions that let Pending GPU pods run, verified by simulation (live, or "
        "from a scenario file)",
        description=READS,
    )
    add_cluster_arguments(parser)
    add_output(parser, ("markdown", "json", "html", "kubectl"))
    parser.add_argument(
        "--max-plan-evictions",
        type=count(1),
        default=DEFAULT_MAX_PLAN_EVICTIONS,
        metavar="N",
        help="evictions any one plan may make (default "
        f"{DEFAULT_MAX_PLAN_EVICTIONS}: a plan a person can read, check and undo); a plan "
        "above it is reported as such, with the value it needs",
    )
    parser.add_argument(
        "--max-evictions",
        default=DEFAULT_MAX_EVICTIONS_TEXT,
        metavar="N|N/card|N/gpu",
        help="evictions for all plans together: a count, or a rate per card the rescued "
        "pods get, or per rescued GPU of memory (default "
        f"{DEFAULT_MAX_EVICTIONS_TEXT}: on average no rescued card costs more than "
        f"{DEFAULT_MAX_EVICTIONS:g} restarts, and a 128 MiB pod counts as much as a "
        "whole-card one)",
    )
    parser.add_argument(
        "--never-evict",
        action="append",
        default=[],
        metavar="KIND|KEY=VALUE",
        help="never evict pods of this owner kind (StatefulSet) or with this label "
        "(team=search); repeatable; besides kube-system pods, xgpu.io/do-not-disrupt and "
        "exhausted disruption budgets",
    )
    add_plan_work(parser)
    parser.add_argument(
        "--time-budget",
        type=positive_seconds,
        default=DEFAULT_TIME_BUDGET_S,
        metavar="SECONDS",
        help="a safety stop only: past this long no further run of the search starts (a "
        f"run ends by work alone), and it says so (default {DEFAULT_TIME_BUDGET_S:g})",
    )
    parser.add_argument(
        "--pictures",
        type=count(0),
        default=DEFAULT_PICTURES,
        metavar="N",
        help=f"before/after pictures for the first N plans (html, markdown; default "
        f"{DEFAULT_PICTURES})",
    )


def add_plan_work(parser: argparse.ArgumentParser) -> None:
    """`--plan-work`, the plan search's bound (`plan`, `report`)."""
    parser.add_argument(
        "--plan-work",
        type=count(1),
        default=DEFAULT_WORK,
        metavar="N",
        help="the plan search's budget, in simulated placements (default "
        f"{DEFAULT_WORK:,}); the same input gives the same plans on any machine",
    )


def _report(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "report", help="gather, diagnose, plan and advise; write reports and metrics (cron)"
    )
    add_cluster_arguments(parser)
    parser.add_argument(
        "--output-dir", type=Path, help="write this run's reports here (the latest only)"
    )
    parser.add_argument(
        "--reports",
        type=Path,
        metavar="DIR",
        help="the reports' home: each run in a folder of its own, an index.html, the last "
        "--keep runs kept (`xgpu-advisor serve --reports DIR` serves it)",
    )
    parser.add_argument(
        "--keep",
        type=count(1),
        default=DEFAULT_KEEP,
        metavar="N",
        help=f"runs kept under --reports (default {DEFAULT_KEEP})",
    )
    parser.add_argument("--textfile", type=Path, help="write the advisor's series here")
    parser.add_argument("--pushgateway", metavar="URL", help="push the advisor's series here")
    parser.add_argument(
        "--history",
        type=duration,
        default=duration("24h"),
        metavar="WINDOW",
        help="usage history for right-sizing and the usage chart (Prometheus only; 0: off)",
    )
    parser.add_argument(
        "--history-step", type=positive_duration, default=duration("5m"), metavar="STEP"
    )
    parser.add_argument(
        "--time-budget",
        type=positive_seconds,
        default=60.0,
        metavar="SECONDS",
        help="for plan search",
    )
    add_plan_work(parser)
    parser.add_argument(
        "--fail-on",
        type=causes,
        metavar="CAUSE[,CAUSE]",
        help="exit 1 when Pending pods with these causes reach --fail-threshold (alerting)",
    )
    parser.add_argument("--fail-threshold", type=int, default=1, metavar="N")
    add_rightsizing_arguments(parser)


def _snapshot(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "snapshot", help="write the live cluster state as a scenario file"
    )
    add_cluster_arguments(parser, scenario=False)  # it writes one
    parser.add_argument(
        "--output",
        required=True,
        type=Path,
        help="scenario file to write atomically (JSON when it ends in .json, else YAML)",
    )


def _whatif(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "whatif",
        help="Pending pods placed and fragmentation under each scheduler policy (live, or "
        "from a scenario file)",
        description=READS,
    )
    add_cluster_arguments(parser, several_schedulers=True)
    add_output(parser, ("markdown", "json"))


def _replay(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "replay", help="replay an openb trace onto the scheduler model"
    )
    parser.add_argument(
        "--nodes",
        required=True,
        type=Path,
        help="node list CSV (sn, gpu, model; cpu_milli, memory_mib with --resources all)",
    )
    parser.add_argument("--pods", required=True, type=Path, help="pod list CSV (openb columns)")
    parser.add_argument(
        "--scheduler",
        choices=BUILT_IN_PROFILES,
        default="cce",
        help="whose rules place the pods (default: cce); outside cce gpu_milli is read as "
        "a share of each card",
    )
    parser.add_argument(
        "--node-policy",
        choices=NODE_POLICIES,
        help="default: the profile's (binpack for all three)",
    )
    parser.add_argument(
        "--card-policy",
        choices=(*NODE_POLICIES, "legacy"),
        help="default: the profile's (cce binpack, hami spread, volcano-vgpu legacy)",
    )
    parser.add_argument(
        "--resources",
        choices=RESOURCE_MODES,
        default="gpu",
        help="gpu: GPUs only; all: also the nodes' and pods' cpu and memory, "
        "and the CPU-only pods (default: gpu)",
    )
    add_output(parser, ("markdown", "json"))
    parser.add_argument(
        "--write-scenario", type=Path, metavar="FILE", help="save the end state as a scenario"
    )


def _serve(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "serve", help="serve the reports' home (`report --reports DIR`) read-only over HTTP"
    )
    parser.add_argument(
        "--reports", type=Path, required=True, metavar="DIR", help="the reports' home"
    )
    parser.add_argument(
        "--listen",
        default=DEFAULT_LISTEN,
        metavar="[HOST]:PORT",
        help=f"address to listen on (default {DEFAULT_LISTEN}: every interface)",
    )
    # The exporter's bounds (advisor.connections): a slow, idle or flooding client holds a
    # socket for a while, never for good, and never locks the others out.
    add_limit_arguments(parser, "", positive_duration, count(1))


# name -> its flags, in the order `--help` lists the commands
COMMANDS: dict[str, Callable[[Any], None]] = {
    "diagnose": _diagnose,
    "plan": _plan,
    "report": _report,
    "snapshot": _snapshot,
    "whatif": _whatif,
    "replay": _replay,
    "serve": _serve,
}
