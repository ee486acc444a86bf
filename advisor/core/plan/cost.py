"""What an eviction costs the team that owns the pod (docs/design.md §8, "disruption cost").

A plan is ranked by what its evictions cost per rescued GPU of memory, not by their count:
restarting a Deployment's replica costs seconds, restarting a training run that has gone
for hours costs hours. The cost of one eviction comes from what the cluster knows:

- the owner's kind: a ReplicaSet or Deployment replica is cheap (1), a StatefulSet's dearer
  (2: a stable identity and often a warm cache to rebuild), a Job's, a PyTorchJob's, a
  Volcano Job's or any other batch owner's dearest (4, plus 1 for each hour the pod has run,
  up to a day: the work lost since its last checkpoint grows with its run time);
- a controller kind the advisor does not know, or no controller at all, is priced as batch:
  nothing says a restart is cheap (and a pod with no controller is not even recreated);
- pods of one batch workload evicted by one plan are charged once: a gang restarts together;
  so are the members of a gang (a PodGroup with min_member above 1 under Volcano's session),
  whatever their owners, which a plan evicts whole or only its surplus over min_member
  (docs/design.md §10.4): never more than the whole gang costs;
- the annotation `xgpu.io/eviction-cost` (a number >= 0) overrides all of it.

Pure: the run times are measured from `now`, which the caller passes or which defaults to the
latest start time in the input (the newest pod started no later than the snapshot), so the
same input always prices the same.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime

from advisor.core.model import Pod
from advisor.core.times import parse_time

EVICTION_COST = "xgpu.io/eviction-cost"
REPLICA_KINDS = frozenset({"ReplicaSet", "Deployment"})
STATEFUL_KINDS = frozenset({"StatefulSet"})
# Batch owners the advisor names as such; any other kind is priced the same way.
BATCH_KINDS = frozenset(
    {
        "Job",  # Kubernetes batch/v1 and Volcano's batch.volcano.sh Job
        "CronJob",
        "PyTorchJob",
        "TFJob",
        "MPIJob",
        "XGBoostJob",
        "PaddleJob",
        "JAXJob",
        "TrainJob",
        "RayJob",
        "PodGroup",
        "Workflow",
    }
)
REPLICA_COST = 1.0
STATEFUL_COST = 2.0
BATCH_COST = 4.0
BATCH_COST_PER_HOUR = 1.0
BATCH_HOURS_CAP = 24.0  # beyond a day a checkpoint has surely been written


@dataclass(frozen=True, slots=True)
class EvictionCost:
    """One pod's price: `cost` for evicting it, `why` in words, and the workload whose pods
    one plan pays for once (`gang`: a batch owner, or "gang <PodGroup>"), or None when each
    pod pays."""

    cost: float
    why: str
    gang: str | None = None


def latest_start(pods: Iterable[Pod]) -> datetime | None:
    """The newest start time among `pods`: the default "now" for run times."""
    times = [t for p in pods if p.started and (t := parse_time(p.started)) is not None]
    return max(times) if times else None


def owner_kind(owner: str | None) -> str | None:
    """The kind of a "Kind/namespace/name" owner."""
    if not owner:
        return None
    return owner.split("/", 1)[0] or None


def eviction_cost(pod: Pod, now: datetime | None, gang: str | None = None) -> EvictionCost:
    """What evicting `pod` costs, and why (see the module's docstring). `gang`: the gang
    (PodGroup, min_member above 1) it belongs to, whose members restart together whatever
    their owner: one plan pays for them once."""
    priced = _eviction_cost(pod, now)
    if gang is None:
        return priced
    return EvictionCost(priced.cost, priced.why, f"gang {gang}")


def _eviction_cost(pod: Pod, now: datetime | None) -> EvictionCost:
    override = pod.annotations.get(EVICTION_COST)
    problem = ""
    if override is not None:
        value = _number(override)
        if value is not None:
            return EvictionCost(value, f"{EVICTION_COST}: {override.strip()}")
        problem = f"; {EVICTION_COST} {override.strip()!r} is not a number >= 0, ignored"
    kind = owner_kind(pod.owner)
    if kind in REPLICA_KINDS:
        return EvictionCost(REPLICA_COST, f"{kind} replica{problem}")
    if kind in STATEFUL_KINDS:
        return EvictionCost(STATEFUL_COST, f"{kind} replica{problem}")
    if kind is None:
        what = "no controller known, priced as batch"
    elif kind in BATCH_KINDS:
        what = kind
    else:
        what = f"{kind}, a kind priced as batch"
    hours = _hours_run(pod, now)
    if hours is None:
        cost, ran = BATCH_COST, "run time unknown"
    else:
        counted = min(hours, BATCH_HOURS_CAP)
        cost = BATCH_COST + BATCH_COST_PER_HOUR * round(counted, 2)
        ran = f"ran {_hours_text(hours)}"
    return EvictionCost(cost, f"{what}, {ran}{problem}", pod.owner if kind else None)


def plan_cost(costs: Sequence[EvictionCost], pods: Iterable[int]) -> float:
    """What evicting `pods` (indices into `costs`) together costs: a batch workload's pods
    once (its dearest), every other pod for itself."""
    total = 0.0
    gangs: dict[str, float] = {}
    for pod in pods:
        price = costs[pod]
        if price.gang is None:
            total += price.cost
        else:
            gangs[price.gang] = max(gangs.get(price.gang, 0.0), price.cost)
    return round(total + sum(gangs.values()), 6)


def _number(text: str) -> float | None:
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None


def _hours_run(pod: Pod, now: datetime | None) -> float | None:
    if not pod.started or now is None:
        return None
    started = parse_time(pod.started)
    if started is None:
        return None
    return max((now - started).total_seconds() / 3600, 0.0)


def _hours_text(hours: float) -> str:
    if hours < 1:
        return f"{round(hours * 60)} min"
    return f"{hours:.1f} h"
