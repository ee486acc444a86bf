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
class PodsView:
    """An immutable view of this node's vGPU allotments at one moment."""

    allotments: tuple[Allotment, ...]
    ok: bool  # False when the source could not refresh; allotments are then the last good ones
    error: str | None = None


class PodSource(Protocol):
    """A narrow edge: something that knows which pods hold vGPUs on this node."""

    name: str  # collector name, e.g. "kubernetes" or "scenario"

    async def start(self) -> None: ...

    def view(self) -> PodsView: ...

    async def close(self) -> None: ...
