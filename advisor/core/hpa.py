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


def owned_by(owner: str | None, target: str) -> bool:
    """Whether a pod whose controller is `owner` is a replica of `target`. A Deployment's
    pods name their ReplicaSet (`<deployment>-<pod-template-hash>`, the hash without a dash)
    as owner, so a Deployment target also owns the pods of such a ReplicaSet."""
    if owner is None:
        return False
    if owner == target:
        return True
    kind, _, rest = target.partition("/")
    owner_kind, _, owner_rest = owner.partition("/")
    if kind != "Deployment" or owner_kind != "ReplicaSet":
        return False
    prefix = rest + "-"
    if not owner_rest.startswith(prefix):
        return False
    suffix = owner_rest[len(prefix) :]
    return bool(suffix) and "-" not in suffix
