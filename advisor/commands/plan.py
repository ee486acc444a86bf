"""`xgpu-advisor plan`: rebalancing plans verified by simulation (docs/design.md §8)."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from advisor.commands import emit
from advisor.commands.cluster_input import READS, add_cluster_arguments, read_cluster
from advisor.commands.flags.output import add_output
from advisor.commands.flags.scheduler import scheduler_choice
from advisor.commands.flags.values import count, positive_seconds
from advisor.core.gang import judge
from advisor.core.plan import DEFAULT_TIME_BUDGET_S, PlanOptions, plan
from advisor.core.plan.limits import EvictionBudget, NeverEvict
from advisor.core.scaling import pod_remedies, scaling_advice
from advisor.errors import InputError
from advisor.output.plan import add_advice, plan_json
from advisor.render.plan.data import plan_views
from advisor.render.plan.script import kubectl_script

DEFAULT_PICTURES = 50
DEFAULTS = PlanOptions()


def register(sub: Any) -> None:
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
        default=DEFAULTS.max_plan_evictions,
        metavar="N",
        help="evictions any one plan may make (default "
        f"{DEFAULTS.max_plan_evictions}: a plan a person can read, check and undo); a plan "
        "above it is reported as such, with the value it needs",
    )
    parser.add_argument(
        "--max-evictions",
        default=DEFAULTS.max_evictions.text,
        metavar="N|N/card|N/gpu",
        help="evictions for all plans together: a count, or a rate per card the rescued "
        "pods get, or per rescued GPU of memory (default "
        f"{DEFAULTS.max_evictions.text}: on average no rescued card costs more than "
        f"{DEFAULTS.max_evictions.amount:g} restarts, and a 128 MiB pod counts as much as a "
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
    parser.add_argument(
        "--plan-work",
        type=count(1),
        default=DEFAULTS.work,
        metavar="N",
        help="the search's budget, in simulated placements (default "
        f"{DEFAULTS.work:,}); the same input gives the same plans on any machine",
    )
    parser.add_argument(
        "--time-budget",
        type=positive_seconds,
        default=DEFAULT_TIME_BUDGET_S,
        metavar="SECONDS",
        help="a safety stop only: the search ends after this long even with work left, "
        f"and says so (default {DEFAULT_TIME_BUDGET_S:g})",
    )
    parser.add_argument(
        "--pictures",
        type=count(0),
        default=DEFAULT_PICTURES,
        metavar="N",
        help=f"before/after pictures for the first N plans (html, markdown; default "
        f"{DEFAULT_PICTURES})",
    )
    parser.set_defaults(func=run)


def options_from(args: argparse.Namespace) -> PlanOptions:
    """The plan options the flags ask for; InputError (exit 2) naming the flag otherwise."""
    # --time-budget, --max-plan-evictions and --plan-work are in range by their flag types.
    try:
        budget = EvictionBudget.parse(args.max_evictions)
        never = tuple(NeverEvict.parse(text) for text in args.never_evict)
    except ValueError as error:
        flag = "--never-evict" if "key=value" in str(error) else "--max-evictions"
        raise InputError(f"{flag}: {error}") from None
    return PlanOptions(
        max_plan_evictions=args.max_plan_evictions,
        max_evictions=budget,
        never_evict=never,
        work=args.plan_work,
        time_budget_s=args.time_budget,
    )


def run(args: argparse.Namespace) -> int:
    options = options_from(args)
    read = read_cluster(args, scheduler_choice(args))
    cluster = read.cluster
    diagnosis = judge(cluster, node_detail_limit=0)
    report = plan(cluster, options, clock=time.monotonic, diagnosis=diagnosis)
    data = plan_json(report, cluster, *scaling_advice(cluster, report, diagnosis))
    add_advice(data["unresolved"], pod_remedies(diagnosis, report))
    if args.format == "json":
        text = json.dumps(data, indent=2)
    elif args.format == "kubectl":
        text = kubectl_script(data)
    else:
        views = plan_views(cluster, report, max(args.pictures, 0))
        if args.format == "markdown":
            from advisor.render.plan.markdown import render_plan_markdown

            text = render_plan_markdown(data, views)
        else:
            from advisor.render.plan.html import render_plan_html

            title = f"xgpu-advisor plans: {read.title}"
            text = render_plan_html(data, views, title=title)
    emit(text, args.output)
    return 0
