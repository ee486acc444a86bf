"""The shapes every output shares: placements, requests, policies, each Pending pod's
diagnosis and advice, what to do about it (plans, scale-up: §8), and the card view
(docs/design.md §5)."""

from __future__ import annotations

from typing import Literal, NotRequired

from typing_extensions import TypedDict  # pydantic writes the JSON Schemas from these (3.11)

# -- shared parts ------------------------------------------------------------------------------


class PlacementJson(TypedDict):
    node: str
    cards: list[int]


class RequestJson(TypedDict):
    """A pod's GPU request, totals over its cards (§1)."""

    gpus: int
    memory_mib: int
    core_percent: int
    memory_percent: NotRequired[int]  # a share of each card, only when asked
    whole_card: NotRequired[bool]  # outside cce, only when asked
    mig_profile: NotRequired[str]  # MIG (§13): `gpus` instances of this profile, not vGPUs


class PolicyJson(TypedDict):
    node: str
    card: str


class SchedulerJson(TypedDict):
    """The profile that judged the cluster, with its own settings (§9.2)."""

    profile: str
    default_memory_mib: NotRequired[int]  # hami
    weights: NotRequired[dict[str, float]]  # hami
    schedule_weight: NotRequired[int]  # volcano-vgpu


class SchedulerPartJson(TypedDict, total=False):
    """The `scheduler` key of an output that names the profile only when it knows it."""

    scheduler: SchedulerJson


# -- diagnosis (§5) ----------------------------------------------------------------------------


class MigCardCutJson(TypedDict):
    """One re-partitioned card: its instances before and after as `profile@start` (the
    starts the advisor assumed: nvidia-mig-parted takes counts, NVML picks the starts)."""

    card: int
    before: list[str]
    after: list[str]


class MigRepartitionJson(TypedDict):
    """A `mig-geometry` pod's verified re-partition (§13, `core.mig_partition`): the node's
    cards re-partitioned, by index, the pods to drain first, the nvidia-mig-parted
    configuration (YAML) that applies it, and the one the node's `nvidia.com/mig.config`
    label names now (null: no label)."""

    node: str
    cards: list[MigCardCutJson]
    drain: list[str]
    config_name: str
    current_config: str | None
    mig_parted: str


class RemedyJson(TypedDict):
    """What to do about one Pending pod (`output.plan.remedy_json` of `core.remedy.Remedy`)."""

    key: str
    scale_up: bool
    why: str
    repartition: NotRequired[MigRepartitionJson]  # a mig-geometry pod's, when one is verified


class PreemptionJson(TypedDict):
    """What the real scheduler's preemption would do for a Pending pod (§10.3)."""

    verdict: str  # off | not-eligible | no-victims | evicts
    message: str
    node: str | None
    victims: list[str]  # "ns/pod", in the order evicted
    helps: bool | None  # evicts: whether the pod then fits its cards


class PodDiagnosisJson(TypedDict):
    pod: str
    cause: str
    message: str
    placement: PlacementJson | None
    request: RequestJson | None  # None: a saved file without one (the advisor always writes it)
    priority: int
    nodes: dict[str, list[str]]  # node: its reasons, nearest to fitting first
    nodes_omitted: int
    resources: NotRequired[dict[str, str]]  # cpu, memory as Kubernetes quantities
    node_selector: NotRequired[dict[str, str]]
    node_summary: NotRequired[str]
    reason_counts: NotRequired[dict[str, int]]
    cluster_free_sufficient: NotRequired[bool]  # capacity only
    advice: NotRequired[RemedyJson]  # in the report only (`advisor.report`)
    group: NotRequired[str | None]  # its PodGroup, where the cluster has groups (§10.3)
    # What preemption would do for it (§10.3); null for a pod placed without it. The
    # advisor always writes it; older files lack it.
    preemption: NotRequired[PreemptionJson | None]
    pending_age_seconds: NotRequired[float]  # now - created, where its creation is known (§12.3)


class GroupJson(TypedDict):
    """A PodGroup with Pending members, as the cycle left it (docs/design.md §10.3)."""

    name: str
    queue: str
    min_member: int
    ready: int
    pending: int
    state: str  # admitted | placed | rolled-back | not-admitted


class MigProfilesPartJson(TypedDict, total=False):
    """The `mig_profiles` key of a diagnosis, present where the cluster has MIG (§13)."""

    mig_profiles: list[MigProfileJson]


class GroupsPartJson(TypedDict, total=False):
    """The `groups` key of a diagnosis, present where the cluster has PodGroups."""

    groups: list[GroupJson]


# -- what to do: plans, scale-up, relief (the plan's, and an autoscaler's remedy) ------------


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
    # per card its MIG instances as "profile@start" (null: MIG off), where a card is in MIG
    # mode, and the device plugin's strategy then
    mig: NotRequired[list[list[str] | None]]
    mig_strategy: NotRequired[str]


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


class BlockedReplicaJson(TypedDict):
    """The first replica an autoscaler would add that stays Pending (docs/design.md §12.2)."""

    cause: str
    node_summary: str | None


class ReplicaRemedyJson(TypedDict):
    """What would make room for an autoscaler's replicas that do not fit (docs/design.md
    §12.2): the run every command makes, on the cluster with the blocked autoscalers'
    replicas Pending. `replicas`: its replicas that run leaves Pending, each with the advice
    a Pending pod gets there; the plans, held-back plans, scale-up steps, pods no node would
    help and relief of that run that name any of them, as the plan JSON gives them."""

    replicas: list[UnresolvedJson]
    plans: list[PlanEntryJson]
    held_back: list[HeldBackJson]
    scale_up: list[ScaleUpJson]
    scale_up_not_triggered: list[NotTriggeredJson]
    relief: list[ReliefJson]


