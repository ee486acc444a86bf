"""What would make room for the replicas an autoscaler cannot place (docs/design.md §12.2):
the remedy a Pending pod gets (`core.remedy.remedy`, weighed against the rebalancing plans,
with the scale-up `scaling.advice` proposes after them), given to those replicas as if they
were Pending, never a second opinion.

The trial is the cluster with every blocked autoscaler's replicas, up to `max_replicas`,
added as Pending pods where `core.autoscalers` queues them (after every pod the cluster
lists, so after every Pending pod of equal or higher priority). On it the run every command
makes is made once: the judged cycle, the plans (with the caller's options), the scale-up
after them, and each Pending pod's remedy. The replicas the cycle places there are the ones
`placeable` counts; the others are read off it: their remedies, the plans that rescue them,
the nodes proposed for them.

One trial for all blocked autoscalers, not one each: one more planning pass, whatever their
count. So their replicas compete, as when their HPAs scale up together: a plan's room goes
to the replica queued first, the nodes proposed host all of them (and the cluster's own
Pending pods the scale-up packs with them), and an autoscaler whose replicas place alone may
find fewer placed here. The reachable autoscalers' replicas are left out: they fit, and
need no remedy.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType

from advisor.core.autoscalers import Reach, replicas_of, templates
from advisor.core.diagnosis import Diagnosis
from advisor.core.gang import judge
from advisor.core.model import Cluster, Pod
from advisor.core.plan import PlanOptions, PlanReport, plan
from advisor.core.remedy import Remedy
from advisor.core.scaling.advice import pod_remedies, scale_up_after
from advisor.core.scaling.up import ScaleUpAdvice


@dataclass(frozen=True, slots=True)
class Trial:
    """The run on the cluster with the blocked autoscalers' replicas Pending. `replicas`:
    each blocked autoscaler's name, with its replicas' pod names in queue order; `left`: the
    remedies of those the trial leaves Pending, in queue order (`pod_remedies`, as every
    command decides a Pending pod's)."""

    cluster: Cluster
    diagnosis: Diagnosis
    plans: PlanReport
    scale_up: ScaleUpAdvice
    replicas: Mapping[str, tuple[str, ...]]
    left: Mapping[str, tuple[Remedy, ...]]


def replica_trial(
    cluster: Cluster,
    reaches: Sequence[Reach],
    options: PlanOptions,
    clock: Callable[[], float] | None = None,
) -> Trial | None:
    """The trial of the blocked autoscalers among `reaches` (`core.autoscalers.judged`'s, of
    `cluster`), planned with `options` and `clock` as the caller plans the cluster itself;
    None when none is blocked."""
    blocked = [r.autoscaler for r in reaches if r.status == "blocked"]
    if not blocked:
        return None
    newest = templates(cluster)
    added: list[Pod] = []
    names: dict[str, tuple[str, ...]] = {}
    seen: set[str] = set()
    for a in blocked:
        # two HPAs of one target (Kubernetes refuses the second) add its replicas once
        pods = [p for p in replicas_of(newest[a.target], a) if p.name not in seen]
        seen.update(p.name for p in pods)
        added.extend(pods)
        names[a.name] = tuple(p.name for p in replicas_of(newest[a.target], a))
    trial = replace(cluster, pods=cluster.pods + tuple(added))
    diagnosis = judge(trial, node_detail_limit=0)  # as `plan` judges it
    plans = plan(trial, options, clock=clock, diagnosis=diagnosis)
    ups = scale_up_after(trial, plans, diagnosis)
    placed = {d.pod.name for d in diagnosis.pods if d.placement is not None}
    decided = {r.pod: r for r in pod_remedies(diagnosis, plans) if r.pod not in placed}
    left = {a: tuple(decided[p] for p in pods if p in decided) for a, pods in names.items()}
    return Trial(trial, diagnosis, plans, ups, MappingProxyType(names), MappingProxyType(left))
