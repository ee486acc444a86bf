"""Frozen values the scheduler core works on (docs/design.md §1, §4)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import IntEnum
from types import MappingProxyType
from typing import Literal

from advisor.core.hpa import Autoscaler
from advisor.core.jobs import GANG_DEFAULTS, NO_JOBS, Gang, Jobs, QueuePlugin
from advisor.core.mig import MigInstance, table_of
from advisor.core.nodefilters import (
    NO_CONSTRAINTS,
    NO_RESOURCES,
    NOT_KNOWN,
    Allocatable,
    NodeConstraints,
    Resources,
    Taint,
)

MIB_PER_UNIT = 128  # volcano.sh/gpu-mem.128Mi
MAX_MEMORY_UNITS = 16384
CORE_STEP = 5
DEFAULT_MAX_VGPUS = 20

# Disruption (docs/design.md §8): the annotations and namespaces that keep a pod where it is.
DO_NOT_DISRUPT = "xgpu.io/do-not-disrupt"  # "true": never evicted (Karpenter's rule)
# Set by the Kubernetes source from the PodDisruptionBudgets covering the pod:
# "<pdb-name>:<disruptions allowed>", or "<pdb-a>,<pdb-b>:0" when several cover it (the
# Eviction API refuses such a pod). Scenario files carry it, so findings replay offline.
DISRUPTION_BUDGET = "xgpu.io/disruption-budget"
PROTECTED_NAMESPACES = frozenset({"kube-system"})

PolicyName = Literal["binpack", "spread", "legacy"]
# The device plugin's migStrategy (docs/design.md §13): how a node's MIG instances are named.
MigStrategy = Literal["none", "single", "mixed"]
MIG_STRATEGIES: tuple[MigStrategy, ...] = ("none", "single", "mixed")
POLICIES: tuple[PolicyName, ...] = (
    "binpack",
    "spread",
)  # node policies, and CCE's and HAMi's card policies
# A scheduler profile's name (docs/design.md §9.2): whose rules pick cards and nodes. The
# profiles themselves, and the names known, are `advisor.core.profiles`'.
ProfileName = str


class Mode(IntEnum):
    """A card's isolation mode, as `gpu_schedule_policy` publishes it."""

    MEMORY = 0
    MEMORY_CORE = 1
    UNUSED = 2


@dataclass(frozen=True, slots=True)
class Card:
    index: int
    memory_mib: int
    model: str = ""
    healthy: bool = True
    uuid: str = ""
    numa: int | None = None  # NUMA node (HAMi's tie-break and numa-bind)
    max_vgpus: int | None = None  # slots on this card; None: the cluster's max_vgpus_per_card
    # MIG (docs/design.md §13): the GPU instances as created; None: MIG disabled. A card
    # with MIG on takes MIG pods only, never a vGPU or whole-card one.
    mig: tuple[MigInstance, ...] | None = None


@dataclass(frozen=True, slots=True)
class OtherPod:
    """A pod on a node that the GPU model does not hold (no GPU, or vGPUs not modelled) and
    that removing the node would move: not DaemonSet-owned, not a mirror pod, not finished.

    `blocks`: why the cluster-autoscaler would not evict it, so keeps the node; None if not.
    """

    name: str  # namespace/pod
    blocks: str | None = None
    resources: Resources = NO_RESOURCES  # what it takes of the node's cpu and memory
    # A resident pod being deleted: it still takes its share now, but a new node of the
    # group will not run one (the cluster-autoscaler's template leaves it out).
    terminating: bool = False
    # Its nodeSelector, required node affinity and tolerations; None when not known (a
    # scenario that does not give them), where scale-down judges by the node's taints.
    constraints: NodeConstraints | None = None


def _frozen_map(value: Mapping[str, str] | None = None) -> Mapping[str, str]:
    return MappingProxyType(dict(value or {}))


