"""Jobs, queues and quotas (docs/design.md §10.1): what a scheduler's session reads besides
pods and nodes, as frozen values.

Volcano (v1.15.1) decides PodGroups in Queues with the actions and plugin options of its
configuration; kube-scheduler (under HAMi) preempts by priority, and HAMi v2.10 checks a
namespace's ResourceQuota on its own resources. Which of the two sessions runs is the
profile's (`SessionRules`); the scenario and the live sources fill the rest.

Volcano's session decides with gangs and queues (core.gang, core.session, core.queues),
HAMi's card fit with namespace quotas (core.quota); `not_modelled` names what a cluster
carries that its profile's session would judge but the model does not, so a run says so
instead of ignoring it silently.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal

from advisor.core.nodefilters import KUBE_FIT, VOLCANO_FIT, ResourceFit

# The actions Volcano v1.15.1 registers (pkg/scheduler/actions/factory.go, init); its
# configuration names them in the order they run, and refuses any other name
# (pkg/scheduler/util.go, UnmarshalSchedulerConf: "failed to find Action").
VOLCANO_ACTIONS = (
    "enqueue",
    "allocate",
    "backfill",
    "preempt",
    "reclaim",
    "gangpreempt",
    "gangreclaim",
    "shuffle",
)
# Volcano's own default configuration (pkg/scheduler/util.go, DefaultSchedulerConf).
UPSTREAM_ACTIONS = ("enqueue", "allocate", "backfill")
# Huawei CCE's Volcano add-on default (its documentation): no enqueue.
CCE_ACTIONS = ("allocate", "backfill")
# overcommit plugin (pkg/scheduler/plugins/overcommit/overcommit.go): defaultOverCommitFactor,
# and a factor below 1 is replaced by it.
DEFAULT_OVERCOMMIT = 1.2

# The plugin of the configuration's tiers that decides queues (docs/design.md §10.2):
# proportion (Volcano's default configuration, CCE's add-on) or capacity in its place.
QUEUE_PLUGINS = ("proportion", "capacity")
QueuePlugin = Literal["proportion", "capacity"]

DEFAULT_QUEUE = "default"  # Volcano creates it; a PodGroup naming no queue is in it
# Volcano's cache creates it too (pkg/scheduler/cache/cache.go): the top of capacity's
# hierarchy, every queue's parent that names none (plugins/capacity/capacity.go rootQueueID)
ROOT_QUEUE = "root"
QUEUE_STATES = ("Open", "Closed", "Closing")  # scheduling.volcano.sh/v1beta1 QueueState
# scheduling.volcano.sh/v1beta1 PodGroupPhase. Only Pending goes through enqueue
# (api/job_info.go IsPending, actions/enqueue/enqueue.go); the others go straight to allocate.
GROUP_PHASES = ("Pending", "Inqueue", "Running", "Unknown", "Completed")
PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")  # core/v1 PreemptionPolicy
# Volcano files a pod under the PodGroup this annotation names, in the pod's namespace
# (pkg/scheduler/api/job_info.go, getJobID; apis KubeGroupNameAnnotationKey).
GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
# A pod's task role in its job (apis batch TaskSpecKey, read by api/job_info.go getTaskRole).
TASK_SPEC = "volcano.sh/task-spec"
# A pod Volcano may evict (pkg/scheduler/api/pod_info.go, GetPodPreemptable): the
# annotation, else the label; absent: true; a value strconv.ParseBool refuses: false.
PREEMPTABLE_KEY = "volcano.sh/preemptable"

SessionKind = Literal["volcano", "kube-scheduler"]
ResourceList = Mapping[str, str]  # resource name -> Kubernetes quantity, as the API writes it


def frozen_resources(value: Mapping[str, str] | None = None) -> ResourceList:
    return MappingProxyType(dict(value or {}))


@dataclass(frozen=True, slots=True)
class Gang:
    """The gang plugin's options in the configuration's tiers (conf.PluginOption
    `enablePreemptable`, `enableJobStarving`); None: not given, so the profile's default."""

    preemptable: bool | None = None
    job_starving: bool | None = None


GANG_DEFAULTS = Gang()  # neither option given


@dataclass(frozen=True, slots=True)
class SessionRules:
    """Whose session decides jobs under a profile, and its defaults where the scenario or
    the cluster's configuration gives none."""

    kind: SessionKind
    default_actions: tuple[str, ...] = ()  # volcano: the actions a configuration without any runs
    # volcano: the gang options' defaults (plugins/defaults.go, ApplyPluginConfDefaults: true)
    default_gang: tuple[bool, bool] = (True, True)
    # kube-scheduler under HAMi: its card fit enforces namespace ResourceQuotas on its memory
    # and core resources (core.quota)
    device_quota: bool = False

    @property
    def volcano(self) -> bool:
        return self.kind == "volcano"

    @property
    def resource_fit(self) -> ResourceFit:
        """The node's cpu, memory and pod-slot check: Volcano's allocate runs its own (every
        dimension, zero requests too, before the predicates), kube-scheduler NodeResourcesFit."""
        return VOLCANO_FIT if self.volcano else KUBE_FIT


# The `Scheduler` settings (scenario keys) of a profile that runs Volcano's session.
VOLCANO_SETTINGS = (
    "actions",
    "gang",
    "overcommit_factor",
    "queue_plugin",
    "enable_hierarchy",
    "ancestor_reclaim_level",
)
VOLCANO_SESSION = SessionRules("volcano", UPSTREAM_ACTIONS)
# CCE's add-on turns the gang plugin's preemptable and job-starving options off.
CCE_SESSION = SessionRules("volcano", CCE_ACTIONS, (False, False))
KUBE_SCHEDULER_SESSION = SessionRules("kube-scheduler")
HAMI_SESSION = SessionRules("kube-scheduler", device_quota=True)


