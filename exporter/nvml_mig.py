"""MIG for `exporter.nvml`: a MIG-enabled card's GPU instances, their memory and processes.

A card in MIG mode answers per MIG device, one per compute instance, each in a GPU instance
whose compute instances share its memory; so memory is read once per GPU instance (from its
first MIG device) and processes from every MIG device. The card's own process list needs a
privileged caller in MIG mode and per-process utilisation is not supported there, so a MIG
card's processes come from its MIG devices, without an SM share.

Each GPU instance's profile and placement come from the card's GPU instance listing
(nvmlDeviceGetGpuInstances, also a privileged call). A call that fails degrades only what it
reads: a listing that fails leaves those instances' profile and start empty, a MIG device's
memory or processes that fail leave out that series; every failure is counted. An empty MIG
device slot (NOT_FOUND) and a profile the card lacks (NOT_SUPPORTED, INVALID_ARGUMENT) are
not failures.

pynvml is not imported here: every NVML call comes in through `MigCalls`, already run by the
reader's call wrapper, as `exporter.nvml_events` does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from exporter.readings import MigInstanceReading, NvmlError, ProcessReading

_QUIET = frozenset({"not_supported", "not_found"})  # nothing there: not a failure
_NO_SUCH_PROFILE = frozenset({"not_supported", "invalid_argument"})


@dataclass(frozen=True)
class MigCalls:
    """The NVML calls behind a MIG card's reading: each returns its result, or its
    `NvmlError` when it failed; a driver-level failure, a lost card or a timeout raises."""

    profile_count: int  # NVML_GPU_INSTANCE_PROFILE_COUNT
    profile_info: Callable[[Any, int], Any]  # (card, profile) -> info (v2: id, name, ...)
    gpu_instances: Callable[[Any, int, int], Any]  # (card, profile id, most) -> handles
    gpu_instance_info: Callable[[Any], Any]  # -> .id, .placement.start
    max_devices: Callable[[Any], Any]  # (card) -> how many MIG device slots
    device: Callable[[Any, int], Any]  # (card, slot) -> MIG device handle
    gpu_instance_id: Callable[[Any], Any]  # (MIG device) -> its GPU instance's id
    memory: Callable[[Any], Any]  # (MIG device) -> .total, .used bytes
    processes: Callable[[Any], Any]  # (MIG device) -> [.pid, .usedGpuMemory (None: unknown)]


@dataclass
class MigRead:
    instances: list[MigInstanceReading] = field(default_factory=list)
    processes: list[ProcessReading] = field(default_factory=list)
    errors: list[NvmlError] = field(default_factory=list)

    def answer(self, result: Any) -> Any:
        """The result, or None for a failed call (recorded unless it means "nothing there")."""
        if isinstance(result, NvmlError):
            if result.code not in _QUIET:
                self.errors.append(result)
            return None
        return result


def read_mig(calls: MigCalls, card: Any, gpu_index: int, gpu_uuid: str) -> MigRead:
    read = MigRead()
    layout = _layout(calls, card, read)
    devices: dict[int, list[Any]] = {}
    for slot in range(int(read.answer(calls.max_devices(card)) or 0)):
        device = read.answer(calls.device(card, slot))
        if device is None:
            continue  # an empty slot, or a failure already recorded
        instance = read.answer(calls.gpu_instance_id(device))
        if instance is not None:  # without its instance, a MIG device cannot be labelled
            devices.setdefault(int(instance), []).append(device)
    for instance, mine in sorted(devices.items()):
        memory = read.answer(calls.memory(mine[0]))
        profile, start = layout.get(instance, ("", None))
        read.instances.append(
            MigInstanceReading(
                gpu_index, gpu_uuid, instance, profile, start,
                None if memory is None else int(memory.total),
                None if memory is None else int(memory.used),
            )
        )  # fmt: skip
        used: dict[int, int | None] = {}
        for device in mine:
            for process in read.answer(calls.processes(device)) or ():
                pid, bytes_used = int(process.pid), process.usedGpuMemory
                before = used.get(pid)
                bytes_used = None if bytes_used is None else int(bytes_used)
                used[pid] = bytes_used if before is None else before + (bytes_used or 0)
        read.processes += [
            ProcessReading(pid, gpu_index, bytes_used, None, gpu_instance_id=instance)
            for pid, bytes_used in used.items()
        ]
    return read


def _layout(calls: MigCalls, card: Any, read: MigRead) -> dict[int, tuple[str, int]]:
    """GPU instance id -> (profile name, first memory slice), for the instances NVML lists."""
    found: dict[int, tuple[str, int]] = {}
    for profile in range(calls.profile_count):
        info = calls.profile_info(card, profile)
        if isinstance(info, NvmlError):
            if info.code not in _NO_SUCH_PROFILE:
                read.errors.append(info)
            continue
        name = _profile_name(info.name)
        for instance in read.answer(calls.gpu_instances(card, info.id, info.instanceCount)) or ():
            got = read.answer(calls.gpu_instance_info(instance))
            if got is not None:
                found[int(got.id)] = (name, int(got.placement.start))
    return found


def _profile_name(name: bytes | str) -> str:
    """ "MIG 1g.5gb" as NVML names a profile -> "1g.5gb", as dcgm-exporter labels it."""
    text = name.decode(errors="replace") if isinstance(name, bytes) else name
    return text.removeprefix("MIG ").strip()
