"""The plan's JSON (docs/design.md §8): plans, held-back plans, scaling, the ideal bound."""

from __future__ import annotations

from typing import Literal, NotRequired

from typing_extensions import TypedDict  # pydantic writes the JSON Schemas from these (3.11)

from advisor.schemas.parts import PlacementJson, PolicyJson, RemedyJson, SchedulerJson

# -- plan (§8) ---------------------------------------------------------------------------------


class EvictionCostJson(TypedDict):
    pod: str
    cost: float | None  # None: a saved file without a number
    why: str


class PlanCostJson(TypedDict, total=False):
    """What a plan costs (`output.plan`, of `core.plan.greedy.Plan`; absent from older files)."""

    rescued_cards: int
    cost: float | None
    costs: list[EvictionCostJson]


class PlanEntryJson(PlanCostJson):
    """One plan: the pods it rescues and evicts, where each lands, and what it costs."""

    rescues: list[str]
    evict: list[str]
    placements: dict[str, PlacementJson | None]
    evicted_from: dict[str, PlacementJson | None]
    evictions: int
    rescued_gpus: float | None  # None: a saved file without a number
    rescued_mib: int
    moved_mib: int
    moved_gpus: float | None
    unowned: list[str]  # evicted pods with no known controller


class HeldBackJson(TypedDict):
    """A plan above a cap, with the value of the flag that would let it through."""

    rescues: list[str]
    evict: list[str]
    evictions: int
    cost: float | None
    flag: str
    limit: str
    needs: str
    waiting: int


class LimitsJson(TypedDict):
    max_plan_evictions: int
    max_evictions: str
    never_evict: list[str]


class UnresolvedJson(TypedDict):
    pod: str
    cause: str
    cluster_free_sufficient: NotRequired[bool]
    # why no plan rescues its gang though plans made room for some of it (§10.4)
    reason: NotRequired[str]
    advice: NotRequired[RemedyJson]  # in the report only


class TaintJson(TypedDict):
    key: str
    value: str
    effect: str


class NodeShapeJson(TypedDict):
    """A node group's template (`output.scaling.node_shape_json`)."""

    cards: int
    memory_mib: int | None  # per card; None: a saved file without a number
    model: str
    allocatable: NotRequired[dict[str, str | int]]  # cpu, memory, pods: those it sets
    labels: NotRequired[dict[str, str]]
    taints: NotRequired[list[TaintJson]]
    # the pods a fresh node runs from the start (DaemonSet, mirror): pods, cpu, memory
    reserved: NotRequired[dict[str, str | int]]


ScaleUpJson = TypedDict(
    "ScaleUpJson",
    {
        "shape": NodeShapeJson,
        "nodes": int,
        "for": list[str],  # a keyword: hence the functional form
        "new_shape": NotRequired[bool],
        "note": NotRequired[str],
        "packed_estimate": NotRequired[int],
        "note_estimate": NotRequired[str],
        "verified": NotRequired[bool],
        # who adds the nodes (§8): "person" where no autoscaler scales them (CCE), with
        # the node pool where its nodes name one and the resize in words
        "actor": NotRequired[Literal["person", "cluster-autoscaler"]],
        "node_pool": NotRequired[str],
        "resize": NotRequired[str],
    },
)


class NotTriggeredJson(TypedDict):
    pod: str
    reason: str
    note: NotRequired[str]  # on CCE: its Autoscaler add-on would not act either


class ReliefMoveJson(TypedDict):
    pod: str
    to: str | None  # None: no node the model holds has room


class ReliefJson(TypedDict):
    """A node-resources pod: what frees the cpu or memory it lacks (never a GPU node)."""

    pod: str
    node: str
    short: list[str]
    move: list[ReliefMoveJson]
    new_node: NotRequired[dict[str, int | str]]
    advice: str


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
