"""HorizontalPodAutoscalers as the scenario gives them (docs/design.md §12.1): frozen values
the core reads, kept apart from the job layer's (`core.jobs`)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class PodMetric:
    """One `Pods` metric of the HPA: the per-pod series and the average it aims at."""

    pod_metric: str
    target_average: float


@dataclass(frozen=True, slots=True)
class Autoscaler:
    name: str  # namespace/name of the HorizontalPodAutoscaler
    target: str  # scaleTargetRef as pods' `owner` names it: Kind/namespace/name
    min_replicas: int
    max_replicas: int
    replicas: int  # status.currentReplicas
    metrics: tuple[PodMetric, ...] = ()

    @property
    def headroom(self) -> int:
        """Replicas the HPA may still add: max − replicas, none when already past max."""
        return max(0, self.max_replicas - self.replicas)


def targets_of(owner: str | None) -> tuple[str, ...]:
    """The targets a pod whose controller is `owner` is a replica of: the owner itself, and
    for a ReplicaSet named `<deployment>-<pod-template-hash>` (the hash without a dash) its
    Deployment, as a Deployment's pods name their ReplicaSet as owner."""
    if owner is None:
        return ()
    kind, _, rest = owner.partition("/")
    namespace, _, name = rest.partition("/")
    base, dash, suffix = name.rpartition("-")
    if kind != "ReplicaSet" or not (dash and base and suffix):
        return (owner,)
    return (owner, f"Deployment/{namespace}/{base}")


def owned_by(owner: str | None, target: str) -> bool:
    """Whether a pod whose controller is `owner` is a replica of `target`."""
    return target in targets_of(owner)