class AutoscalerJson(TypedDict):
    """An autoscaler's reachable replicas (docs/design.md §12.2). `template`: the running pod
    its replicas are shaped like; null (with `placeable` null) where the target has none
    (`status` unknown-template)."""

    name: str
    target: str
    replicas: int
    max_replicas: int
    template: str | None
    placeable: int | None  # replicas beyond `replicas` that place, 0..max − replicas
    blocked: BlockedReplicaJson | None
    status: str  # reachable | blocked | unknown-template
    # what would make room for the replicas that do not fit; null unless blocked. Written
    # by `diagnose` and `report`; older files lack it.
    remedy: NotRequired[ReplicaRemedyJson | None]


class AutoscalersPartJson(TypedDict, total=False):
    """The `autoscalers` key of a diagnosis, present where the cluster lists some."""

    autoscalers: list[AutoscalerJson]


class TargetSettingsJson(TypedDict):
    """An autoscaler's settings for one metric: as it is (`current`), or as advised
    (`recommended`: `target_average` and `max_replicas` only)."""

    target_average: float | None
    max_replicas: int
    min_replicas: NotRequired[int]
    replicas: NotRequired[int]


class TargetConfidenceJson(TypedDict):
    level: str  # high | low
    why: list[str]  # what makes it low; empty when high


class TargetObservedJson(TypedDict):
    """What the HPA saw over the history: per-pod figures in the metric's unit."""

    per_pod_allotted: float | None  # the median pod's allotment
    average_p95: float | None  # the HPA's metric (the pods' average) at p95 and peak
    average_peak: float | None
    demand_p95: float | None  # the pods' values summed, at p95 and peak
    demand_peak: float | None
    replicas_min: int
    replicas_max: int


class HistoryEvidenceJson(TypedDict):
    """The history an advice stands on (`rightsizing.history_evidence`)."""

    first: float | None
    last: float | None
    window_seconds: float | None
    window: str
    step_seconds: float | None
    samples: int


class TargetSeriesJson(TypedDict):
    """The HPA's metric and the replicas sampled, per step, as long as each other."""

    timestamps: list[float]
    average: list[float]
    replicas: list[int]


class AutoscalerTargetJson(TypedDict):
    """An autoscaler metric's target from history (docs/design.md §12.2, `report` only).
    `status`: advised, not-advised (`reason` says what history it lacks) or not-applicable
    (no metric on an exporter per-pod series; `metric` null)."""

    name: str
    target: str
    metric: str | None
    status: str
    reason: str | None
    current: TargetSettingsJson
    recommended: TargetSettingsJson | None
    confidence: TargetConfidenceJson | None
    notes: list[str]
    observed: TargetObservedJson | None
    reachable_replicas: int | None  # replicas + placeable, as tried; null: no running pod
    evidence: HistoryEvidenceJson | None
    series: NotRequired[TargetSeriesJson | None]


class DiagnosisJson(TypedDict):
    schema: str
    policy: PolicyJson
    scheduler: NotRequired[SchedulerJson]
    pods: list[PodDiagnosisJson]
    summary: dict[str, int]  # per cause, and "pending" (job causes, mig-geometry: only when some)
    groups: NotRequired[list[GroupJson]]  # where the cluster has groups (§10.3)
    autoscalers: NotRequired[list[AutoscalerJson]]  # where the cluster has some (§12.2)
    mig_profiles: NotRequired[list[MigProfileJson]]  # where the cluster has MIG (§13)


class MigProfileJson(TypedDict):
    """Fragmentation figures of one MIG profile (§13, `core.mig_figures`), before this
    cycle: free instances, the most the cards' unoccupied slices would hold re-partitioned,
    Pending pods asking it (and their instances), and those left waiting."""

    profile: str
    free_instances: int
    room_if_repartitioned: int
    pending_pods: int
    pending_instances: int
    waiting_pods: int


# -- card view (after the cycle, or before/after a plan) ---------------------------------------


class AllotmentJson(TypedDict):
    pod: str
    memory_mib: int
    core_percent: int
    pending: bool  # placed by this cycle or plan, not running yet


class MigSliceJson(TypedDict):
    """One GPU instance of a MIG card (§13): its profile, first memory slice and slices
    taken, and the pod holding it (none: free; `pending`: placed by this cycle)."""

    profile: str
    start: int
    span: int
    pod: NotRequired[str]
    pending: bool


class CardJson(TypedDict):
    index: int
    memory_mib: int
    model: str
    healthy: bool
    mode: int  # 0 memory, 1 memory+core, 2 unused
    vgpus: int
    core_allotted_percent: int
    allotments: list[AllotmentJson]
    mig: NotRequired[list[MigSliceJson]]  # a card in MIG mode: its instances, by start


class NodeResourcesJson(TypedDict):
    cpu_allocatable_milli: int | None
    memory_allocatable_bytes: int | None
    cpu_requested_milli: int
    memory_requested_bytes: int


class NodeFitJson(TypedDict, total=False):
    """What kube-scheduler's other filters read of a node; only the parts the node sets."""

    resources: NodeResourcesJson
    taints: list[str]
    unschedulable: bool


class NodeViewJson(NodeFitJson):
    name: str  # required, unlike the fit's parts (a class of its own is total)
    cards: list[CardJson]


class CardViewJson(TypedDict):
    nodes: list[NodeViewJson]
