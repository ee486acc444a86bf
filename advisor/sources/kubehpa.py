"""HorizontalPodAutoscalers from the Kubernetes API (`autoscaling/v2`, docs/design.md §12.1),
read-only, as the scenario's `autoscalers`: those of GPU workloads, whose target owns a GPU
pod or that scale on a per-pod xGPU series (a workload scaled to zero has no pod to tell);
the others (CPU web services, mostly) would only add `unknown-template` lines.

Optional like the disruption budgets: a list that fails (403 without the RBAC rule, 404 on
a cluster that does not serve `autoscaling/v2`) is a warning and the run goes on without
autoscalers. An HPA the scenario format could not hold (max below min, no target) is left
out with a warning, so a snapshot always reads back.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from typing import Any

from advisor.core.hpa import Autoscaler, PodMetric, targets_of
from advisor.core.quantity import quantity_number
from advisor.podspec import fields
from advisor.sources.kubepages import Paging, optional_list

WITHOUT = "autoscalers are left out (no reachable replicas)"
XGPU_PREFIX = "xgpu_"  # the exporter's series, as docs/design.md §6 names them


async def read_autoscaler_list(
    client: Any, host: str, paging: Paging, warnings: list[str]
) -> list[Any]:
    """Every HPA of every namespace, paged; [] with a warning when the list fails."""
    from kubernetes_asyncio.client import AutoscalingV2Api

    call = AutoscalingV2Api(client).list_horizontal_pod_autoscaler_for_all_namespaces
    return await optional_list(call, host, "horizontalpodautoscalers", paging, warnings, WITHOUT)


def kube_autoscalers(
    items: Sequence[Any],
    pod_items: Sequence[Any],
    gpu_owners: Iterable[str | None],
    warnings: list[str],
) -> tuple[Autoscaler, ...]:
    """The HPAs of GPU workloads as `Autoscaler`s, sorted by name; `gpu_owners` are the GPU
    pods' controllers. The pods count the replicas of an HPA whose controller has not
    written `status.currentReplicas` yet."""
    replicas = _replicas_by_target(pod_items)
    gpu_targets = {target for owner in gpu_owners for target in targets_of(owner)}
    found = (autoscaler(item, replicas, warnings) for item in items)
    kept = (a for a in found if a is not None and _of_gpus(a, gpu_targets))
    return tuple(sorted(kept, key=lambda a: a.name))


def _of_gpus(autoscaler: Autoscaler, gpu_targets: Collection[str]) -> bool:
    named = any(m.pod_metric.startswith(XGPU_PREFIX) for m in autoscaler.metrics)
    return autoscaler.target in gpu_targets or named


def autoscaler(item: object, replicas: Counter[str], warnings: list[str]) -> Autoscaler | None:
    metadata, spec = _object(_object(item).get("metadata")), _object(_object(item).get("spec"))
    status = _object(_object(item).get("status"))
    namespace, name = metadata.get("namespace"), metadata.get("name")
    if not (isinstance(namespace, str) and namespace and isinstance(name, str) and name):
        return None
    key = f"{namespace}/{name}"
    ref = _object(spec.get("scaleTargetRef"))
    kind, target_name = ref.get("kind"), ref.get("name")
    if not (_name(kind) and _name(target_name)):
        warnings.append(f"Kubernetes: HPA {key}: spec.scaleTargetRef names no object; left out")
        return None
    target = f"{kind}/{namespace}/{target_name}"
    low = _count(spec.get("minReplicas"), 1)  # the API's default
    high = _count(spec.get("maxReplicas"), 0)
    if high < max(low, 1):
        warnings.append(
            f"Kubernetes: HPA {key}: maxReplicas {high} below minReplicas {low} or 1; left out"
        )
        return None
    current = _count(status.get("currentReplicas"), -1)
    if current < 0:
        # The controller writes it on its first sync; until then the target runs the
        # replicas its pods show, which is what the controller would write.
        current = replicas[target]
    metrics = tuple(m for raw in _list(spec.get("metrics")) if (m := _metric(raw)) is not None)
    return Autoscaler(key, target, low, high, current, metrics)


def _metric(raw: object) -> PodMetric | None:
    """A `Pods` metric aiming at an AverageValue: a per-pod series the xGPU exporter may
    give. Resource, Object, External and ContainerResource metrics are not per-pod GPU
    series; a target the API would refuse (not positive) is left out too."""
    entry = _object(raw)
    if entry.get("type") != "Pods":
        return None
    pods = _object(entry.get("pods"))
    name = _object(pods.get("metric")).get("name")
    target = _object(pods.get("target"))
    if not _name(name) or target.get("type") != "AverageValue":
        return None
    try:
        average = quantity_number(target.get("averageValue"))
    except ValueError:
        return None
    return PodMetric(str(name), average) if average > 0 else None


def _replicas_by_target(pod_items: Sequence[Any]) -> Counter[str]:
    """Pods not being deleted, counted under every target they are a replica of."""
    counted: Counter[str] = Counter()
    for item in pod_items:
        metadata = _object(_object(item).get("metadata"))
        namespace = metadata.get("namespace")
        if not isinstance(namespace, str) or metadata.get("deletionTimestamp"):
            continue
        owner = fields.owner(metadata.get("ownerReferences"), namespace, [])
        counted.update(targets_of(owner))
    return counted


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _name(value: object) -> bool:
    return isinstance(value, str) and bool(value) and "/" not in value


def _count(value: object, default: int) -> int:
    """A replica count as the API gives it (int32, never negative), else `default`."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**31:
        return value
    return default