@dataclass(frozen=True, slots=True)
class Node:
    """A GPU node. The fields after `other_pods` are what kube-scheduler's other filters
    read (§9.1); their defaults admit every pod, so a GPU-only scenario keeps its meaning."""

    name: str
    cards: tuple[Card, ...]
    # The node's other pods; None when not known (no Kubernetes source, or a scenario
    # without the key), which scale-down advice then says nothing about.
    other_pods: tuple[OtherPod, ...] | None = None
    allocatable: Allocatable = NOT_KNOWN
    labels: Mapping[str, str] = field(default_factory=_frozen_map, compare=False)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False  # cordoned
    # Pods that stay with the node (DaemonSet-owned, mirror and terminating pods): they take
    # cpu, memory and a pod slot of it, but no drain moves them and no plan places them.
    resident_pods: tuple[OtherPod, ...] = ()
    mig_strategy: MigStrategy = "none"

    def vgpu_cards(self) -> tuple[Card, ...]:
        """The cards out of MIG mode: the vGPU (or whole-card) devices."""
        return tuple(c for c in self.cards if c.mig is None)

    def mig_cards(self) -> tuple[Card, ...]:
        """The cards in MIG mode whose model has a profile table (the others hold no
        instance the advisor can place: docs/design.md §13)."""
        return tuple(c for c in self.cards if c.mig is not None and table_of(c.model))

    def single_profile(self) -> str | None:
        """Under `single`, the node's one profile (its first MIG card's): what
        `nvidia.com/gpu` counts there; None elsewhere or without an instance."""
        if self.mig_strategy != "single":
            return None
        return next((c.mig[0].profile for c in self.mig_cards() if c.mig), None)

    def mig_allocatable(self) -> dict[str, int]:
        """Per profile, the instances the device plugin advertises (the kubelet's
        allocatable): those on healthy cards, every profile under `mixed`, the node's own
        under `single`, none without a strategy."""
        if self.mig_strategy == "none":
            return {}
        single = self.single_profile()
        out: dict[str, int] = {}
        for card in self.mig_cards():
            for inst in (card.mig or ()) if card.healthy else ():
                if single is None or inst.profile == single:
                    out[inst.profile] = out.get(inst.profile, 0) + 1
        return out


@dataclass(frozen=True, slots=True)
class Request:
    """Totals a pod asks for; split evenly over `gpus` cards of one node.

    Outside CCE a card's memory may be asked as a share of each chosen card
    (`memory_percent`, 1..100), and a request with neither memory nor share asks the
    whole of each card (docs/design.md §9.2).
    """

    gpus: int
    memory_mib: int
    core_percent: int = 0
    memory_percent: int = 0  # per card; 0: not given
    # MIG (docs/design.md §13): `gpus` instances of this profile, not vGPUs; "" for none.
    mig_profile: str = ""

    @property
    def whole_card(self) -> bool:
        return self.memory_mib == 0 and self.memory_percent == 0

    @property
    def mode(self) -> Mode:
        return Mode.MEMORY_CORE if self.core_percent > 0 else Mode.MEMORY

    @property
    def card_memory_mib(self) -> int:
        return self.memory_mib // self.gpus

    @property
    def card_core_percent(self) -> int:
        return self.core_percent // self.gpus


@dataclass(frozen=True, slots=True)
class Placement:
    node: str
    cards: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Pod:
    """A GPU pod; running when it has a placement, Pending otherwise.

    `invalid` carries the parser's message when the pod's request could not be read
    at all (the pod is then diagnosed `invalid` whatever `request` says).
    """

    name: str
    request: Request
    placement: Placement | None = None
    priority: int = 0
    owner: str | None = None
    annotations: Mapping[str, str] = field(default_factory=_frozen_map, compare=False)
    invalid: str | None = None
    resources: Resources = NO_RESOURCES  # effective cpu/memory request (§9.1)
    constraints: NodeConstraints = NO_CONSTRAINTS  # nodeSelector, affinity, tolerations
    started: str | None = None  # RFC 3339 (status.startTime): what an eviction loses (§8)
    # RFC 3339: metadata.creationTimestamp, and the PodScheduled condition's time (§12.3).
    created: str | None = None
    scheduled: str | None = None
    labels: Mapping[str, str] = field(default_factory=_frozen_map, compare=False)  # --never-evict
    # The job layer (docs/design.md §10.1): its PodGroup (namespace/name; None: its owner's
    # automatic group, or its own), whether Volcano may evict it, and kube-scheduler's policy.
    group: str | None = None
    preemptable: bool = True
    preemption_policy: str = "PreemptLowerPriority"
    # its task role in its job: `volcano.sh/task-spec` (annotation, else label; §10.1)
    role: str | None = None
    # A bound MIG pod's instances: (card index, start slice) each (docs/design.md §13).
    mig_instances: tuple[tuple[int, int], ...] = ()

    @property
    def namespace(self) -> str:
        return self.name.split("/", 1)[0] if "/" in self.name else ""

    @property
    def running(self) -> bool:
        return self.placement is not None


