"""What the plan's pages read besides its §8 JSON (`advisor.output.plan.plan_json`): the card views
for the before/after pictures, and the pods no plan rescues with their causes."""

from __future__ import annotations

from typing import Any

from advisor.core.model import Cluster, Placement
from advisor.core.plan import PlanReport
from advisor.output import card_view
from advisor.render.common.advice import cause_label
from advisor.schemas import PlanJson


def unresolved_causes(data: PlanJson) -> list[tuple[str, str]]:
    """(pod, cause) of each pod no plan rescues, the cause labelled with its advice
    (`render.common.advice.cause_label`): consolidate, or scale up."""
    return [(entry["pod"], cause_label(entry)) for entry in data["unresolved"]]


def unresolved_reasons(data: PlanJson) -> list[str]:
    """Why no plan rescues the gangs still Pending for which plans made room for some of it
    (`unresolved[].reason`), each once, in the order of their first pod."""
    return list(dict.fromkeys(e["reason"] for e in data["unresolved"] if "reason" in e))


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
