"""What the scheduler granted on this node: one `Allotment` per vGPU (container x card).

Pod sources (Kubernetes API, scenario file) produce these; NVML readings are joined to
them by card (index or UUID) and by process -> container attribution.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class Allotment:
    namespace: str
    pod: str
    container: str
    card: str  # card UUID, or its decimal index when the dialect records indices (CCE)
    memory_bytes: int
    core_percent: int | None  # None: memory isolation only (mode 0)
    pod_uid: str = ""
    container_id: str = ""  # runtime id without the "containerd://" prefix, "" when unknown


@dataclass(frozen=True, slots=True)
class MigHold:
    """A MIG GPU instance a bound pod holds (docs/design.md §13): no vGPU, so no allotment;
    the simulator reads the instance's use from it (a scenario file says who holds what)."""

    namespace: str
    pod: str
    card: int  # the card's index
    start: int  # the instance's first memory slice: with the card, which instance
    pod_uid: str = ""
    container_id: str = ""


@dataclass(frozen=True, slots=True)
class MigContainer:
    """A container of a pod on this node that asks MIG instances (docs/design.md §13): it
    holds no vGPU, so no allotment, but a process of it on a MIG instance is its use of that
    instance (`exporter.snapshot`)."""

    namespace: str
    pod: str
    container: str
    pod_uid: str = ""
    container_id: str = ""


@dataclass(frozen=True, slots=True)
class PodsView:
    """An immutable view of this node's vGPU allotments (and MIG pods' containers) at one
    moment."""

    allotments: tuple[Allotment, ...]
    ok: bool  # False when the source could not refresh; allotments are then the last good ones
    error: str | None = None
    mig_containers: tuple[MigContainer, ...] = ()


class PodSource(Protocol):
    """A narrow edge: something that knows which pods hold vGPUs on this node."""

    name: str  # collector name, e.g. "kubernetes" or "scenario"

    async def start(self) -> None: ...

    def view(self) -> PodsView: ...

    async def close(self) -> None: ...
