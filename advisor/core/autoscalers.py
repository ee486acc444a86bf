"""Reachable replicas (docs/design.md §12.2): how many more replicas each autoscaler's
target gets placed now if the HPA scales it from `replicas` up to `max_replicas`.

- The replica template is the target's newest running pod (latest `started`; on a tie, or
  where none says, the one listed last, which is the one created last): its request,
  resources, constraints and priority. A replica has no PodGroup of its own beyond its
  owner's automatic one, so the job layer sees each as a job of one pod. A target with no
  running pod is `unknown-template`: nothing is guessed.
- The replicas join the Pending pods as new pods, listed after every pod the cluster has:
  in queue order that is after every Pending pod of equal or higher priority, before those
  of lower priority. "One by one": the k-th replica is tried with the k−1 before it holding
  whatever they were placed on, in the very cycle every output judges by (`gang.judge`).
  `placeable` counts the replicas placed; `blocked` is the verdict of the first one left
  Pending (its cause, and the node summary the diagnosis gives a Pending pod).

Cost: one judged cycle per autoscaler with room to grow. Where the profile runs no Volcano
session, a Pending pod queued after the replicas (lower priority) cannot change where they
go, so those pods are left out of that cycle; under Volcano's session enqueue and the
queues' shares see every job, so they stay.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime

from advisor.core.diagnosis import Cause
from advisor.core.gang import judge
from advisor.core.hpa import Autoscaler, owned_by
from advisor.core.model import Cluster, Pod
from advisor.core.plan.cost import parse_time
from advisor.core.profiles import profile_of

_NEVER = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Blocked:
    """The first added replica the cycle leaves Pending."""

    cause: Cause
    message: str
    node_summary: str | None


@dataclass(frozen=True, slots=True)
class Reach:
    """One autoscaler's reachable replicas. `template` is None (and `placeable` None) where
    the target has no running pod."""

    autoscaler: Autoscaler
    template: str | None
    placeable: int | None
    blocked: Blocked | None

    @property
    def status(self) -> str:
        if self.template is None:
            return "unknown-template"
        return "blocked" if self.blocked is not None else "reachable"


def template_of(cluster: Cluster, target: str) -> Pod | None:
    """The target's newest running pod, or None."""
    best: tuple[datetime, int, Pod] | None = None
    for index, pod in enumerate(cluster.pods):
        if pod.placement is None or not owned_by(pod.owner, target):
            continue
        when = (parse_time(pod.started) if pod.started else None) or _NEVER
        if best is None or (when, index) >= best[:2]:
            best = (when, index, pod)
    return None if best is None else best[2]


def replicas_of(template: Pod, autoscaler: Autoscaler) -> tuple[Pod, ...]:
    """The replicas the HPA would add, as new Pending pods shaped like `template`. Their
    names hold a space, which no Kubernetes name does, so they never meet a real pod's."""
    name = autoscaler.target.rsplit("/", 1)[1]
    return tuple(
        replace(
            template,
            name=f"{template.namespace}/{name} (replica {autoscaler.replicas + k})",
            placement=None,
            group=None,
            started=None,
        )
        for k in range(1, autoscaler.headroom + 1)
    )


def reach(cluster: Cluster, autoscaler: Autoscaler) -> Reach:
    template = template_of(cluster, autoscaler.target)
    if template is None:
        return Reach(autoscaler, None, None, None)
    added = replicas_of(template, autoscaler)
    if not added:
        return Reach(autoscaler, template.name, 0, None)
    pods = cluster.pods
    if not profile_of(cluster.scheduler).session.volcano:
        # queued after the replicas: they cannot change where the replicas go
        floor = template.priority
        pods = tuple(p for p in pods if p.running or p.priority >= floor)
    trial = replace(cluster, pods=pods + added)
    names = {p.name for p in added}
    verdicts = [d for d in judge(trial, node_detail_limit=0).pods if d.pod.name in names]
    placed = sum(1 for d in verdicts if d.placement is not None)
    first = next((d for d in verdicts if d.placement is None), None)
    blocked = None
    if first is not None:
        blocked = Blocked(first.cause, first.message, first.node_summary)
    return Reach(autoscaler, template.name, placed, blocked)


def reachable(cluster: Cluster) -> tuple[Reach, ...]:
    """Every autoscaler's reach, in the order the cluster lists them."""
    return tuple(reach(cluster, a) for a in cluster.autoscalers)