@dataclass(frozen=True, slots=True)
class Policy:
    node: PolicyName = "binpack"
    card: PolicyName = "binpack"


@dataclass(frozen=True, slots=True)
class Scheduler:
    """Whose rules place GPU pods, and that profile's settings (docs/design.md §9.2)."""

    profile: ProfileName = "cce"
    default_memory_mib: int = 0  # hami: memory of a request giving none; 0: the whole card
    weights: tuple[int, int, int] = (1, 1, 1)  # hami: device scoring slot, core, memory
    schedule_weight: int = 0  # volcano-vgpu: deviceshare.ScheduleWeight
    # The session (docs/design.md §10.1); None: the profile's default.
    actions: tuple[str, ...] | None = None  # volcano-based: the configuration's actions
    gang: Gang = GANG_DEFAULTS  # volcano-based: the gang plugin's options
    overcommit_factor: float | None = None  # volcano-based: the overcommit plugin's factor
    queue_plugin: QueuePlugin = "proportion"  # volcano-based: proportion, or capacity instead
    # volcano-based, capacity's: its `enableHierarchy` option (queues under `spec.parent`)
    enable_hierarchy: bool = False
    ancestor_reclaim_level: int = 0  # its `ancestorReclaimLevel` argument (with the hierarchy)
    preemption: bool | None = None  # hami: kube-scheduler's DefaultPreemption


CCE = Scheduler()
WEIGHT_KEYS = ("slot", "core", "memory")  # `Scheduler.weights`, as a scenario names them


@dataclass(frozen=True, slots=True)
class Cluster:
    nodes: tuple[Node, ...]
    pods: tuple[Pod, ...] = ()
    policy: Policy = Policy()
    max_vgpus_per_card: int = DEFAULT_MAX_VGPUS
    scheduler: Scheduler = CCE
    jobs: Jobs = NO_JOBS  # PodGroups, Queues, ResourceQuotas (docs/design.md §10.1)
    now: str | None = None  # RFC 3339: the time ages are counted to (None: the run's clock)
    autoscalers: tuple[Autoscaler, ...] = ()  # HorizontalPodAutoscalers (§12.1)

    @property
    def running(self) -> tuple[Pod, ...]:
        return tuple(p for p in self.pods if p.placement is not None)

    @property
    def pending(self) -> tuple[Pod, ...]:
        return tuple(p for p in self.pods if p.placement is None)


def gpu_mib(healthy_sizes: Iterable[int]) -> int:
    """The product's one unit of GPU figures (docs/design.md §8): 1 GPU = the memory of the
    commonest healthy card size (the larger on a tie); 1 with no healthy card."""
    counts: dict[int, int] = {}
    for size in healthy_sizes:
        counts[size] = counts.get(size, 0) + 1
    if not counts:
        return 1
    return max(counts.items(), key=lambda kv: (kv[1], kv[0]))[0]


def reference_card_mib(cluster: Cluster) -> int:
    """One GPU of the cluster's figures, in MiB (`gpu_mib` of its healthy cards)."""
    return gpu_mib(c.memory_mib for n in cluster.nodes for c in n.cards if c.healthy)


