"""What the live sources hand to `assemble`: exporter samples and Kubernetes objects.

Metric names are docs/design.md §6's contract. A `Sample` is one series as a source read it, with
the `node` label the scrape config adds (or, scraping exporters directly, the node their
`xgpu_node_info` names) and its age, so that stale data can be flagged instead of used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from advisor import metricnames as M
from advisor.core.hpa import Autoscaler
from advisor.core.jobs import NO_JOBS, Jobs
from advisor.core.model import OtherPod
from advisor.podspec import PodGpu
from advisor.podspec.node import NodeScheduling
from advisor.podspec.scheduling import PodScheduling

MIB = 2**20

NODE_INFO = M.NODE_INFO.name
CARD_INFO = M.CARD_INFO.name
CARD_MEMORY = M.CARD_MEMORY_TOTAL.name
CARD_HEALTH = M.DEVICE_HEALTH.name
CARD_MODE = M.SCHEDULE_POLICY.name
VGPU_MEMORY = M.MEMORY_TOTAL.name
VGPU_CORE = M.CORE_TOTAL.name
COLLECTOR_SUCCESS = M.COLLECTOR_SUCCESS.name

CARD_MIG_MODE = M.CARD_MIG_MODE.name
MIG_INSTANCE = M.MIG_MEMORY_TOTAL.name  # one series per GPU instance (design §13)
# Per container and GPU instance its processes use: which instance a MIG pod holds (§13).
MIG_POD = M.MIG_POD_MEMORY_USED.name

CARD_FAMILIES = (CARD_INFO, CARD_MEMORY, CARD_HEALTH, CARD_MODE, CARD_MIG_MODE, MIG_INSTANCE)
VGPU_FAMILIES = (VGPU_MEMORY, VGPU_CORE)
FAMILIES = (NODE_INFO, *CARD_FAMILIES, *VGPU_FAMILIES, MIG_POD, COLLECTOR_SUCCESS)


def _frozen(labels: Mapping[str, str] | None = None) -> Mapping[str, str]:
    return MappingProxyType(dict(labels or {}))


def _frozen_scheduling() -> Mapping[str, PodScheduling]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class PodFacts:
    """A GPU pod's `status.startTime` (RFC 3339, None when absent or unreadable) and labels."""

    started: str | None = None
    labels: Mapping[str, str] = field(default_factory=_frozen)
    # What it says of its job (docs/design.md §10.1): its PodGroup's namespace/name (from
    # the group annotation), whether Volcano may evict it, kube-scheduler's preemption policy.
    group: str | None = None
    preemptable: bool = True
    preemption_policy: str = "PreemptLowerPriority"
    # metadata.creationTimestamp and the PodScheduled condition's time (§12.3), as started.
    created: str | None = None
    scheduled: str | None = None
    role: str | None = None  # its task role: `volcano.sh/task-spec`, annotation else label


def _frozen_counts() -> Mapping[str, int]:
    return MappingProxyType({})


def _frozen_facts() -> Mapping[str, PodFacts]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class Sample:
    """One series' latest value. `age_s`: seconds since it was sampled (None: scraped just now).
    `ended`: the store marked the series stale (its target vanished), whatever its age."""

    metric: str
    labels: Mapping[str, str] = field(default_factory=_frozen)
    value: float = 1.0
    age_s: float | None = None
    ended: bool = False

    def label(self, name: str) -> str:
        return self.labels.get(name, "")


@dataclass(frozen=True, slots=True)
class Stale:
    """Something left out of the model because its newest sample is too old."""

    subject: str  # "node gpu-3", "node gpu-3 card 1", "pod ml/a on node gpu-3"
    metric: str
    age_s: float
    ended: bool = False

    def __str__(self) -> str:
        how = "series ended" if self.ended else "last sample"
        return f"{self.subject}: {self.metric} {how} {self.age_s:.0f}s ago"


@dataclass(frozen=True, slots=True)
class KubeNode:
    name: str
    unavailable: str | None = None  # why its cards take no new pods ("not Ready")
    advertises_gpus: bool = False  # allocatable names a GPU resource of some dialect
    # The pods a drain would move (GPU or not; no DaemonSet, mirror, finished or terminating
    # pod), by name, with what would block evicting each and what each requests. Sorted.
    pods: tuple[OtherPod, ...] = ()
    # The pods that stay with it (DaemonSet, mirror, terminating), with what each requests.
    residents: tuple[OtherPod, ...] = ()
    # What kube-scheduler's other filters read: allocatable, labels, taints, the cordon.
    scheduling: NodeScheduling = field(default_factory=NodeScheduling)
    # What could not be read of it and of the pods bound to it, one warning line each.
    problems: tuple[str, ...] = ()
    # The schedulers' card registrations (annotation -> value), as the node carries them.
    registrations: Mapping[str, str] = field(default_factory=_frozen)
    # MIG profile -> instances its allocatable advertises (`nvidia.com/mig-<P>`, mixed).
    mig_allocatable: Mapping[str, int] = field(default_factory=_frozen_counts)


def _frozen_settings() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class KubeJobs:
    """What the API says of jobs (advisor.sources.kubejobs): `volcano` whether its CRDs are
    served; `settings` the `Scheduler` fields its configmap gives (actions, gang,
    overcommit_factor, queue_plugin, enable_hierarchy, ancestor_reclaim_level)."""

    jobs: Jobs = NO_JOBS
    volcano: bool = False
    settings: Mapping[str, Any] = field(default_factory=_frozen_settings)


NO_KUBE_JOBS = KubeJobs()


@dataclass(frozen=True, slots=True)
class KubeState:
    """Non-terminal GPU pods (parsed by advisor.podspec) and the nodes, from one API server."""

    source: str
    pods: tuple[PodGpu, ...] = ()
    nodes: tuple[KubeNode, ...] = ()
    warnings: tuple[str, ...] = ()
    # Each GPU pod's effective request and node constraints, by "namespace/pod".
    scheduling: Mapping[str, PodScheduling] = field(default_factory=_frozen_scheduling)
    # Each GPU pod's start time and labels: what the plans' disruption cost and
    # --never-evict read (docs/design.md §8), by "namespace/pod".
    facts: Mapping[str, PodFacts] = field(default_factory=_frozen_facts)
    jobs: KubeJobs = NO_KUBE_JOBS  # PodGroups, Queues, ResourceQuotas, Volcano's configuration
    autoscalers: tuple[Autoscaler, ...] = ()  # HorizontalPodAutoscalers (docs/design.md §12.1)
