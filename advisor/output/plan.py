"""The §8 plan JSON (docs/design.md §8) and each Pending pod's advice on its entry."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence, Set

from advisor import schemas
from advisor.core.mig_partition import mig_parted_yaml
from advisor.core.model import Cluster
from advisor.core.plan import Plan, PlanReport
from advisor.core.plan.above import HeldBack
from advisor.core.remedy import Remedy
from advisor.core.scaling import ScaleUp, ScaleUpAdvice
from advisor.core.scaling.down import ScaleDownAdvice
from advisor.core.scaling.replicas import Trial
from advisor.output import placement_json, scheduler_json
from advisor.output.scaling import (
    held_node_json,
    not_triggered_json,
    relief_json,
    scale_down_json,
    scale_up_json,
)

MAX_HELD_LISTED = 50  # idle nodes kept, least utilised first; the rest are counted


def add_advice(
    entries: Iterable[schemas.PodDiagnosisJson | schemas.UnresolvedJson],
    decided: Iterable[Remedy],
) -> None:
    """Each Pending pod's `advice` ({key, scale_up, why}: `advisor.core.remedy`) on its
    diagnosis or `unresolved` entry, so that the words shown for its cause are the ones its
    scale-up was decided with."""
    by_pod = {r.pod: remedy_json(r) for r in decided}
    for entry in entries:
        if (advice := by_pod.get(entry["pod"])) is not None:
            entry["advice"] = advice


def remedy_json(r: Remedy) -> schemas.RemedyJson:
    out: schemas.RemedyJson = {"key": r.advice, "scale_up": r.scale_up, "why": r.why}
    if (cut := r.repartition) is not None:
        out["repartition"] = {
            "node": cut.node,
            "cards": [
                {
                    "card": card.card,
                    "before": [f"{m.profile}@{m.start}" for m in card.before],
                    "after": [f"{m.profile}@{m.start}" for m in card.after],
                }
                for card in cut.cuts
            ],
            "drain": list(cut.drain),
            "config_name": cut.config_name,
            "current_config": cut.current,
            "mig_parted": mig_parted_yaml(cut),
        }
    return out


def add_room(entries: Iterable[schemas.AutoscalerJson], trial: Trial | None) -> None:
    """Each autoscaler's `remedy` (docs/design.md §12.2): what would make room for its
    replicas that do not fit, read off `trial` (`core.scaling.replicas`) in the plan JSON's
    own forms; null where it is not blocked."""
    if trial is None:
        for entry in entries:
            entry["remedy"] = None
        return
    whole = plan_json(trial.plans, trial.cluster, trial.scale_up)
    for entry in entries:
        entry["remedy"] = _room_json(trial, whole, entry["name"])


def _room_json(
    trial: Trial, whole: schemas.PlanJson, autoscaler: str
) -> schemas.ReplicaRemedyJson | None:
    names = trial.replicas.get(autoscaler)
    if names is None:
        return None
    mine = set(names)
    return {
        "replicas": [
            {"pod": r.pod, "cause": r.cause, "advice": remedy_json(r)}
            for r in trial.left[autoscaler]
        ],
        "plans": [p for p in whole["plans"] if _names_any(p["rescues"], mine)],
        "held_back": [h for h in whole["held_back"] if _names_any(h["rescues"], mine)],
        "scale_up": [s for s in whole["scale_up"] if _names_any(s["for"], mine)],
        "scale_up_not_triggered": [
            n for n in whole.get("scale_up_not_triggered", []) if n["pod"] in mine
        ],
        "relief": [r for r in whole.get("relief", []) if r["pod"] in mine],
    }


def _names_any(pods: Iterable[str], names: Set[str]) -> bool:
    return any(pod in names for pod in pods)


def _gpus(value: float) -> float:
    return round(value, 3)


def _plan_json(
    plan: Plan, reference_mib: int, owners: Mapping[str, str | None]
) -> schemas.PlanEntryJson:
    return {
        "rescues": list(plan.rescues),
        "evict": list(plan.evict),
        "placements": {name: placement_json(where) for name, where in plan.placements},
        "evicted_from": {name: placement_json(where) for name, where in plan.evicted_from},
        "evictions": len(plan.evict),
        "rescued_gpus": _gpus(plan.rescued_gpus),
        "rescued_mib": plan.rescued_mib,
        "moved_mib": plan.moved_mib,
        "moved_gpus": _gpus(plan.moved_mib / reference_mib),
        # evicted pods with no known controller: nothing may recreate them
        "unowned": [name for name in plan.evict if not owners.get(name)],
        **_cost_json(plan),
    }


def _cost_json(plan: Plan) -> schemas.PlanCostJson:
    """The plan's cards and disruption cost."""
    return {
        "rescued_cards": plan.rescued_cards,
        "cost": plan.cost,
        "costs": [{"pod": name, "cost": cost, "why": why} for name, cost, why in plan.costs],
    }


def held_back_json(h: HeldBack) -> schemas.HeldBackJson:
    return {
        "rescues": list(h.rescues),
        "evict": list(h.evict),
        "evictions": len(h.evict),
        "cost": h.cost,
        "flag": h.flag,
        "limit": h.limit,
        "needs": h.needs,
        "waiting": h.waiting,
    }


