"""What to do about each Pending pod: the advice its cause is worded with and whether a
scale-up is proposed for it, decided together by one function, `remedy`, so that the two
cannot contradict each other.

The cause is a fact of the current cycle (docs/design.md §3); the advice also weighs the
rebalancing plans. A `Remedy` is the one value every output renders for a pod (diagnose,
plan, report, in every format; an autoscaler's replicas that do not fit get theirs as
Pending pods, `core.scaling.replicas`): its cause and headline, the advice key, the
scale-up, why, and what to do (`ACTIONS`). A `capacity` pod whose nodes' free memory
would cover it in total, or a `fragmentation` pod, is advised to consolidate only while a
plan makes room for it (found, or held back by a cap on evictions): then no node is
proposed, since one would waste money. When no plan makes room (pods that may not move,
cards too small to take the moved pods, the nodes' other filters) the free memory is there
only on paper: the advice is `no-plan` and a scale-up is proposed. Advice keys:

| key | scale-up | when |
|---|---|---|
| `schedulable` | no | it fits now |
| `invalid` | no | the request breaks a rule: fix it |
| `fragmentation` | no | room split across cards; a plan (found or held back) rebalances it |
| `capacity-consolidate` | no | enough free in total; a plan (found or held back) makes room |
| `rebalance` | no | another cause, but a plan's moves free what it lacks |
| `no-plan` | yes | fragmentation or enough free in total, but no plan makes room |
| `capacity-scale-up` | yes | the cards that could hold it lack the free memory or core in total |
| `capacity` | yes | capacity, with no total computed |
| `node-resources` | no | GPUs fit, cpu, memory or pod slots do not: `core.scaling.relief`, no GPU |
| `unsatisfiable` | yes | no node it may use could ever take it: a new node shape |
| `gang` | no | it fits, but its gang cannot start min_member at once: see its mates' advice |
| `queue` | no | its Volcano queue does not admit its group, or has no room for it |
| `quota` | no | its namespace's ResourceQuota on HAMi's resources would be exceeded |
| `mig-geometry` | no | a MIG card's re-partition, verified by simulation, makes room |
| `mig-no-repartition` | yes | mig-geometry, but no re-partition was verified |

Any pod a plan rescues is never proposed a node. A pod proposed one may still get none when
no node template admits it (`ScaleUpAdvice.not_triggered` says why).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from advisor.core.diagnosis import Diagnosis, PodDiagnosis

if TYPE_CHECKING:
    from advisor.core.mig_partition import Repartition

# Advice that tells the reader not to add nodes, and advice that proposes them.
# `node-resources` proposes no GPU node: what frees its cpu or memory is `core.scaling.relief`'s.
ADVISES_NO_NODES = frozenset(
    {
        "schedulable",
        "invalid",
        "fragmentation",
        "capacity-consolidate",
        "rebalance",
        "node-resources",
        "gang",  # its gang mates that fail on their own carry the advice that helps
        "queue",  # the queue's share or capability, not the nodes, keeps it out
        "quota",  # the namespace's quota, not the nodes, keeps it out
        "mig-geometry",  # a re-partition of a MIG card, not a node, makes room
    }
)
# `mig-no-repartition` proposes nodes as `no-plan` does: with no re-partition verified, a new
# node whose MIG layout offers the profile is what the autoscaler would add (design §13).
ADVISES_NODES = frozenset(
    {"no-plan", "capacity-scale-up", "capacity", "unsatisfiable", "mig-no-repartition"}
)
WHY: Mapping[str, str] = MappingProxyType(
    {
        "schedulable": "it fits now",
        "invalid": "its request can never be scheduled as it is",
        "fragmentation": "the room is there on one node, split across its cards",
        "capacity-consolidate": "the cards that could hold it have enough free in total",
        "rebalance": "a rebalancing plan makes room for it",
        "no-plan": "no rebalancing plan makes room for it, though the free memory would "
        "cover it if it could be rearranged",
        "capacity-scale-up": "the cards that could hold it lack the free memory or core, even "
        "in total",
        "capacity": "no node it may use has enough free",
        "node-resources": "its GPUs fit, but no node it may use has the cpu, memory or pod "
        "slot it asks for",
        "unsatisfiable": "no node it may use could ever take it",
        "mig-geometry": "no free MIG instance of its profile, but a MIG card's unoccupied "
        "slices would hold one if re-partitioned",
        "mig-no-repartition": "a MIG card's unoccupied slices would hold it, but no "
        "re-partition of a node's cards was verified to make room",
        "gang": "it fits, but its gang cannot place min_member of its pods at once",
        "queue": "its Volcano queue does not admit its group, or has no room left for it",
        "quota": "its namespace's ResourceQuota on GPU memory or cores would be exceeded",
    }
)


NOT_SEARCHED = (
    "a MIG card's unoccupied slices would hold it; its re-partition was not searched (the "
    "run's simulations for re-partitions were spent on the pods before it)"
)

# What to do about each advice key: a title and the advice, the words every output shows.
ACTIONS: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "schedulable": (
            "Schedulable",
            "These fit on the cards shown in this simulated cycle, on a node that also has the "
            "cpu, memory and pod slot they ask for and that their node selector, affinity and "
            "tolerations admit. If they stay Pending, the node is not what blocks them: look at "
            "quotas, pod affinity, topology spread, volumes or ports.",
        ),
        "node-resources": (
            "Node resources",
            "Their GPUs fit now on a node they may use, but that node lacks the cpu, memory or "
            "pod slots they request. Free or add cpu and memory on the GPU nodes, not GPUs: "
            "check the pod's requests (are they what it needs?), and look at the other pods on "
            "the GPU nodes (CPU-only pods that could run elsewhere).",
        ),
        "fragmentation": (
            "Fragmentation",
            "The free memory is there on one node, but split wrongly across its cards, held by "
            "a card of the other isolation mode, or behind the vGPU limit. Rebalance "
            "(`xgpu-advisor plan`) or move small pods off these cards; do not add nodes.",
        ),
        "capacity-consolidate": (
            "Capacity, consolidation would help",
            "No single node has enough free, but the cards that could hold these do, together. "
            "Consolidating pods across nodes (`xgpu-advisor plan`) can make room; scaling up "
            "would waste money.",
        ),
        "rebalance": (
            "A plan makes room",
            "A rebalancing plan (below) lets these run.",
        ),
        "no-plan": (
            "No plan makes room, scale up",
            "The free memory would cover these if rearranged, but no rebalancing plan makes "
            "room (pods that may not move, cards too small for the moved pods, the nodes' other "
            "filters). Add nodes as proposed below, or free room by hand.",
        ),
        "capacity-scale-up": (
            "Capacity, scale up",
            "The cards that could hold these lack the free memory or core for them, even all "
            "together. Add GPU nodes or evict lower-priority pods.",
        ),
        "capacity": (
            "Capacity",
            "No node has enough free in total. Add GPU nodes, evict lower-priority pods, or "
            "consolidate if the cluster as a whole has room.",
        ),
        "unsatisfiable": (
            "Unsatisfiable",
            "No node the pod may use (its node selector, affinity and tolerations decide) has "
            "enough cards of the size asked for, or the allocatable cpu and memory it requests, "
            "even empty and repaired. Shrink the request (fewer cards, less memory per card, "
            "less cpu or memory) or add a node with larger or more cards that the pod may use.",
        ),
        "gang": (
            "Gang",
            "These would be placed, but Volcano places a gang all-or-nothing and the rest of "
            "their gang (PodGroup) cannot start min_member pods in the same cycle, so every "
            "placement of the job is rolled back. Look at the gang's other Pending pods: what "
            "keeps them out (fragmentation, capacity, node resources) is what to fix.",
        ),
        "queue": (
            "Queue",
            "Volcano's queue keeps these out before any node is tried: the queue is not Open, "
            "its capability (or its weight's share of the cluster, its deserved) is used up by "
            "its running jobs, or the cluster is overcommitted by the groups already admitted "
            "(see the message: which queue, which resource). Raise the queue's capability or "
            "weight, open it, lower the group's minResources, move the job to a queue with "
            "room, or wait for the queue's jobs to finish. Adding nodes or rebalancing does "
            "not help while the queue's limit, not the cluster, binds.",
        ),
        "mig-geometry": (
            "MIG geometry",
            "No free MIG instance of the profile these ask for, but a MIG card's unoccupied "
            "slices (held by no pod) would hold it at a start the card allows, were its free "
            "instances destroyed: re-partition those cards (the nvidia-mig-parted "
            "configuration below, verified by simulation; drain the pods it names first, "
            "since mig-parted clears a card whose counts change) rather than add nodes.",
        ),
        "mig-no-repartition": (
            "MIG geometry, no re-partition found",
            "A MIG card's unoccupied slices would hold these, but no re-partition of a node's "
            "cards was verified by simulation to make room without leaving another pod "
            "waiting (or the run's simulations ran out first, as the pod's advice says): add "
            "the nodes below, where a node group's MIG layout offers the profile (the "
            "cluster-autoscaler adds them for these pods on its own), re-partition by hand, or "
            "wait for the instances to free.",
        ),
        "quota": (
            "Quota",
            "HAMi refuses every card for these: their namespace's ResourceQuota on "
            "limits.nvidia.com/gpumem or limits.nvidia.com/gpucores would be exceeded by what "
            "its running pods hold plus this request (see the message). Raise the quota, "
            "shrink the request, or end other pods of the namespace; nodes and plans do not "
            "help.",
        ),
        "invalid": (
            "Invalid request",
            "The request breaks a rule of the even-split model (see the message). Fix the pod's "
            "GPU resources; it will never be scheduled as it is.",
        ),
    }
)


@dataclass(frozen=True, slots=True)
class Remedy:
    """One Pending pod's advice, the one value every output renders: its cause and headline
    (the diagnosis's), the advice key above, whether a scale-up is proposed, why, and what to
    do (`title`, `text`)."""

    pod: str
    advice: str
    scale_up: bool
    why: str
    cause: str
    headline: str
    # a `mig-geometry` pod's verified re-partition (core.mig_partition); None: none found
    repartition: Repartition | None = None

    @property
    def title(self) -> str:
        return ACTIONS[self.advice][0]

    @property
    def text(self) -> str:
        return ACTIONS[self.advice][1]


def remedy(
    verdict: PodDiagnosis,
    rescued: Collection[str] = (),
    held: Collection[str] = (),
    repartition: Repartition | None = None,
    searched: bool = True,
) -> Remedy:
    """The advice for one diagnosed pod and whether it gets a scale-up, given the pods the
    rebalancing plans rescue and those a plan held back by a cap would rescue, and for a
    `mig-geometry` pod its verified re-partition (`core.mig_partition`)."""
    name, cause = verdict.pod.name, verdict.cause

    def decide(advice: str, why: str | None = None) -> Remedy:
        scale_up = advice in ADVISES_NODES
        return Remedy(name, advice, scale_up, why or WHY[advice], cause, verdict.message)

    if cause == "mig-geometry":  # no plan helps; the re-partition is the advice
        if repartition is None:
            return decide("mig-no-repartition", None if searched else NOT_SEARCHED)
        return Remedy(name, cause, False, repartition.summary, cause, verdict.message, repartition)
    if cause in ("schedulable", "invalid", "queue", "quota"):  # no plan helps
        return decide(cause)
    consolidating = cause == "fragmentation" or (
        cause == "capacity" and verdict.cluster_free_sufficient is True
    )
    consolidate = "fragmentation" if cause == "fragmentation" else "capacity-consolidate"
    if name in rescued:  # whatever the cause: the plan's moves free what it lacks
        advice = consolidate if cause in ("fragmentation", "capacity") else "rebalance"
        return decide(advice, "a rebalancing plan makes room for it")
    if name in held and cause in ("fragmentation", "capacity"):
        return decide(consolidate, "a rebalancing plan makes room, above a cap on evictions")
    if consolidating:
        return decide("no-plan")
    if cause == "capacity":
        sufficient = verdict.cluster_free_sufficient
        return decide("capacity" if sufficient is None else "capacity-scale-up")
    return decide(cause)  # node-resources, unsatisfiable, gang


def remedies(
    diagnosis: Diagnosis,
    rescued: Collection[str] = (),
    held: Collection[str] = (),
    repartitions: Mapping[str, Repartition] = MappingProxyType({}),
    unsearched: Collection[str] = (),
) -> tuple[Remedy, ...]:
    """`remedy` of every diagnosed pod, in queue order; `repartitions` by pod, and the
    `mig-geometry` pods whose re-partition was not searched."""
    return tuple(
        remedy(d, rescued, held, repartitions.get(d.pod.name), d.pod.name not in unsearched)
        for d in diagnosis.pods
    )