def queue_order(pods: tuple[Pod, ...]) -> tuple[Pod, ...]:
    """Pending pods in scheduling order: priority desc, then creation (list) order."""
    ranked = sorted(enumerate(pods), key=lambda item: (-item[1].priority, item[0]))
    return tuple(pod for _, pod in ranked)


def disruption_budget(annotations: Mapping[str, str]) -> tuple[str, int] | None:
    """(budget name(s), disruptions it allows now) from `DISRUPTION_BUDGET`; None when no
    budget covers the pod. A value that does not read as a count allows none: the advisor
    cannot tell what the budget would let through."""
    value = annotations.get(DISRUPTION_BUDGET)
    if value is None:
        return None
    name, _, allowed = value.strip().rpartition(":")
    try:
        count = int(allowed)
    except ValueError:
        return (value.strip() or "?", 0)
    return (name or "?", max(count, 0))


def disruption_blocker(pod: Pod) -> str | None:
    """Why no plan or node removal may evict this pod, or None: it is in kube-system, it is
    annotated do-not-disrupt "true", or its PodDisruptionBudget allows no disruption now.
    The one rule of docs/design.md §8 that the planner and scale-down share."""
    if pod.namespace in PROTECTED_NAMESPACES:
        return f"{pod.namespace} pod"
    if pod.annotations.get(DO_NOT_DISRUPT, "").strip().lower() == "true":
        return f"{DO_NOT_DISRUPT}: true"
    return budget_blocker(pod.annotations)


def gangs_of(cluster: Cluster, volcano: bool) -> dict[str, int]:
    """The gangs (PodGroups with min_member above 1) under Volcano's session (`volcano`: the
    profile runs it), each with its min_member; none under another session."""
    if not volcano:
        return {}
    return {g.name: g.min_member for g in cluster.jobs.groups if g.min_member > 1}


def gang_members(cluster: Cluster, volcano: bool) -> dict[str, str]:
    """The pods of gangs (`gangs_of`), each with why no node removal moves it: moving one
    member could leave a running gang below min_member (docs/design.md §10.4). Scale-down
    leaves every member where it is; plans move a running gang's members only above its
    min_member, or the gang whole, and rescue a Pending one only when min_member of it place
    at once (`core.plan.board`)."""
    mins = gangs_of(cluster, volcano)
    return {
        p.name: f"a member of gang {p.group} (min_member {mins[p.group]}): moved alone it "
        "could split the gang"
        for p in cluster.pods
        if p.group is not None and p.group in mins
    }


def budget_blocker(annotations: Mapping[str, str]) -> str | None:
    """Why the pod's disruption budget forbids evicting it now (it allows none, or several
    budgets cover the pod), or None."""
    budget = disruption_budget(annotations)
    if budget is None or budget[1] > 0:
        return None
    if "," in budget[0]:
        return f"disruption budgets {budget[0]} all cover it: the Eviction API refuses"
    return f"disruption budget {budget[0]} allows 0 disruptions"


BudgetKey = tuple[str, str]  # (namespace, budget name(s)): budgets are namespaced


def budget_key(namespace: str, annotations: Mapping[str, str]) -> tuple[BudgetKey, int] | None:
    """(the budget covering a pod of `namespace`, disruptions it allows); None: no budget."""
    budget = disruption_budget(annotations)
    return None if budget is None else ((namespace, budget[0]), budget[1])


def budgets_overrun(
    covered: Iterable[tuple[BudgetKey, int] | None], spent: Mapping[BudgetKey, int] | None = None
) -> dict[BudgetKey, int]:
    """The budgets that evicting these pods together overruns (`covered`: each pod's
    `budget_key`), with how many of the pods each covers: more than it allows, counting the
    evictions already `spent` on it. The Eviction API refuses the one over."""
    count: dict[BudgetKey, int] = {}
    allows: dict[BudgetKey, int] = {}
    for budget in covered:
        if budget is not None:
            count[budget[0]] = count.get(budget[0], 0) + 1
            allows[budget[0]] = budget[1]
    spent = spent or {}
    return {key: n for key, n in count.items() if n + spent.get(key, 0) > allows[key]}
