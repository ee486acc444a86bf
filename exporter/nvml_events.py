"""Xid events for `exporter.nvml`: which cards a critical Xid makes unhealthy, and how long.

NVML hands Xids out through an event set the cards are registered with. An event names its
device by a handle that need not be the pointer the card was registered with, so the card is
found by the device's UUID. When NVML cannot tell that UUID, the handle is taken for the card
it was registered for if it is that very pointer; otherwise, and when the UUID is no card's
known here, the Xid holds every card unhealthy (NVIDIA's k8s-device-plugin marks every device
when the lookup fails) and the failure is counted.

pynvml is not imported here: every NVML call comes in through `EventCalls`, already run by the
reader's call wrapper (its call thread, its timeout, its error codes).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from exporter.readings import NvmlError

# Xids that mean the card, not one application, is in trouble: 48 double-bit ECC, 62 internal
# micro-controller halt, 63/64 ECC page retirement or row remapping event/failure, 74 NVLink,
# 79 fallen off the bus, 92 high single-bit ECC rate, 94/95 contained/uncontained ECC error,
# 119/120 GSP timeout/error. A card reporting one is unhealthy for the hold.
CRITICAL_XIDS = frozenset({48, 62, 63, 64, 74, 79, 92, 94, 95, 119, 120})
UNKNOWN_DEVICE = NvmlError("nvmlEventSetWait_v2", "unknown_device")  # no known card's UUID
_MAX_EVENTS_PER_READ = 256
_EVERY_CARD = None  # the holds of events whose card is not known


@dataclass(frozen=True)
class EventCalls:
    """The NVML calls behind Xid watching, each run through the reader's call wrapper: a call
    returns its result, or its `NvmlError` when it failed; a driver-level failure or a timeout
    raises (and ends the reading)."""

    xid_event_type: int  # nvmlEventTypeXidCriticalError
    create_set: Callable[[], Any]
    free_set: Callable[[Any], Any]
    supported_types: Callable[[Any], Any]  # handle -> event type mask
    register: Callable[[Any, int, Any], Any]  # handle, event types, set
    wait: Callable[[Any, int], Any]  # set, timeout ms -> nvmlEventData_t
    device_uuid: Callable[[Any], Any]  # handle -> UUID


class XidWatch:
    """The event set of one NVML session, the cards registered with it and the Xid holds."""

    def __init__(
        self,
        calls: EventCalls,
        *,
        hold_s: float,
        critical_xids: frozenset[int],
        clock: Callable[[], float],
    ) -> None:
        self._calls = calls
        self._hold_s = hold_s
        self._critical_xids = critical_xids
        self._clock = clock
        self._set: Any = None
        self._watched: dict[int, str] = {}  # registered handle address -> card UUID then
        self._held: dict[str | None, dict[int, float]] = {}  # UUID -> xid -> held until

    def open(self) -> NvmlError | None:
        """A new event set for a new NVML session; the failure to create it, if any."""
        self._watched.clear()
        created = self._calls.create_set()
        self._set = None if isinstance(created, NvmlError) else created
        return created if isinstance(created, NvmlError) else None

    def close(self) -> None:
        """Frees the event set; a failure to do so is left to NVML's shutdown."""
        event_set, self._set = self._set, None
        if event_set is not None:
            self._calls.free_set(event_set)

    def watch(self, handle: Any, uuid: str) -> NvmlError | None:
        """Registers a card's handle once per set; the failure is the card's (and the card is
        registered again on the next read). Cards without Xid events are not asked again."""
        address = _address(handle)
        if self._set is None or address is None or address in self._watched:
            return None
        answer = self._calls.supported_types(handle)
        if not isinstance(answer, NvmlError) and int(answer) & self._calls.xid_event_type:
            answer = self._calls.register(handle, self._calls.xid_event_type, self._set)
        if isinstance(answer, NvmlError) and answer.code != "not_supported":
            return answer
        self._watched[address] = uuid
        return None

    def poll(self, known_uuids: Collection[str]) -> list[NvmlError]:
        """Takes the events waiting and starts the holds of critical Xids; returns the failures
        to count. `known_uuids`: the cards' UUIDs as last read."""
        errors: list[NvmlError] = []
        now = self._clock()
        for _ in range(_MAX_EVENTS_PER_READ if self._set is not None else 0):
            data = self._calls.wait(self._set, 0)
            if isinstance(data, NvmlError):
                if data.code != "timeout":  # "timeout": no event waiting
                    errors.append(data)
                break
            xid = int(data.eventData)
            if int(data.eventType) & self._calls.xid_event_type and xid in self._critical_xids:
                uuid, failure = self._card_of(data.device, known_uuids)
                if failure is not None:
                    errors.append(failure)
                self._held.setdefault(uuid, {})[xid] = now + self._hold_s
        return errors

    def problems(self, uuid: str, now: float) -> tuple[str, ...]:
        """`xid N` for each hold still running at `now` on this card or on every card."""
        for held in self._held.values():
            for xid in [xid for xid, until in held.items() if until <= now]:
                del held[xid]
        xids = {*self._held.get(uuid, {}), *self._held.get(_EVERY_CARD, {})}
        return tuple(f"xid {xid}" for xid in sorted(xids))

    def _card_of(
        self, device: Any, known_uuids: Collection[str]
    ) -> tuple[str | None, NvmlError | None]:
        """The UUID of the event's card (None: every card) and the failure to count, if any."""
        uuid = self._calls.device_uuid(device)
        if isinstance(uuid, NvmlError):
            registered = self._watched.get(_address(device) or 0, "")  # the very handle
            return (registered if registered in known_uuids else _EVERY_CARD), uuid
        if str(uuid) in known_uuids:
            return str(uuid), None
        return _EVERY_CARD, UNKNOWN_DEVICE


def _address(pointer: Any) -> int | None:
    return ctypes.cast(pointer, ctypes.c_void_p).value
