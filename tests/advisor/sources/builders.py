"""Samples and Kubernetes pods as the sources hand them to `assemble`, for tests."""

from __future__ import annotations

from typing import Any

from advisor.podspec import PodGpu, parse_pod
from advisor.sources.values import (
    CARD_HEALTH,
    CARD_INFO,
    CARD_MEMORY,
    CARD_MODE,
    MIB,
    NODE_INFO,
    VGPU_CORE,
    VGPU_MEMORY,
    Sample,
)
from tests.kubeapi import objects


def node_info(node: str, age: float | None = None, ended: bool = False) -> Sample:
    return Sample(NODE_INFO, {"node": node}, 1.0, age, ended)


def card(
    node: str,
    index: int,
    memory_mib: int | None = 16384,
    *,
    healthy: bool = True,
    mode: int = 2,
    model: str = "Tesla T4",
    age: float | None = None,
) -> list[Sample]:
    key = {"node": node, "gpu_index": str(index), "gpu_uuid": f"GPU-{node}-{index}"}
    samples = [
        Sample(CARD_INFO, {**key, "model": model}, 1.0, age),
        Sample(CARD_HEALTH, key, 0.0 if healthy else 1.0, age),
        Sample(CARD_MODE, key, float(mode), age),
    ]
    if memory_mib is not None:
        samples.append(Sample(CARD_MEMORY, key, float(memory_mib * MIB), age))
    return samples


def pod_card_labels(node: str, pod: str, index: int, container: str) -> dict[str, str]:
    """The labels of a container's series on card `index` of `node` ("namespace/pod")."""
    namespace, name = pod.split("/")
    return {
        "node": node,
        "namespace": namespace,
        "pod": name,
        "container": container,
        "gpu_index": str(index),
        "gpu_uuid": f"GPU-{node}-{index}",
    }


def vgpu(
    node: str,
    pod: str,
    index: int,
    memory_mib: int,
    core: int = 0,
    *,
    container: str = "main",
    age: float | None = None,
) -> list[Sample]:
    key = pod_card_labels(node, pod, index, container)
    samples = [Sample(VGPU_MEMORY, key, float(memory_mib * MIB), age)]
    if core:
        samples.append(Sample(VGPU_CORE, key, float(core), age))
    return samples


def cce_pod(
    key: str,
    *,
    gpus: int = 1,
    memory_mib: int = 4096,
    core: int = 0,
    node: str | None = None,
    cards: tuple[int, ...] = (),
    priority: int | None = None,
    owner: tuple[str, str] | None = None,
    created: str = "2024-05-01T10:00:00Z",
    annotations: dict[str, str] | None = None,
    scheduled: str | None = None,
) -> dict[str, Any]:
    """A CCE-dialect pod object: Pending without `node`, Running with it."""
    namespace, name = key.split("/")
    limits: dict[str, str | int] = {"volcano.sh/gpu-mem.128Mi": memory_mib // 128}
    if core:
        limits["volcano.sh/gpu-core.percentage"] = core
    notes = dict(annotations or {})
    if cards:
        notes["volcano.sh/gpu-index"] = ",".join(str(c) for c in cards)
    return objects.pod(
        name,
        namespace=namespace,
        node=node,
        phase="Running" if node else "Pending",
        labels={"volcano.sh/gpu-num": str(gpus)},
        annotations=notes,
        containers=[objects.container(name, limits=limits)],
        priority=priority,
        uid=f"uid-{namespace}-{name}",
        owner=owner,
        created=created,
        scheduled=scheduled,
    )


def parsed(obj: dict[str, Any]) -> PodGpu:
    pod = parse_pod(obj)
    assert pod is not None
    return pod


def per_card_pod(
    key: str,
    limits: dict[str, str | int],
    *,
    node: str | None = None,
    allocated: tuple[tuple[str, int, int], ...] = (),
    allocation: str = "hami.io/vgpu-devices-allocated",
    created: str = "2024-05-01T10:00:00Z",
) -> dict[str, Any]:
    """A HAMi (or, with `allocation` volcano.sh/vgpu-ids-new, Volcano vGPU) pod with one
    container; `allocated` (UUID, MiB, cores) per card, written as those schedulers do."""
    namespace, name = key.split("/")
    annotations = {}
    if allocated:
        cards = "".join(f"{uuid},NVIDIA,{mib},{cores}:" for uuid, mib, cores in allocated)
        annotations[allocation] = cards + (";" if allocation.startswith("hami") else "")
    return objects.pod(
        name,
        namespace=namespace,
        node=node,
        phase="Running" if node else "Pending",
        annotations=annotations,
        containers=[objects.container("main", limits=limits)],
        uid=f"uid-{namespace}-{name}",
        created=created,
    )
