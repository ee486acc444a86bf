"""`xgpu-advisor plan`: rebalancing plans verified by simulation (docs/design.md §8)."""

from __future__ import annotations

import argparse
import json
import time
from typing import TYPE_CHECKING

from advisor.commands import emit
from advisor.commands.cluster_input import read_cluster
from advisor.commands.flags.scheduler import scheduler_choice
from advisor.defaults import Per, eviction_budget_parts, never_evict_parts
from advisor.errors import InputError

# The model (the core, the output, the renderers) loads once the cluster is read, so that a
# missing or unreadable input is refused at once (README "Start-up").
if TYPE_CHECKING:
    from advisor.core.plan import PlanOptions

# --max-evictions and --never-evict, checked before the input is read, as (amount, per) and
# (kind, key, value) each
Limits = tuple[tuple[float, Per], tuple[tuple[str | None, str | None, str | None], ...]]


def checked_limits(args: argparse.Namespace) -> Limits:
    """--max-evictions and --never-evict as the plan options take them; InputError (exit 2)
    naming the flag otherwise. Light: a bad value is refused before the model loads."""
    # --time-budget, --max-plan-evictions and --plan-work are in range by their flag types.
    try:
        budget = eviction_budget_parts(args.max_evictions)
        never = tuple(never_evict_parts(text) for text in args.never_evict)
    except ValueError as error:
        flag = "--never-evict" if "key=value" in str(error) else "--max-evictions"
        raise InputError(f"{flag}: {error}") from None
    return budget, never


def options_from(args: argparse.Namespace, limits: Limits) -> PlanOptions:
    """The plan options the flags ask for, their limits checked (`checked_limits`)."""
    from advisor.core.plan import PlanOptions
    from advisor.core.plan.limits import EvictionBudget, NeverEvict

    budget, never = limits
    return PlanOptions(
        max_plan_evictions=args.max_plan_evictions,
        max_evictions=EvictionBudget(*budget),
        never_evict=tuple(NeverEvict(*selector) for selector in never),
        work=args.plan_work,
        time_budget_s=args.time_budget,
    )


def run(args: argparse.Namespace) -> int:
    limits = checked_limits(args)
    read = read_cluster(args, scheduler_choice(args))
    # The planning code only now, once there is a cluster (README "Start-up").
    from advisor.core.gang import judge
    from advisor.core.plan import plan
    from advisor.core.scaling import pod_remedies, scaling_advice
    from advisor.output.plan import add_advice, plan_json
    from advisor.render.plan.data import plan_views
    from advisor.render.plan.script import kubectl_script

    options = options_from(args, limits)
    cluster = read.cluster
    diagnosis = judge(cluster, node_detail_limit=0)
    report = plan(cluster, options, clock=time.monotonic, diagnosis=diagnosis)
    decided = pod_remedies(diagnosis, report, cluster)
    data = plan_json(report, cluster, *scaling_advice(cluster, report, diagnosis, decided=decided))
    add_advice(data["unresolved"], decided)
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
