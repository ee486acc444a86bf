"""What the pod parser hands out: one pod's GPU containers, requests and allocations."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from advisor.core.model import Request


def _empty_map() -> Mapping[str, str]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class AllocatedCard:
    """One card granted to a container.

    `card` is a UUID (HAMi, Volcano vGPU) or a decimal index as a string (CCE gpu-index).
    """

    card: str
    memory_mib: int | None
    core_percent: int | None


@dataclass(frozen=True, slots=True)
class ContainerGpu:
    """A container that asks for GPUs: its own totals (None when unreadable) and its cards.

    `container_id` comes from status.containerStatuses with the runtime prefix
    ("containerd://", "docker://", "cri-o://") dropped; `allocated` is () until scheduled.
    """

    name: str
    container_id: str | None
    request: Request | None
    allocated: tuple[AllocatedCard, ...] = ()


@dataclass(frozen=True, slots=True)
class PodGpu:
    """A pod's GPU view. `owner` is "Kind/namespace/name" of the first controller reference;
    `request` the pod-level totals for the scheduler model (None when not modelled, with the
    reason in `problems`); `problems` names every unreadable field."""

    namespace: str
    name: str
    uid: str
    node: str | None
    phase: str
    priority: int
    owner: str | None
    created: str | None
    # Read-only; left out of equality and hashing as in advisor.core.model.Pod.
    annotations: Mapping[str, str] = field(default_factory=_empty_map, compare=False)
    dialect: str = "cce"  # "cce" | "volcano-vgpu" | "hami"
    containers: tuple[ContainerGpu, ...] = ()
    request: Request | None = None
    problems: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"
