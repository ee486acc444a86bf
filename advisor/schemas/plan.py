"""The plan's JSON (docs/design.md §8): plans, held-back plans, scaling, the ideal bound."""

from __future__ import annotations

from typing import NotRequired

from typing_extensions import TypedDict  # pydantic writes the JSON Schemas from these (3.11)

from advisor.schemas.parts import (
    HeldBackJson,
    NotTriggeredJson,
    PlacementJson,
    PlanEntryJson,
    PolicyJson,
    ReliefJson,
    ScaleUpJson,
    SchedulerJson,
    UnresolvedJson,
)

# -- plan (§8) ---------------------------------------------------------------------------------


class LimitsJson(TypedDict):
    max_plan_evictions: int
    max_evictions: str
    never_evict: list[str]


class ScaleDownJson(TypedDict):
    node: str
    utilisation: float | None
    moves: dict[str, PlacementJson | None]
    also_moves: NotRequired[list[str] | None]  # the node's other pods; None: not known


class HeldNodeJson(TypedDict):
    node: str
    utilisation: float | None
    reason: str
    detail: str


class IdealJson(TypedDict):
    method: str
    pending_pods: int
    pending_gpus: float | None
    pending_mib: int
    repack_pods: int
    repack_gpus: float | None
    repack_mib: int
    repack_share: float | None
    repack_running_unplaced: int
    upper_bound_gpus: float | None
    upper_bound_mib: int
    upper_bound_share: float | None


class PlanSearchJson(TypedDict, total=False):
    """How far the search looked (`output.plan.search_json`; absent from older files)."""

    cost: float | None
    cards_checked: int
    targets: int
    simulations: int
    work: int
    work_budget: int
    stopped_by: str | None  # "work", "time", or None: it ran to its end


class PlanSummaryJson(PlanSearchJson):
    pending: int
    pending_gpus: float | None
    pending_mib: int
    plans: int
    rescued_pods: int
    rescued_gpus: float | None
    rescued_mib: int
    rescued_share: float | None
    evictions: int
    evictions_per_gpu: float | None  # None: nothing rescued
    unresolved: int
    reference_card_mib: int
    time_budget_seconds: float | None
    budget_exhausted: bool
    evaluations: int


class NotTriggeredPartJson(TypedDict, total=False):
    scale_up_not_triggered: list[NotTriggeredJson]  # only when some pod is
    scale_up_note: str  # on CCE, beside scale-up advice: why a person resizes


class ReliefPartJson(TypedDict, total=False):
    relief: list[ReliefJson]  # only when some pod is node-resources


class PlanJson(TypedDict):
    schema: str
    policy: PolicyJson
    scheduler: NotRequired[SchedulerJson]
    plans: list[PlanEntryJson]
    held_back: list[HeldBackJson]
    limits: NotRequired[LimitsJson]
    unresolved: list[UnresolvedJson]
    scale_up: list[ScaleUpJson]
    scale_up_not_triggered: NotRequired[list[NotTriggeredJson]]
    scale_up_note: NotRequired[str]
    relief: NotRequired[list[ReliefJson]]
    scale_down: list[ScaleDownJson]
    scale_down_held: list[HeldNodeJson]
    scale_down_held_omitted: int
    schedulable: dict[str, PlacementJson | None]
    ideal: IdealJson
    summary: PlanSummaryJson
