"""What the diagnosis says (docs/design.md §3): each Pending pod's cause, message and node
reasons, and the whole cycle's verdicts. Values only; the cycle that finds them is
core.diagnose's (and core.gang's, with the job layer's causes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from advisor.core.jobs import GroupOutcome
from advisor.core.model import Placement, Pod, Policy
from advisor.core.nodefilters import fit_error
from advisor.core.preemption.verdict import Preemption

Cause = Literal[
    "invalid",
    "unsatisfiable",
    "schedulable",
    "node-resources",
    "fragmentation",
    "capacity",
    "gang",  # the job layer (core.gang, docs/design.md §10.3)
    "queue",
    "quota",
    "mig-geometry",  # MIG (core.mig_cycle, docs/design.md §13.2)
]
CAUSES: tuple[Cause, ...] = (
    "schedulable",
    "node-resources",
    "fragmentation",
    "capacity",
    "unsatisfiable",
    "invalid",
)
# The job layer's causes (core.gang, docs/design.md §10.3): in a summary and its renderings
# only where some pod has them, so that an output without gangs keeps its form.
# Decided first (§10.3: invalid, queue/quota, unsatisfiable, …): a pod its queue or quota
# holds is never tried on the nodes.
JOB_CAUSES: tuple[Cause, ...] = ("gang", "queue", "quota")
# MIG's cause (core.mig_cycle, docs/design.md §13.2): likewise shown only where some pod has
# it, so that an output of a cluster without MIG keeps its form.
MIG_CAUSES: tuple[Cause, ...] = ("mig-geometry",)
OPTIONAL_CAUSES = JOB_CAUSES + MIG_CAUSES
EVERY_CAUSE = CAUSES + OPTIONAL_CAUSES  # what --fail-on takes


def shown_causes(counts: Mapping[str, int]) -> tuple[Cause, ...]:
    """`CAUSES`, then each of `OPTIONAL_CAUSES` that `counts` (a summary) counts."""
    return CAUSES + tuple(c for c in OPTIONAL_CAUSES if counts.get(c))


@dataclass(frozen=True, slots=True)
class PodDiagnosis:
    pod: Pod
    cause: Cause
    message: str
    placement: Placement | None = None
    node_reasons: tuple[tuple[str, tuple[str, ...]], ...] = ()  # listed nodes only
    nodes_omitted: int = 0
    reason_counts: tuple[tuple[str, int], ...] = ()  # primary reason -> nodes, most first
    nodes_total: int = 0
    # Capacity pods only: whether the free memory (and core) on the cards that could hold a
    # slice of the pod covers it, so that consolidating alone could make room.
    cluster_free_sufficient: bool | None = None
    # Capacity pods only: whether all the free memory of the nodes it may use covers it, big
    # cards or not. Looser: a plan may move small pods off big cards onto small ones, so the
    # planner aims at these pods too (its plans are simulated; the advice reads the above).
    movable_free_sufficient: bool | None = None
    volcano: bool = False  # worded as Volcano's session words it ("nodes are unavailable")
    # What the real scheduler's preemption would do for a pod the cycle did not place
    # (core.preemption, docs/design.md §10.2); None for a pod placed without it.
    preemption: Preemption | None = None

    @property
    def node_summary(self) -> str | None:
        """kube-scheduler's FitError line: '0/5 nodes are available: 2 Insufficient cpu.',
        or Volcano's: '0/5 nodes are unavailable: …' (`nodefilters.fit_error`)."""
        if not self.reason_counts:
            return None
        return fit_error(self.nodes_total, self.reason_counts, self.volcano)


@dataclass(frozen=True, slots=True)
class Diagnosis:
    policy: Policy
    pods: tuple[PodDiagnosis, ...]  # queue order
    # Where gangs are judged (core.gang): each PodGroup with Pending members, and whether
    # the cluster has groups at all (then every pod names its group in the outputs).
    groups: tuple[GroupOutcome, ...] = ()
    grouped: bool = False

    def count(self, cause: Cause) -> int:
        return sum(1 for d in self.pods if d.cause == cause)

    @property
    def summary(self) -> dict[str, int]:
        counts: dict[str, int] = {"pending": len(self.pods)}
        counts.update((c, self.count(c)) for c in CAUSES)
        for cause in OPTIONAL_CAUSES:  # only where the job layer or MIG finds them
            if n := self.count(cause):
                counts[cause] = n
        return counts
