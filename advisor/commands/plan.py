"""`xgpu-advisor plan`: rebalancing plans verified by simulation (docs/design.md §8)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from advisor.commands import (
    InputError,
    add_output,
    add_scheduler_argument,
    emit,
    scheduler_choice,
)
from advisor.core.diagnose import diagnose
from advisor.core.plan import DEFAULT_TIME_BUDGET_S, PlanOptions, plan
from advisor.core.scaling import scaling_advice
from advisor.render.plan_data import kubectl_script, plan_json, plan_views
from advisor.scenario import load_scenario

DEFAULT_PICTURES = 50
DEFAULTS = PlanOptions()


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "plan", help="evictions that let Pending GPU pods run, verified by simulation"
    )
    parser.add_argument("--scenario", required=True, type=Path, help="scenario file (YAML or JSON)")
    add_scheduler_argument(parser)
    add_output(parser, ("markdown", "json", "html", "kubectl"))
    parser.add_argument(
        "--time-budget",
        type=float,
        default=DEFAULT_TIME_BUDGET_S,
        metavar="SECONDS",
        help=f"stop searching after this long (default {DEFAULT_TIME_BUDGET_S:g})",
    )
    parser.add_argument(
        "--max-evictions-per-gpu",
        type=float,
        default=DEFAULTS.max_evictions_per_gpu,
        metavar="N",
        help="evictions per rescued GPU, all plans together "
        f"(default {DEFAULTS.max_evictions_per_gpu:g})",
    )
    parser.add_argument(
        "--max-plan-evictions-per-gpu",
        type=float,
        default=DEFAULTS.max_plan_evictions_per_gpu,
        metavar="N",
        help=f"the same for any one plan (default {DEFAULTS.max_plan_evictions_per_gpu:g})",
    )
    parser.add_argument(
        "--pictures",
        type=int,
        default=DEFAULT_PICTURES,
        metavar="N",
        help=f"before/after pictures for the first N plans (html, markdown; default "
        f"{DEFAULT_PICTURES})",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.time_budget <= 0:
        raise InputError(f"--time-budget must be positive, got {args.time_budget:g}")
    if args.max_evictions_per_gpu <= 0 or args.max_plan_evictions_per_gpu <= 0:
        raise InputError(
            "--max-evictions-per-gpu and --max-plan-evictions-per-gpu must be positive"
        )
    cluster = load_scenario(args.scenario, scheduler=scheduler_choice(args))
    options = PlanOptions(
        time_budget_s=args.time_budget,
        max_evictions_per_gpu=args.max_evictions_per_gpu,
        max_plan_evictions_per_gpu=args.max_plan_evictions_per_gpu,
    )
    diagnosis = diagnose(cluster, node_detail_limit=0)
    report = plan(cluster, options, clock=time.monotonic, diagnosis=diagnosis)
    data = plan_json(report, cluster, *scaling_advice(cluster, report, diagnosis))
    if args.format == "json":
        text = json.dumps(data, indent=2)
    elif args.format == "kubectl":
        text = kubectl_script(data)
    else:
        views = plan_views(cluster, report, max(args.pictures, 0))
        if args.format == "markdown":
            from advisor.render.plan_markdown import render_plan_markdown

            text = render_plan_markdown(data, views)
        else:
            from advisor.render.plan_html import render_plan_html

            title = f"xgpu-advisor plans: {args.scenario.name}"
            text = render_plan_html(data, views, title=title)
    emit(text, args.output)
    return 0
