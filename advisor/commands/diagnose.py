"""`xgpu-advisor diagnose`: why each Pending GPU pod is Pending (docs/design.md §3, §5)."""

from __future__ import annotations

import argparse
import json
import time

from advisor.commands import emit
from advisor.commands.cluster_input import read_cluster
from advisor.commands.flags.scheduler import scheduler_choice


def run(args: argparse.Namespace) -> int:
    read = read_cluster(args, scheduler_choice(args))
    # The judging code only now, once there is a cluster: a missing or unreadable input is
    # refused before it loads (README "Start-up").
    from advisor.core.autoscalers import judged
    from advisor.core.plan import PlanOptions, plan
    from advisor.core.scaling import pod_remedies
    from advisor.core.scaling.replicas import replica_trial
    from advisor.core.waiting import pending_ages, run_time
    from advisor.output import cluster_view, diagnosis_json
    from advisor.output.mig import add_mig_profiles
    from advisor.output.plan import add_advice, add_room

    cluster = read.cluster
    limit = None if args.node_detail < 0 else args.node_detail
    diagnosis, reaches = judged(cluster, node_detail_limit=limit)  # and the HPAs' (§12.2)
    ages = pending_ages(cluster, run_time(cluster, time.time()))
    data = diagnosis_json(diagnosis, cluster.scheduler, ages, reaches)
    add_mig_profiles(data, cluster, diagnosis)
    # The advice weighs the rebalancing plans, as in `report` and `plan`: the same search
    # (its defaults), so that every command gives a pod the same advice.
    plans = plan(cluster, PlanOptions(), clock=time.monotonic, diagnosis=diagnosis)
    add_advice(data["pods"], pod_remedies(diagnosis, plans, cluster))
    # What makes room for the replicas that do not fit: the same run, with them Pending.
    trial = replica_trial(cluster, reaches, PlanOptions(), time.monotonic)
    add_room(data.get("autoscalers", []), trial)
    if args.format == "json":
        text = json.dumps(data, indent=2)
    elif args.format == "markdown":
        from advisor.render.diagnose.markdown import render_markdown

        text = render_markdown(data, cluster_view(cluster, diagnosis))
    else:
        from advisor.render.diagnose.html import render_html

        title = f"xgpu-advisor diagnosis: {read.title}"
        text = render_html(data, cluster_view(cluster, diagnosis), title=title)
    emit(text, args.output)
    return 0
