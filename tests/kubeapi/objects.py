"""Builders for pod, node, PodDisruptionBudget, ResourceQuota, ConfigMap and Volcano
PodGroup and Queue JSON shaped like the Kubernetes API's (what
`kubectl get -o json` shows, less the fields nobody here reads)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

JsonObject = dict[str, Any]
CREATED = "2024-05-01T10:00:00Z"  # the store's creationTimestamp of an object given none


def container(
    name: str = "main",
    *,
    limits: Mapping[str, str | int] | None = None,
    requests: Mapping[str, str | int] | None = None,
    env: Mapping[str, str] | None = None,
) -> JsonObject:
    resources: JsonObject = {}
    if limits:
        resources["limits"] = {k: str(v) for k, v in limits.items()}
    if requests:
        resources["requests"] = {k: str(v) for k, v in requests.items()}
    spec: JsonObject = {"name": name, "image": "registry.local/app:1", "resources": resources}
    if env:
        spec["env"] = [{"name": k, "value": v} for k, v in env.items()]
    return spec


def container_id(namespace: str, pod: str, name: str) -> str:
    """A stable 64-hex runtime id, the way containerd names containers."""
    return hashlib.sha256(f"{namespace}/{pod}/{name}".encode()).hexdigest()


def pod(
    name: str,
    *,
    namespace: str = "default",
    node: str | None = None,
    phase: str = "Running",
    annotations: Mapping[str, str] | None = None,
    labels: Mapping[str, str] | None = None,
    containers: Sequence[JsonObject] | None = None,
    init_containers: Sequence[JsonObject] | None = None,
    priority: int | None = None,
    uid: str | None = None,
    owner: tuple[str, str] | None = None,
    runtime: str = "containerd",
    volumes: Sequence[JsonObject] | None = None,
    node_selector: Mapping[str, str] | None = None,
    affinity: JsonObject | None = None,
    tolerations: Sequence[JsonObject] | None = None,
    overhead: Mapping[str, str] | None = None,
    created: str | None = None,
    scheduled: str | None = None,
) -> JsonObject:
    """A pod; running pods (phase Running with a node) get container statuses with ids.
    `node_selector`, `affinity`, `tolerations` and `overhead` are the spec's fields as given.
    `created` is its creationTimestamp (the store's default when None); a pod with a node has
    the PodScheduled condition, True since `scheduled` (else since its creation), one
    without it False (Unschedulable), as the scheduler leaves them."""
    spec_containers = list(containers) if containers else [container()]
    obj: JsonObject = {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": spec_containers, "schedulerName": "volcano"},
        "status": {"phase": phase},
    }
    metadata = obj["metadata"]
    if uid is not None:
        metadata["uid"] = uid
    if created is not None:
        metadata["creationTimestamp"] = created
    obj["status"]["conditions"] = [_pod_scheduled(node, scheduled or created or CREATED)]
    if annotations:
        metadata["annotations"] = dict(annotations)
    if labels:
        metadata["labels"] = dict(labels)
    if owner is not None:
        kind, owner_name = owner
        metadata["ownerReferences"] = [
            {
                "apiVersion": "apps/v1",
                "kind": kind,
                "name": owner_name,
                "uid": f"uid-{kind.lower()}-{owner_name}",
                "controller": True,
            }
        ]
    if init_containers:
        obj["spec"]["initContainers"] = list(init_containers)
    if volumes:
        obj["spec"]["volumes"] = list(volumes)
    for key, value in (
        ("nodeSelector", node_selector),
        ("affinity", affinity),
        ("tolerations", tolerations),
        ("overhead", overhead),
    ):
        if value is not None:
            obj["spec"][key] = dict(value) if isinstance(value, Mapping) else list(value)
    if priority is not None:
        obj["spec"]["priority"] = priority
    if node is not None:
        obj["spec"]["nodeName"] = node
    if node is not None and phase == "Running":
        obj["status"]["containerStatuses"] = [
            {
                "name": c["name"],
                "ready": True,
                "restartCount": 0,
                "image": c.get("image", ""),
                "imageID": f"{c.get('image', '')}@sha256:{'0' * 64}",
                "containerID": f"{runtime}://{container_id(namespace, name, c['name'])}",
                "state": {"running": {"startedAt": "2024-05-01T10:00:00Z"}},
            }
            for c in spec_containers
        ]
    return obj


def _pod_scheduled(node: str | None, since: str) -> JsonObject:
    if node is None:
        return {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "lastProbeTime": None,
            "lastTransitionTime": since,
        }
    return {
        "type": "PodScheduled",
        "status": "True",
        "lastProbeTime": None,
        "lastTransitionTime": since,
    }


def node(
    name: str,
    *,
    labels: Mapping[str, str] | None = None,
    allocatable: Mapping[str, str | int] | None = None,
    unschedulable: bool = False,
    ready: bool = True,
    taints: Sequence[JsonObject] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> JsonObject:
    resources = {k: str(v) for k, v in (allocatable or {}).items()}
    obj: JsonObject = {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {},
        "status": {
            "capacity": dict(resources),
            "allocatable": dict(resources),
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
        },
    }
    if annotations:
        obj["metadata"]["annotations"] = dict(annotations)
    if unschedulable:
        obj["spec"]["unschedulable"] = True
    if taints is not None:
        obj["spec"]["taints"] = list(taints)
    return obj


def pdb(
    name: str,
    *,
    namespace: str = "default",
    selector: JsonObject | None = None,
    disruptions_allowed: int | None = 1,
    min_available: int | str | None = 1,
    generation: int = 1,
    observed_generation: int | None = 1,
) -> JsonObject:
    """A policy/v1 PodDisruptionBudget with the status the disruption controller writes
    (`disruptions_allowed` None: no status yet). `selector` None: a null selector."""
    spec: JsonObject = {}
    if selector is not None:
        spec["selector"] = selector
    if min_available is not None:
        spec["minAvailable"] = min_available
    obj: JsonObject = {
        "kind": "PodDisruptionBudget",
        "apiVersion": "policy/v1",
        "metadata": {"name": name, "namespace": namespace, "generation": generation},
        "spec": spec,
    }
    if disruptions_allowed is not None:
        obj["status"] = {
            "disruptionsAllowed": disruptions_allowed,
            "currentHealthy": 2,
            "desiredHealthy": 1,
            "expectedPods": 2,
        }
        if observed_generation is not None:
            obj["status"]["observedGeneration"] = observed_generation
    return obj


VOLCANO = "scheduling.volcano.sh/v1beta1"


def podgroup(
    name: str,
    *,
    namespace: str = "default",
    min_member: int | None = 1,
    queue: str | None = None,
    priority_class: str | None = None,
    min_resources: Mapping[str, str] | None = None,
    phase: str = "Pending",
) -> JsonObject:
    """A Volcano PodGroup (scheduling.volcano.sh/v1beta1), as its controller writes one."""
    spec: JsonObject = {}
    if min_member is not None:
        spec["minMember"] = min_member
    if queue is not None:
        spec["queue"] = queue
    if priority_class is not None:
        spec["priorityClassName"] = priority_class
    if min_resources is not None:
        spec["minResources"] = dict(min_resources)
    return {
        "kind": "PodGroup",
        "apiVersion": VOLCANO,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
        "status": {"phase": phase},
    }


def queue(
    name: str,
    *,
    weight: int | None = 1,
    capability: Mapping[str, str] | None = None,
    guarantee: Mapping[str, str] | None = None,
    reclaimable: bool | None = None,
    priority: int | None = None,
    state: str = "Open",
    deserved: Mapping[str, str] | None = None,
    parent: str | None = None,
) -> JsonObject:
    """A Volcano Queue (cluster-scoped), with the state its controller reports."""
    spec: JsonObject = {}
    if parent is not None:
        spec["parent"] = parent
    if weight is not None:
        spec["weight"] = weight
    if capability is not None:
        spec["capability"] = dict(capability)
    if guarantee is not None:
        spec["guarantee"] = {"resource": dict(guarantee)}
    if deserved is not None:
        spec["deserved"] = dict(deserved)
    if reclaimable is not None:
        spec["reclaimable"] = reclaimable
    if priority is not None:
        spec["priority"] = priority
    return {
        "kind": "Queue",
        "apiVersion": VOLCANO,
        "metadata": {"name": name},
        "spec": spec,
        "status": {"state": state},
    }


def resource_quota(name: str, *, namespace: str, hard: Mapping[str, str]) -> JsonObject:
    """A v1 ResourceQuota with its `spec.hard` (and the status the quota controller keeps)."""
    return {
        "kind": "ResourceQuota",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"hard": dict(hard)},
        "status": {"hard": dict(hard), "used": dict.fromkeys(hard, "0")},
    }


def scheduler_configmap(conf: str, *, namespace: str = "volcano-system") -> JsonObject:
    """Volcano's `volcano-scheduler-configmap` holding `volcano-scheduler.conf`."""
    return {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": {"name": "volcano-scheduler-configmap", "namespace": namespace},
        "data": {"volcano-scheduler.conf": conf},
    }


def hpa(
    name: str,
    *,
    namespace: str = "default",
    target: tuple[str, str] = ("Deployment", "web"),
    min_replicas: int | None = None,
    max_replicas: int = 10,
    current_replicas: int | None = None,
    metrics: list[JsonObject] | None = None,
) -> JsonObject:
    """An autoscaling/v2 HorizontalPodAutoscaler; `target` its scaleTargetRef (kind, name).
    `current_replicas` None: no status yet, as before the HPA controller's first sync."""
    kind, target_name = target
    spec: JsonObject = {
        "scaleTargetRef": {"apiVersion": "apps/v1", "kind": kind, "name": target_name},
        "maxReplicas": max_replicas,
    }
    if min_replicas is not None:
        spec["minReplicas"] = min_replicas
    if metrics is not None:
        spec["metrics"] = metrics
    obj: JsonObject = {
        "kind": "HorizontalPodAutoscaler",
        "apiVersion": "autoscaling/v2",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
    if current_replicas is not None:
        obj["status"] = {"currentReplicas": current_replicas, "desiredReplicas": current_replicas}
    return obj


def pods_metric(name: str, average: str) -> JsonObject:
    """An HPA metric of type Pods aiming at an average value per pod."""
    return {
        "type": "Pods",
        "pods": {
            "metric": {"name": name},
            "target": {"type": "AverageValue", "averageValue": average},
        },
    }


def status(code: int, reason: str, message: str) -> JsonObject:
    """The `Status` object the API answers errors with (also inside watch ERROR events)."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