def limits_json(report: PlanReport) -> schemas.LimitsJson:
    """The caps the plans were held to, as the flags take them."""
    options = report.options
    return {
        "max_plan_evictions": options.max_plan_evictions,
        "max_evictions": options.max_evictions.text,
        "never_evict": [selector.text for selector in options.never_evict],
    }


def search_json(report: PlanReport) -> schemas.PlanSearchJson:
    """How far the search looked, and why it stopped if it stopped early. No wall time:
    the same input gives the same bytes on any machine."""
    return {
        "cost": report.cost,
        "cards_checked": report.cards_checked,
        "targets": report.targets,
        "simulations": report.evaluations,
        "work": report.work,
        "work_budget": report.work_budget,
        "stopped_by": report.stopped,
    }


def plan_json(
    report: PlanReport,
    cluster: Cluster | None = None,
    scale_up: Sequence[ScaleUp] = (),
    scale_down: ScaleDownAdvice | None = None,
) -> schemas.PlanJson:
    """The §8 JSON; `cluster` (the planned one) lets each plan name its unowned pods. Of the
    idle nodes `scale_down` keeps, at most MAX_HELD_LISTED are listed,
    `scale_down_held_omitted` counts the rest."""
    scale_down = scale_down or ScaleDownAdvice(())
    ref = report.reference_card_mib
    owners = {p.name: p.owner for p in cluster.pods} if cluster is not None else {}
    ideal = report.ideal
    unresolved: list[schemas.UnresolvedJson] = []
    for u in report.unresolved:
        entry: schemas.UnresolvedJson = {"pod": u.pod, "cause": u.cause}
        if u.cluster_free_sufficient is not None:
            entry["cluster_free_sufficient"] = u.cluster_free_sufficient
        if u.reason is not None:
            entry["reason"] = u.reason
        unresolved.append(entry)
    gpus = report.rescued_gpus
    judged: schemas.SchedulerPartJson = (
        {"scheduler": scheduler_json(cluster.scheduler)} if cluster is not None else {}
    )
    # pods no node group template admits, with the autoscaler's reason (only when some)
    not_triggered: schemas.NotTriggeredPartJson = (
        {"scale_up_not_triggered": [not_triggered_json(n) for n in scale_up.not_triggered]}
        if isinstance(scale_up, ScaleUpAdvice) and scale_up.not_triggered
        else {}
    )
    # on CCE, why the scale-up is a resize a person runs (only beside some scale-up advice)
    if isinstance(scale_up, ScaleUpAdvice) and scale_up.note is not None:
        not_triggered["scale_up_note"] = scale_up.note
    # what frees the cpu or memory of the pods short only of those (only when some)
    freed: schemas.ReliefPartJson = (
        {"relief": [relief_json(r) for r in scale_up.relief]}
        if isinstance(scale_up, ScaleUpAdvice) and scale_up.relief
        else {}
    )
    return {
        "schema": schemas.PLAN_SCHEMA,
        "policy": {"node": report.policy.node, "card": report.policy.card},
        **judged,
        "plans": [_plan_json(p, ref, owners) for p in report.plans],
        # plans that exist but are above a cap, with the flag to raise (docs/design.md §8)
        "held_back": [held_back_json(h) for h in report.held_back],
        "limits": limits_json(report),
        "unresolved": unresolved,
        "scale_up": [scale_up_json(s) for s in scale_up],
        **not_triggered,
        **freed,
        "scale_down": [scale_down_json(s) for s in scale_down.steps],
        "scale_down_held": [held_node_json(h) for h in scale_down.held[:MAX_HELD_LISTED]],
        "scale_down_held_omitted": max(len(scale_down.held) - MAX_HELD_LISTED, 0),
        "schedulable": {name: placement_json(where) for name, where in report.schedulable},
        "ideal": {
            "method": ideal.method,
            "pending_pods": ideal.pending_pods,
            "pending_gpus": _gpus(ideal.pending_mib / ref),
            "pending_mib": ideal.pending_mib,
            "repack_pods": ideal.repack_pods,
            "repack_gpus": _gpus(ideal.repack_mib / ref),
            "repack_mib": ideal.repack_mib,
            "repack_share": round(ideal.repack_share, 4),
            "repack_running_unplaced": ideal.repack_running_unplaced,
            "upper_bound_gpus": _gpus(ideal.upper_mib / ref),
            "upper_bound_mib": ideal.upper_mib,
            "upper_bound_share": round(ideal.upper_share, 4),
        },
        "summary": {
            "pending": ideal.pending_pods,
            "pending_gpus": _gpus(report.pending_gpus),
            "pending_mib": ideal.pending_mib,
            "plans": len(report.plans),
            "rescued_pods": report.rescued_pods,
            "rescued_gpus": _gpus(gpus),
            "rescued_mib": report.rescued_mib,
            "rescued_share": round(report.rescued_share, 4),
            "evictions": report.evictions,
            "evictions_per_gpu": round(report.evictions / gpus, 3) if gpus else None,
            "unresolved": len(report.unresolved),
            "reference_card_mib": ref,
            "time_budget_seconds": report.budget_s,
            "budget_exhausted": report.budget_exhausted,
            "evaluations": report.evaluations,
            **search_json(report),
        },
    }