@dataclass(frozen=True, slots=True)
class Queue:
    """A Volcano Queue (cluster-scoped): its weight, capability, guarantee and deserved (the
    capacity plugin's; proportion computes its own), and its `spec.parent` (read by the
    capacity plugin with enableHierarchy; None: the root queue's child)."""

    name: str
    weight: int = 1
    capability: ResourceList = field(default_factory=frozen_resources)
    guarantee: ResourceList = field(default_factory=frozen_resources)
    reclaimable: bool = True  # spec.reclaimable; absent: true
    priority: int = 0
    state: str = "Open"
    deserved: ResourceList = field(default_factory=frozen_resources)
    parent: str | None = None


@dataclass(frozen=True, slots=True)
class Group:
    """A PodGroup: `name` is namespace/name; its pods name it in `GROUP_ANNOTATION`."""

    name: str
    min_member: int = 1
    queue: str = DEFAULT_QUEUE
    priority: int = 0  # of its priorityClassName
    min_resources: ResourceList = field(default_factory=frozen_resources)
    # its status.phase (GROUP_PHASES); None: inferred from its running members (§10.2)
    phase: str | None = None
    # spec.minTaskMember: each task role's own minimum (its pods' `volcano.sh/task-spec`;
    # core.roles)
    min_task_member: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def namespace(self) -> str:
        return self.name.split("/", 1)[0]

    def role_checked(self) -> bool:
        """Whether Volcano checks its roles one by one: some role asks a minimum and
        minMember is not below their sum (api/job_info.go CheckTaskValid, CheckTaskReady:
        "if job minAvailable is less than sum of(task minAvailable), skip this check")."""
        wanted = self.min_task_member.values()
        return any(n > 0 for n in wanted) and self.min_member >= sum(wanted)


@dataclass(frozen=True, slots=True)
class Quota:
    """A namespace's ResourceQuota `spec.hard` (every quota of a namespace applies)."""

    namespace: str
    hard: ResourceList = field(default_factory=frozen_resources)


@dataclass(frozen=True, slots=True)
class Jobs:
    """The cluster's PodGroups, Queues and ResourceQuotas; empty: none known (a scenario
    without the keys, or a cluster without Volcano), which keeps §9's one-pod meaning."""

    queues: tuple[Queue, ...] = ()
    groups: tuple[Group, ...] = ()
    quotas: tuple[Quota, ...] = ()


NO_JOBS = Jobs()

GroupState = Literal["admitted", "placed", "rolled-back", "not-admitted"]


@dataclass(frozen=True, slots=True)
class GroupOutcome:
    """One PodGroup with Pending members, as the simulated cycle left it (§10.3)."""

    name: str
    queue: str
    min_member: int
    ready: int  # members running before the cycle
    pending: int
    state: GroupState


def not_modelled(
    jobs: Jobs, gangs_judged: bool = False, queues_judged: bool = False, quotas_judged: bool = False
) -> list[str]:
    """What the cluster carries that a verdict would depend on but the model does not judge
    under its profile: gangs (min_member above 1) and queues other than `default` unless
    Volcano's session judges them (core.gang, core.session), quotas unless HAMi's card fit
    does (core.quota; `SessionRules.device_quota`), and task roles' own minimums unless the
    gangs are judged (core.roles)."""
    found = []
    gangs = [] if gangs_judged else [g.name for g in jobs.groups if g.min_member > 1]
    if gangs:
        found.append(f"{len(gangs)} gang{'s' if len(gangs) != 1 else ''} ({_some(gangs)})")
    queues = sorted({q.name for q in jobs.queues} | {g.queue for g in jobs.groups})
    others = [] if queues_judged else [q for q in queues if q != DEFAULT_QUEUE]
    if others:
        found.append(f"queue{'s' if len(others) != 1 else ''} {_some(others)}")
    if jobs.quotas and not quotas_judged:
        spaces = sorted({q.namespace for q in jobs.quotas})
        found.append(f"resource quotas in {_some(spaces)}")
    roles = [] if gangs_judged else [g.name for g in jobs.groups if g.role_checked()]
    if roles:  # judged with the gangs (core.roles); elsewhere min_member over every role
        found.append(f"task roles' own minimums of {_some(roles)}")
    return found


def without_allocate(actions: tuple[str, ...]) -> str | None:
    """Where Volcano's actions name no allocate, what Volcano does that the job cycle
    (core.gang), which always allocates, does not model: only allocate and backfill bind, and
    backfill only BestEffort tasks (v1.15.1 actions/backfill/backfill.go pickUpPendingTasks);
    without enqueue nothing moves a group out of Pending (allocate.go buildAllocateContext is
    what does it otherwise, and reclaim.go and backfill.go skip a Pending job)."""
    if "allocate" in actions:
        return None
    binds = "binds only backfill's BestEffort pods" if "backfill" in actions else "binds no pod"
    stays = "" if "enqueue" in actions else " and leaves every Pending PodGroup Pending"
    return (
        f"Volcano's actions ({', '.join(actions)}) name no allocate: Volcano {binds}{stays}; "
        "the advisor's cycle models allocate anyway"
    )


def _some(names: list[str], shown: int = 3) -> str:
    more = len(names) - shown
    return ", ".join(names[:shown]) + (f" and {more} more" if more > 0 else "")
