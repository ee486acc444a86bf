"""The plan report as a kubectl script and as card views for the pictures (its §8 JSON is
`advisor.output.plan_json`, below the report that embeds it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.core.model import Cluster, Placement
from advisor.core.plan import PlanReport
from advisor.output import card_view
from advisor.render._common import as_list, as_map, as_str

# The script lives in plan_script; its names stay importable from here.
from advisor.render.plan_script import comment_safe as comment_safe
from advisor.render.plan_script import kubectl_script as kubectl_script


def unresolved_causes(data: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(pod, cause) of each pod no plan rescues; a capacity cause says whether the cluster's
    free memory would do once consolidated, or it needs new nodes."""
    rows = []
    for raw in as_list(data.get("unresolved")):
        entry = as_map(raw)
        cause = as_str(entry.get("cause"), "?")
        if cause == "capacity" and "cluster_free_sufficient" in entry:
            cause += " (consolidate)" if entry.get("cluster_free_sufficient") else " (scale up)"
        rows.append((as_str(entry.get("pod"), "?"), cause))
    return rows


def plan_views(
    cluster: Cluster, report: PlanReport, max_plans: int | None = None
) -> list[dict[str, Any]]:
    """Per plan (the first `max_plans`): the nodes it touches before and after it, plans
    applied in order. In "after", the pods it rescued are marked `pending`."""
    where: dict[str, Placement] = {p.name: p.placement for p in cluster.pods if p.placement}
    where.update(report.schedulable)
    views = []
    for plan in report.plans[:max_plans]:
        nodes = {p.node for _, p in plan.placements} | {p.node for _, p in plan.evicted_from}
        before = card_view(cluster, where, nodes=nodes)
        where.update(plan.placements)
        after = card_view(cluster, where, set(plan.rescues), nodes)
        views.append({"before": before, "after": after})
    return views
