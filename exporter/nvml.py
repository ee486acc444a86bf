"""The exporter's only door to NVML (nvidia-ml-py): one immutable `NvmlReading` per `read()`.

Every NVML call runs on one dedicated worker thread (`exporter.nvml_calls`) and is waited
for at most `call_timeout_s`: a driver that hangs inside a call costs that one timeout, later
reads fail at once with a timeout error while it is stuck, and return to normal once it is back.

Failure rules:
- not supported -> the field is None and nothing is recorded as an error;
- any other failure -> an `NvmlError(function, code)` in the reading; `function` is the C
  symbol called (e.g. "nvmlDeviceGetMemoryInfo_v2"), `code` the NVML_ERROR_* name in lower
  case ("gpu_is_lost", "unknown", "function_not_found", ...) or "timeout";
- GPU lost / reset required on a card -> that card is unhealthy and not read further; an
  unknown error in a card call -> that card is unhealthy; other cards are still read;
- a timed-out call ends the reading: it carries no cards and no processes, only the errors;
- INSUFFICIENT_SIZE from nvmlDeviceGetProcessUtilization (a sample came between pynvml's
  sizing call and its read) is asked once more before it counts;
- critical Xids hold a card unhealthy (`exporter.nvml_events`, whose NVML calls run here);
- a MIG-enabled card is read per GPU instance (`exporter.nvml_mig`, whose calls run here);
- a call that drivers before R510 lack (`nvmlDeviceGetMemoryInfo_v2`,
  `nvmlDeviceGetComputeRunningProcesses_v3`) is replaced by its older version for good;
- driver-level failures (library missing, driver not loaded, uninitialised, RM version
  mismatch) raise `NvmlUnavailable`; NVML is re-initialised on the next read.
"""

from __future__ import annotations

import contextlib
import ctypes
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pynvml

from exporter.nvml_calls import CallThread, CallTimedOut
from exporter.nvml_events import CRITICAL_XIDS, EventCalls, XidWatch
from exporter.nvml_mig import MigCalls, read_mig
from exporter.readings import (
    CardReading,
    MigInstanceReading,
    NvmlError,
    NvmlReading,
    NvmlUnavailable,
    ProcessReading,
)

__all__ = [
    "CRITICAL_XIDS",
    "CardReading",
    "MigInstanceReading",
    "NvmlError",
    "NvmlReader",
    "NvmlReading",
    "NvmlUnavailable",
    "ProcessReading",
]

_DRIVER_LEVEL = frozenset(
    {"library_not_found", "driver_not_loaded", "uninitialized", "lib_rm_version_mismatch"}
)
_CARD_GONE = {"gpu_is_lost": "gpu lost", "reset_required": "gpu requires reset"}
_CODE_NAMES: dict[int, str] = {
    value: name.removeprefix("NVML_ERROR_").lower()
    for name, value in vars(pynvml).items()
    if name.startswith("NVML_ERROR_") and isinstance(value, int)
}


class _Failed(Exception):
    """An NVML call answered an error code."""

    def __init__(self, function: str, code: str) -> None:
        super().__init__(f"{function}: {code}")
        self.error = NvmlError(function, code)


class _DriverGone(_Failed):
    pass


class _CardGone(Exception):
    pass


@dataclass
class _CardDraft:
    index: int
    uuid: str
    name: str
    memory_total_bytes: int | None = None
    memory_used_bytes: int | None = None
    utilization_ratio: float | None = None
    mig_mode: int | None = None
    problems: list[str] = field(default_factory=list)


