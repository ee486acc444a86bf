"""The plan JSON read into its typed form (`advisor.schemas.PlanJson`, what
`advisor.output.plan.plan_json` writes), tolerantly: the plan's sections are also rendered from a
saved report, so a missing or odd value becomes the neutral default the pages show ("?", 0,
nothing) rather than an exception. Everything after this reads typed values; the kubectl
script alone reads the raw dict (`plan.script`), since it checks every name it writes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from advisor.render.common.advice import read_remedy
from advisor.render.common.parts import read_placement, read_scheduler
from advisor.render.common.values import as_float, as_int, as_list, as_map, as_str
from advisor.schemas import (
    PLAN_SCHEMA,
    EvictionCostJson,
    HeldBackJson,
    HeldNodeJson,
    IdealJson,
    NodeShapeJson,
    NotTriggeredJson,
    PlacementJson,
    PlanEntryJson,
    PlanJson,
    PlanSummaryJson,
    ReliefJson,
    ReliefMoveJson,
    ReplicaRemedyJson,
    ScaleDownJson,
    ScaleUpJson,
    TaintJson,
    UnresolvedJson,
)

_SearchCount = Literal["cards_checked", "targets", "simulations", "work", "work_budget"]
_SEARCH_COUNTS: tuple[_SearchCount, ...] = (
    "cards_checked",
    "targets",
    "simulations",
    "work",
    "work_budget",
)


def number(value: Any) -> float | None:
    """A JSON number as written (an int stays an int), else None (bools are not numbers)."""
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


def _names(value: Any) -> list[str]:
    return [as_str(name, "?") for name in as_list(value)]


def _placements(value: Any) -> dict[str, PlacementJson | None]:
    return {str(name): read_placement(where) for name, where in as_map(value).items()}


def read_plan(raw: Mapping[str, Any]) -> PlanJson:
    policy = as_map(raw.get("policy"))
    data: PlanJson = {
        "schema": as_str(raw.get("schema"), PLAN_SCHEMA),
        "policy": {
            "node": as_str(policy.get("node"), "binpack"),
            "card": as_str(policy.get("card"), "binpack"),
        },
        "plans": [_entry(as_map(p)) for p in as_list(raw.get("plans"))],
        "held_back": [_held_back(as_map(h)) for h in as_list(raw.get("held_back"))],
        "unresolved": [_unresolved(as_map(u)) for u in as_list(raw.get("unresolved"))],
        "scale_up": [_scale_up(as_map(u)) for u in as_list(raw.get("scale_up"))],
        "scale_down": [_scale_down(as_map(d)) for d in as_list(raw.get("scale_down"))],
        "scale_down_held": [_held(as_map(h)) for h in as_list(raw.get("scale_down_held"))],
        "scale_down_held_omitted": max(as_int(raw.get("scale_down_held_omitted")), 0),
        "schedulable": _placements(raw.get("schedulable")),
        "ideal": _ideal(as_map(raw.get("ideal"))),
        "summary": _summary(as_map(raw.get("summary"))),
    }
    scheduler = read_scheduler(raw.get("scheduler"))
    if scheduler is not None:
        data["scheduler"] = scheduler
    limits = as_map(raw.get("limits"))
    if limits:
        data["limits"] = {
            "max_plan_evictions": as_int(limits.get("max_plan_evictions")),
            "max_evictions": as_str(limits.get("max_evictions"), "?"),
            "never_evict": _names(limits.get("never_evict")),
        }
    helpless = _not_triggered(raw.get("scale_up_not_triggered"))
    if helpless:
        data["scale_up_not_triggered"] = helpless
    if isinstance(note := raw.get("scale_up_note"), str):
        data["scale_up_note"] = note
    freed = _relief(raw.get("relief"))
    if freed:
        data["relief"] = freed
    return data


def read_room(value: Any) -> ReplicaRemedyJson | None:
    """An autoscaler's `remedy` (docs/design.md §12.2), its parts read as the plan's own;
    None when the file has none (null, absent, or not an object)."""
    raw = as_map(value)
    if not raw:
        return None
    return {
        "replicas": [_unresolved(as_map(u)) for u in as_list(raw.get("replicas"))],
        "plans": [_entry(as_map(p)) for p in as_list(raw.get("plans"))],
        "held_back": [_held_back(as_map(h)) for h in as_list(raw.get("held_back"))],
        "scale_up": [_scale_up(as_map(u)) for u in as_list(raw.get("scale_up"))],
        "scale_up_not_triggered": _not_triggered(raw.get("scale_up_not_triggered")),
        "relief": _relief(raw.get("relief")),
    }


def _not_triggered(value: Any) -> list[NotTriggeredJson]:
    return [_one_not_triggered(n) for n in map(as_map, as_list(value))]


def _one_not_triggered(raw: Mapping[str, Any]) -> NotTriggeredJson:
    entry = NotTriggeredJson(pod=as_str(raw.get("pod"), "?"), reason=as_str(raw.get("reason"), "?"))
    if isinstance(note := raw.get("note"), str):
        entry["note"] = note
    return entry


def _relief(value: Any) -> list[ReliefJson]:
    return [
        ReliefJson(
            pod=as_str(r.get("pod"), "?"),
            node=as_str(r.get("node"), "?"),
            short=[as_str(x) for x in as_list(r.get("short"))],
            move=[
                ReliefMoveJson(pod=as_str(m.get("pod"), "?"), to=as_str(m.get("to")) or None)
                for m in map(as_map, as_list(r.get("move")))
            ],
            advice=as_str(r.get("advice")),
        )
        for r in map(as_map, as_list(value))
    ]


def _entry(raw: Mapping[str, Any]) -> PlanEntryJson:
    entry: PlanEntryJson = {
        "rescues": _names(raw.get("rescues")),
        "evict": _names(raw.get("evict")),
        "placements": _placements(raw.get("placements")),
        "evicted_from": _placements(raw.get("evicted_from")),
        "evictions": as_int(raw.get("evictions")),
        "rescued_gpus": number(raw.get("rescued_gpus")),
        "rescued_mib": as_int(raw.get("rescued_mib")),
        "moved_mib": as_int(raw.get("moved_mib")),
        "moved_gpus": number(raw.get("moved_gpus")),
        "unowned": [name for name in as_list(raw.get("unowned")) if isinstance(name, str)],
    }
    if "rescued_cards" in raw:
        entry["rescued_cards"] = as_int(raw["rescued_cards"])
    if "cost" in raw:
        entry["cost"] = number(raw["cost"])
    costs = [
        EvictionCostJson(
            pod=as_str(c.get("pod"), "?"), cost=number(c.get("cost")), why=as_str(c.get("why"))
        )
        for c in map(as_map, as_list(raw.get("costs")))
    ]
    if costs:
        entry["costs"] = costs
    return entry


def _held_back(raw: Mapping[str, Any]) -> HeldBackJson:
    return {
        "rescues": _names(raw.get("rescues")),
        "evict": _names(raw.get("evict")),
        "evictions": as_int(raw.get("evictions")),
        "cost": number(raw.get("cost")),
        "flag": as_str(raw.get("flag"), "?"),
        "limit": as_str(raw.get("limit"), "?"),
        "needs": as_str(raw.get("needs"), "?"),
        "waiting": as_int(raw.get("waiting"), 1),
    }


def _unresolved(raw: Mapping[str, Any]) -> UnresolvedJson:
    entry: UnresolvedJson = {
        "pod": as_str(raw.get("pod"), "?"),
        "cause": as_str(raw.get("cause"), "?"),
    }
    if "cluster_free_sufficient" in raw:
        entry["cluster_free_sufficient"] = bool(raw["cluster_free_sufficient"])
    if isinstance(raw.get("reason"), str):
        entry["reason"] = raw["reason"]
    advice = read_remedy(raw.get("advice"))
    if advice is not None:
        entry["advice"] = advice
    return entry


def read_shape(raw: Mapping[str, Any]) -> NodeShapeJson:
    """A node template as a file holds it; the parts it does not set left out."""
    shape: NodeShapeJson = {
        "cards": as_int(raw.get("cards")),
        "memory_mib": None if as_float(memory := raw.get("memory_mib")) is None else as_int(memory),
        "model": as_str(raw.get("model")),
    }
    if figures := _figures(raw.get("allocatable")):
        shape["allocatable"] = figures
    if figures := _figures(raw.get("reserved")):
        shape["reserved"] = figures
    labels = {str(key): as_str(value) for key, value in as_map(raw.get("labels")).items()}
    if labels:
        shape["labels"] = labels
    taints: list[TaintJson] = [
        {
            "key": as_str(t.get("key"), "?"),
            "value": as_str(t.get("value")),
            "effect": as_str(t.get("effect"), "?"),
        }
        for t in map(as_map, as_list(raw.get("taints")))
    ]
    if taints:
        shape["taints"] = taints
    if mig := as_list(raw.get("mig")):
        shape["mig"] = [None if card is None else _names(card) for card in mig]
        shape["mig_strategy"] = as_str(raw.get("mig_strategy"), "?")
    return shape


def _scale_up(raw: Mapping[str, Any]) -> ScaleUpJson:
    entry: ScaleUpJson = {
        "shape": read_shape(as_map(raw.get("shape"))),
        "nodes": as_int(raw.get("nodes")),
        "for": _names(raw.get("for")),
    }
    if raw.get("new_shape"):
        entry["new_shape"] = True
    for key in ("note", "note_estimate", "node_pool", "resize"):
        if isinstance(text := raw.get(key), str):
            entry[key] = text
    if raw.get("verified") is False:
        entry["verified"] = False
    actor = raw.get("actor")
    if actor == "person" or actor == "cluster-autoscaler":
        entry["actor"] = actor
    return entry


def _scale_down(raw: Mapping[str, Any]) -> ScaleDownJson:
    entry: ScaleDownJson = {
        "node": as_str(raw.get("node"), "?"),
        "utilisation": number(raw.get("utilisation")),
        "moves": _placements(raw.get("moves")),
    }
    if raw.get("also_moves") is not None:
        entry["also_moves"] = _names(raw.get("also_moves"))
    return entry


def _held(raw: Mapping[str, Any]) -> HeldNodeJson:
    return {
        "node": as_str(raw.get("node"), "?"),
        "utilisation": number(raw.get("utilisation")),
        "reason": as_str(raw.get("reason"), "?"),
        "detail": as_str(raw.get("detail")),
    }


def _ideal(raw: Mapping[str, Any]) -> IdealJson:
    return {
        "method": as_str(raw.get("method")),
        "pending_pods": as_int(raw.get("pending_pods")),
        "pending_gpus": number(raw.get("pending_gpus")),
        "pending_mib": as_int(raw.get("pending_mib")),
        "repack_pods": as_int(raw.get("repack_pods")),
        "repack_gpus": number(raw.get("repack_gpus")),
        "repack_mib": as_int(raw.get("repack_mib")),
        "repack_share": number(raw.get("repack_share")),
        "repack_running_unplaced": as_int(raw.get("repack_running_unplaced")),
        "upper_bound_gpus": number(raw.get("upper_bound_gpus")),
        "upper_bound_mib": as_int(raw.get("upper_bound_mib")),
        "upper_bound_share": number(raw.get("upper_bound_share")),
    }


def _summary(raw: Mapping[str, Any]) -> PlanSummaryJson:
    summary: PlanSummaryJson = {
        "pending": as_int(raw.get("pending")),
        "pending_gpus": number(raw.get("pending_gpus")),
        "pending_mib": as_int(raw.get("pending_mib")),
        "plans": as_int(raw.get("plans")),
        "rescued_pods": as_int(raw.get("rescued_pods")),
        "rescued_gpus": number(raw.get("rescued_gpus")),
        "rescued_mib": as_int(raw.get("rescued_mib")),
        "rescued_share": number(raw.get("rescued_share")),
        "evictions": as_int(raw.get("evictions")),
        "evictions_per_gpu": number(raw.get("evictions_per_gpu")),
        "unresolved": as_int(raw.get("unresolved")),
        "reference_card_mib": as_int(raw.get("reference_card_mib")),
        "time_budget_seconds": number(raw.get("time_budget_seconds")),
        "budget_exhausted": bool(raw.get("budget_exhausted")),
        "evaluations": as_int(raw.get("evaluations")),
    }
    if "cost" in raw:
        summary["cost"] = number(raw["cost"])
    for key in _SEARCH_COUNTS:
        if key in raw:
            summary[key] = as_int(raw[key])
    if "stopped_by" in raw:
        stopped = raw["stopped_by"]
        summary["stopped_by"] = stopped if isinstance(stopped, str) else None
    return summary


def _figures(raw: object) -> dict[str, str | int]:
    """{cpu, memory, pods} as a file holds them: quantities as written, counts as numbers."""
    found = as_map(raw)
    return {
        key: value
        for key in ("cpu", "memory", "pods")
        if isinstance(value := found.get(key), str | int) and not isinstance(value, bool)
    }
