"""The scaling advice of one run, judged after the rebalancing plans: scale-up for what the
plans leave Pending (`scaling.up`), scale-down of the idle nodes (`scaling.down`), and each
Pending pod's advice (`core.remedy`) decided by the same plans."""

from __future__ import annotations

from collections.abc import Sequence

from advisor.core.diagnosis import Diagnosis
from advisor.core.mig_partition import search
from advisor.core.model import Cluster
from advisor.core.plan import PlanReport, apply_plans
from advisor.core.remedy import Remedy, remedies
from advisor.core.scaling.down import ScaleDownAdvice, scale_down_advice
from advisor.core.scaling.up import ScaleUpAdvice, scale_up_advice


def plan_outcome(plans: PlanReport) -> tuple[frozenset[str], frozenset[str]]:
    """The pods the plans rescue, and those a plan held back by a cap would rescue."""
    rescued = frozenset(name for p in plans.plans for name in p.rescues)
    held = frozenset(name for h in plans.held_back for name in h.rescues) - rescued
    return rescued, held


def pod_remedies(
    diagnosis: Diagnosis, plans: PlanReport, cluster: Cluster | None = None
) -> tuple[Remedy, ...]:
    """Each Pending pod's advice and whether a scale-up is proposed for it, after the plans:
    what `scaling_advice` proposes nodes by. Given the cluster, a `mig-geometry` pod's
    advice carries its verified re-partition (`core.mig_partition`)."""
    if cluster is None:
        return remedies(diagnosis, *plan_outcome(plans))
    found = search(cluster, diagnosis)
    by_pod = {r.pod: r for r in found.repartitions}
    return remedies(diagnosis, *plan_outcome(plans), by_pod, found.unsearched)


def scaling_advice(
    cluster: Cluster,
    plans: PlanReport,
    diagnosis: Diagnosis,
    scale_down_threshold: float = 0.3,
    decided: Sequence[Remedy] | None = None,
) -> tuple[ScaleUpAdvice, ScaleDownAdvice]:
    """Scale-up for what the plans leave Pending (the pods `pod_remedies` proposes nodes
    for); scale-down judged on the cluster after the plans, so that no node a plan moves
    pods onto is also proposed for removal. Each advice is a sequence of steps; scale-up's
    carries the pods no node would help (`not_triggered`), scale-down's the idle nodes kept
    (`held`). `decided`: the pods' `pod_remedies`, where the caller has them (so the
    re-partitions are searched once and the nodes follow the advice the pods show)."""
    downs = scale_down_advice(apply_plans(cluster, plans), threshold=scale_down_threshold)
    return scale_up_after(cluster, plans, diagnosis, decided), downs


def scale_up_after(
    cluster: Cluster,
    plans: PlanReport,
    diagnosis: Diagnosis,
    decided: Sequence[Remedy] | None = None,
) -> ScaleUpAdvice:
    """Scale-up for what the plans leave Pending: `scaling_advice`'s, without scale-down."""
    rescued, held = plan_outcome(plans)
    return scale_up_advice(cluster, rescued, diagnosis, held=held, decided=decided)