class NvmlReader:
    """Reads cards, processes and health from NVML. `read()` calls are serialised."""

    def __init__(
        self,
        call_timeout_s: float = 2.0,
        *,
        xid_hold_s: float = 600.0,
        critical_xids: frozenset[int] = CRITICAL_XIDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._calls = CallThread(call_timeout_s)
        self._clock = clock
        self._xids = XidWatch(
            self._event_calls(), hold_s=xid_hold_s, critical_xids=critical_xids, clock=clock
        )
        self._read_lock = threading.Lock()
        self._closed = False
        self._initialized = False
        self._shutdown_due = False  # a successful init not yet matched by a shutdown
        self._known: dict[int, tuple[str, str]] = {}  # index -> (uuid, name) last read
        self._last_sample_us: dict[str, int] = {}  # uuid -> newest process sample seen
        self._memory_v2 = True
        self._processes_v3 = True
        self._errors: list[NvmlError] = []  # failures of the reading in progress
        self._mig: list[MigInstanceReading] = []  # MIG instances of the reading in progress

    def read(self) -> NvmlReading:
        with self._read_lock:
            if self._closed:
                raise RuntimeError("NvmlReader is closed")
            self._errors, self._mig = [], []
            try:
                return self._read()
            except CallTimedOut as stuck:
                self._errors.append(NvmlError(stuck.function, "timeout"))
                return NvmlReading(None, (), (), tuple(self._errors))
            except _DriverGone as gone:
                self._initialized = False
                raise NvmlUnavailable(error=gone.error) from None

    def close(self) -> None:
        with self._read_lock:
            if not self._closed:
                self._closed = True
                with contextlib.suppress(CallTimedOut):
                    self._shutdown_quietly()
                self._calls.stop()

    # --- one reading ---

    def _read(self) -> NvmlReading:
        self._ensure_initialized()
        driver = self._optional("nvmlSystemGetDriverVersion", pynvml.nvmlSystemGetDriverVersion)
        count = self._optional("nvmlDeviceGetCount_v2", pynvml.nvmlDeviceGetCount)
        drafts: list[_CardDraft] = []
        processes: list[ProcessReading] = []
        for index in range(count or 0):
            draft = _CardDraft(index, *self._known.get(index, ("", "")))
            with contextlib.suppress(_CardGone):
                processes.extend(self._read_card(draft))
            drafts.append(draft)
        self._errors.extend(self._xids.poll({uuid for uuid, _ in self._known.values() if uuid}))
        now = self._clock()
        cards = tuple(self._finish(draft, now) for draft in drafts)
        driver_version = None if driver is None else str(driver)
        return NvmlReading(
            driver_version, cards, tuple(processes), tuple(self._errors), tuple(self._mig)
        )

    def _read_card(self, card: _CardDraft) -> list[ProcessReading]:
        handle = self._on_card(
            card, "nvmlDeviceGetHandleByIndex_v2", pynvml.nvmlDeviceGetHandleByIndex, card.index
        )
        if handle is None:
            card.problems.extend(() if card.problems else ("no device handle",))
            return []
        uuid = self._on_card(card, "nvmlDeviceGetUUID", pynvml.nvmlDeviceGetUUID, handle)
        name = self._on_card(card, "nvmlDeviceGetName", pynvml.nvmlDeviceGetName, handle)
        card.uuid = card.uuid if uuid is None else str(uuid)
        card.name = card.name if name is None else str(name)
        self._known[card.index] = (card.uuid, card.name)
        self._read_memory(card, handle)
        rates = self._on_card(
            card, "nvmlDeviceGetUtilizationRates", pynvml.nvmlDeviceGetUtilizationRates, handle
        )
        card.utilization_ratio = None if rates is None else _ratio(int(rates.gpu))
        uncorrected = self._on_card(
            card, "nvmlDeviceGetTotalEccErrors", pynvml.nvmlDeviceGetTotalEccErrors, handle,
            pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, pynvml.NVML_VOLATILE_ECC,
        )  # fmt: skip
        if uncorrected:
            card.problems.append(f"uncorrectable ECC errors: {int(uncorrected)}")
        rows = self._on_card(
            card, "nvmlDeviceGetRemappedRows", pynvml.nvmlDeviceGetRemappedRows, handle
        )
        if rows is not None and rows[3]:  # (corrected, uncorrected, pending, failure)
            card.problems.append("row remapping failed")
        mode = self._answer("nvmlDeviceGetMigMode", pynvml.nvmlDeviceGetMigMode, handle)
        if isinstance(mode, NvmlError):  # a driver older than MIG (R450) lacks the call
            if mode.code != "function_not_found":
                self._card_failure(card, _Failed(mode.function, mode.code))
            mode = None
        card.mig_mode = None if mode is None else int(mode[0])  # (current, pending)
        if card.mig_mode == pynvml.NVML_DEVICE_MIG_ENABLE:
            mig = read_mig(self._mig_calls(card), handle, card.index, card.uuid)
            self._errors.extend(mig.errors)
            self._mig.extend(mig.instances)
            processes = mig.processes
        else:
            processes = self._read_processes(card, handle)
        failure = self._xids.watch(handle, card.uuid)
        if failure is not None:  # registered again on the next read
            self._card_failure(card, _Failed(failure.function, failure.code))
        return processes

    def _read_memory(self, card: _CardDraft, handle: Any) -> None:
        info: Any = None
        if self._memory_v2:  # v2 "used" leaves out what the driver reserves
            try:
                info = self._nvml(
                    "nvmlDeviceGetMemoryInfo_v2",
                    pynvml.nvmlDeviceGetMemoryInfo, handle, pynvml.nvmlMemory_v2,
                )  # fmt: skip
            except _Failed as failure:
                if failure.error.code not in ("function_not_found", "argument_version_mismatch"):
                    return self._card_failure(card, failure)
                self._memory_v2 = False  # a driver older than R510: v1 from now on
        if info is None:
            info = self._on_card(
                card, "nvmlDeviceGetMemoryInfo", pynvml.nvmlDeviceGetMemoryInfo, handle
            )
        if info is not None:
            card.memory_total_bytes, card.memory_used_bytes = int(info.total), int(info.used)
        return None

    def _read_processes(self, card: _CardDraft, handle: Any) -> list[ProcessReading]:
        running: Any = None
        if self._processes_v3:
            try:
                running = self._nvml(
                    "nvmlDeviceGetComputeRunningProcesses_v3",
                    pynvml.nvmlDeviceGetComputeRunningProcesses_v3, handle,
                )  # fmt: skip
            except _Failed as failure:
                if failure.error.code != "function_not_found":
                    self._card_failure(card, failure)
                    return []
                self._processes_v3 = False  # a driver older than R510: v2 from now on
        if not self._processes_v3:
            running = self._on_card(
                card,
                "nvmlDeviceGetComputeRunningProcesses_v2",
                pynvml.nvmlDeviceGetComputeRunningProcesses_v2,
                handle,
            )
        memory: dict[int, int | None] = {}
        for process in running or ():
            pid, used = int(process.pid), process.usedGpuMemory  # None: not available
            memory[pid] = None if used is None else int(used) + (memory.get(pid) or 0)
        sm = self._sm_by_pid(card, handle) if memory else None
        return [
            ProcessReading(pid, card.index, used, None if sm is None else sm.get(pid, 0.0))
            for pid, used in memory.items()
        ]

    def _sm_by_pid(self, card: _CardDraft, handle: Any) -> dict[int, float] | None:
        """Latest SM share per pid from samples newer than the last read; None if unsupported."""
        since = self._last_sample_us.get(card.uuid, 0)
        call = ("nvmlDeviceGetProcessUtilization", pynvml.nvmlDeviceGetProcessUtilization)
        try:
            try:
                samples = self._nvml(*call, handle, since)
            except _Failed as raced:
                # pynvml sizes the buffer with a first call: samples that arrive before the
                # second answer INSUFFICIENT_SIZE, and asking again gets them all
                if raced.error.code != "insufficient_size":
                    raise
                samples = self._nvml(*call, handle, since)
        except _Failed as failure:
            if failure.error.code == "not_found":  # no sample since the last read: idle
                return {}
            self._card_failure(card, failure)
            return None
        latest: dict[int, tuple[int, int]] = {}
        for sample in samples:
            stamp, pid = int(sample.timeStamp), int(sample.pid)
            if pid not in latest or stamp >= latest[pid][0]:
                latest[pid] = (stamp, int(sample.smUtil))
        self._last_sample_us[card.uuid] = max([since, *(s for s, _ in latest.values())])
        return {pid: _ratio(sm) for pid, (_, sm) in latest.items()}

    def _finish(self, card: _CardDraft, now: float) -> CardReading:
        problems = (*card.problems, *self._xids.problems(card.uuid, now))
        return CardReading(
            card.index, card.uuid, card.name, card.memory_total_bytes, card.memory_used_bytes,
            card.utilization_ratio, healthy=not problems, health_problems=problems,
            mig_mode=card.mig_mode,
        )  # fmt: skip

    # --- session and calls ---

    def _ensure_initialized(self) -> None:
        if self._initialized:
            return
        self._shutdown_quietly()
        try:
            self._nvml("nvmlInitWithFlags", pynvml.nvmlInitWithFlags, 0)
        except _Failed as failure:
            raise NvmlUnavailable(error=failure.error) from None
        self._initialized = self._shutdown_due = True
        refused = self._xids.open()
        if refused is not None and refused.code != "not_supported":
            self._errors.append(refused)

    def _shutdown_quietly(self) -> None:
        """Ends the previous session, best effort: a driver that went away refuses these too."""
        with contextlib.suppress(_Failed):
            self._xids.close()
        if self._shutdown_due:
            with contextlib.suppress(_Failed):
                self._nvml("nvmlShutdown", pynvml.nvmlShutdown)
        self._initialized = self._shutdown_due = False

    def _nvml(self, function: str, call: Callable[..., Any], *args: Any) -> Any:
        """One NVML call on the call thread; NVML errors come back as _Failed / _DriverGone."""
        try:
            return self._calls.call(function, lambda: call(*args))
        except pynvml.NVMLError as error:
            code = _CODE_NAMES.get(int(error.value), f"code_{error.value}")
            if code in _DRIVER_LEVEL:
                raise _DriverGone(function, code) from None
            raise _Failed(function, code) from None

    def _answer(self, function: str, call: Callable[..., Any], *args: Any) -> Any:
        """`_nvml` for `nvml_events`: a failure comes back as its NvmlError, not raised."""
        try:
            return self._nvml(function, call, *args)
        except _DriverGone:
            raise
        except _Failed as failure:
            return failure.error

    def _event_calls(self) -> EventCalls:
        def calling(function: str, call: Callable[..., Any]) -> Callable[..., Any]:
            return lambda *args: self._answer(function, call, *args)

        return EventCalls(
            pynvml.nvmlEventTypeXidCriticalError,
            calling("nvmlEventSetCreate", pynvml.nvmlEventSetCreate),
            calling("nvmlEventSetFree", pynvml.nvmlEventSetFree),
            calling("nvmlDeviceGetSupportedEventTypes", pynvml.nvmlDeviceGetSupportedEventTypes),
            calling("nvmlDeviceRegisterEvents", pynvml.nvmlDeviceRegisterEvents),
            calling("nvmlEventSetWait_v2", pynvml.nvmlEventSetWait_v2),
            calling("nvmlDeviceGetUUID", pynvml.nvmlDeviceGetUUID),
        )

    def _mig_calls(self, card: _CardDraft) -> MigCalls:
        def calling(function: str, call: Callable[..., Any]) -> Callable[..., Any]:
            def run(*args: Any) -> Any:
                answer = self._answer(function, call, *args)
                if isinstance(answer, NvmlError) and answer.code in _CARD_GONE:
                    self._card_failure(card, _Failed(function, answer.code))  # ends the card
                return answer

            return run

        def processes(device: Any) -> Any:
            if self._processes_v3:
                answer = calling(*_MIG_PROCESSES[True])(device)
                if not isinstance(answer, NvmlError) or answer.code != "function_not_found":
                    return answer
                self._processes_v3 = False  # a driver older than R510 (MIG since R450): v2
            return calling(*_MIG_PROCESSES[False])(device)

        # memory as the card's own was read (v1 on a driver older than R510)
        memory = calling(*_MIG_MEMORY[self._memory_v2])
        calls = {name: calling(*symbol_call) for name, symbol_call in _MIG_CALLS.items()}
        return MigCalls(pynvml.NVML_GPU_INSTANCE_PROFILE_COUNT, **calls, memory=memory,
                        processes=processes)  # fmt: skip

    def _optional(self, function: str, call: Callable[..., Any], *args: Any) -> Any:
        """A call whose failure is only recorded (None when it fails or is not supported)."""
        try:
            return self._nvml(function, call, *args)
        except _DriverGone:
            raise
        except _Failed as failure:
            if failure.error.code != "not_supported":
                self._errors.append(failure.error)
            return None

    def _on_card(
        self, card: _CardDraft, function: str, call: Callable[..., Any], *args: Any
    ) -> Any:
        """A call on one card: None when it fails; may mark the card or end its reading."""
        try:
            return self._nvml(function, call, *args)
        except _DriverGone:
            raise
        except _Failed as failure:
            self._card_failure(card, failure)
            return None

    def _card_failure(self, card: _CardDraft, failure: _Failed) -> None:
        if isinstance(failure, _DriverGone):
            raise failure  # not this card's problem: the reading ends, NVML starts over
        code = failure.error.code
        if code == "not_supported":
            return
        self._errors.append(failure.error)
        if code in _CARD_GONE:
            card.problems.append(_CARD_GONE[code])
            raise _CardGone
        if code == "unknown":
            card.problems.append(f"unknown error in {failure.error.function}")


def _ratio(percent: int) -> float:
    return min(max(percent / 100.0, 0.0), 1.0)


def _gpu_instances(handle: Any, profile_id: int, most: int) -> list[Any]:
    """The card's GPU instances of one profile (NVML fills a buffer of the profile's size)."""
    found = (pynvml.c_nvmlGpuInstance_t * max(int(most), 1))()
    count = ctypes.c_uint(0)
    pynvml.nvmlDeviceGetGpuInstances(handle, profile_id, found, ctypes.byref(count))
    return [found[i] for i in range(count.value)]


_MIG_CALLS: dict[str, tuple[str, Callable[..., Any]]] = {  # MigCalls field: (C symbol, call)
    "profile_info": (
        "nvmlDeviceGetGpuInstanceProfileInfoV",
        pynvml.nvmlDeviceGetGpuInstanceProfileInfo,
    ),
    "gpu_instances": ("nvmlDeviceGetGpuInstances", _gpu_instances),
    "gpu_instance_info": ("nvmlGpuInstanceGetInfo", pynvml.nvmlGpuInstanceGetInfo),
    "max_devices": ("nvmlDeviceGetMaxMigDeviceCount", pynvml.nvmlDeviceGetMaxMigDeviceCount),
    "device": ("nvmlDeviceGetMigDeviceHandleByIndex", pynvml.nvmlDeviceGetMigDeviceHandleByIndex),
    "gpu_instance_id": ("nvmlDeviceGetGpuInstanceId", pynvml.nvmlDeviceGetGpuInstanceId),
}
_MIG_MEMORY: dict[bool, tuple[str, Callable[..., Any]]] = {  # by "v2 works"
    True: (
        "nvmlDeviceGetMemoryInfo_v2",
        lambda h: pynvml.nvmlDeviceGetMemoryInfo(h, pynvml.nvmlMemory_v2),
    ),
    False: ("nvmlDeviceGetMemoryInfo", pynvml.nvmlDeviceGetMemoryInfo),
}
_MIG_PROCESSES: dict[bool, tuple[str, Callable[..., Any]]] = {  # by "v3 works"
    True: (
        "nvmlDeviceGetComputeRunningProcesses_v3",
        pynvml.nvmlDeviceGetComputeRunningProcesses_v3,
    ),
    False: (
        "nvmlDeviceGetComputeRunningProcesses_v2",
        pynvml.nvmlDeviceGetComputeRunningProcesses_v2,
    ),
}
