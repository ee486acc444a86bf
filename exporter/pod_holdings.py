"""What a pod bound to this node holds, read from its spec and allocation annotations: its
vGPU allotments, and its containers that may hold MIG instances (docs/design.md §13)."""

from __future__ import annotations

from advisor.podspec import ContainerGpu, PodGpu
from advisor.podspec.mig import MIG_DIALECT
from exporter.allotments import Allotment, MigContainer

MIB = 2**20


def mig_containers_of(pod: PodGpu) -> tuple[MigContainer, ...]:
    """The pod's containers that may hold MIG instances: those asking them
    (`nvidia.com/mig-<P>`), and those asking whole cards with no vGPU allotted
    (`nvidia.com/gpu`, which a single-strategy node serves with its instances)."""
    mig = pod.dialect == MIG_DIALECT  # its containers are those asking instances

    def plain(c: ContainerGpu) -> bool:
        r = c.request
        return r is not None and not c.allocated and r.whole_card and not r.core_percent

    return tuple(
        MigContainer(pod.namespace, pod.name, c.name, pod.uid, _runtime_id(c))
        for c in pod.containers
        if mig or plain(c)
    )


def allotments_of(pod: PodGpu) -> tuple[Allotment, ...]:
    """One allotment per container and card the scheduler's annotations give it."""
    found: list[Allotment] = []
    for container in pod.containers:
        request = container.request
        share = request if request is not None and request.gpus > 0 else None
        for card in container.allocated:
            memory_mib = card.memory_mib
            if memory_mib is None and share is not None:  # CCE: indices only, even split
                memory_mib = share.card_memory_mib
            if memory_mib is None or memory_mib < 0:
                raise ValueError(
                    f"container {container.name}: no memory known for card {card.card}"
                )
            core = card.core_percent
            if core is None and share is not None:
                core = share.card_core_percent
            found.append(
                Allotment(
                    namespace=pod.namespace,
                    pod=pod.name,
                    container=container.name,
                    card=card.card,
                    memory_bytes=memory_mib * MIB,
                    core_percent=core or None,
                    pod_uid=pod.uid,
                    container_id=_runtime_id(container),
                )
            )
    return tuple(found)


def _runtime_id(container: ContainerGpu) -> str:
    """The container's runtime id without its "containerd://" prefix; "" when unknown."""
    return (container.container_id or "").rpartition("://")[2]
