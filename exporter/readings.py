"""What one reading of the cards gives, whichever source made it (NVML or the simulator).

Kept apart from `exporter.nvml` so that the snapshot, the collector and the simulator do not
load pynvml; `exporter.nvml` re-exports these names.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class CardReading:
    index: int
    uuid: str  # "" when never read successfully
    name: str
    memory_total_bytes: int | None
    memory_used_bytes: int | None  # NVML v2 "used": excludes memory reserved by the driver
    utilization_ratio: float | None  # share of time a kernel ran, 0..1
    healthy: bool
    health_problems: tuple[str, ...]
    mig_mode: int | None = None  # current MIG mode, 0 off, 1 on; None: no MIG (or unread)


@dataclass(frozen=True, slots=True)
class ProcessReading:
    pid: int
    gpu_index: int
    memory_used_bytes: int | None
    sm_utilization_ratio: float | None  # 0..1; 0.0 when NVML has no sample since last read
    gpu_instance_id: int | None = None  # the MIG GPU instance it runs in; None: a whole card


@dataclass(frozen=True, slots=True)
class MigInstanceReading:
    """One MIG GPU instance of a card (its compute instances share its memory)."""

    gpu_index: int  # the card's
    gpu_uuid: str
    gpu_instance_id: int
    profile: str  # "1g.5gb"; "" when NVML would not list the card's GPU instances
    placement_start: int | None  # the first memory slice it takes
    memory_total_bytes: int | None
    memory_used_bytes: int | None


@dataclass(frozen=True, slots=True)
class NvmlError:
    function: str
    code: str


@dataclass(frozen=True, slots=True)
class NvmlReading:
    driver_version: str | None
    cards: tuple[CardReading, ...]
    processes: tuple[ProcessReading, ...]
    errors: tuple[NvmlError, ...]
    mig_instances: tuple[MigInstanceReading, ...] = ()


class NvmlUnavailable(Exception):
    """NVML cannot be used at all right now (library missing, driver not loaded, ...)."""

    def __init__(self, message: str = "", error: NvmlError | None = None) -> None:
        super().__init__(message or (f"{error.function}: {error.code}" if error else ""))
        self.error = error
