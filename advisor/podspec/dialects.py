"""The three ways a container asks for shared GPUs (docs/design.md §1, §9.2) and how to read them.

CCE gives pod totals and always a memory. HAMi and Volcano vGPU give per-card values, which are
multiplied by N into the `Request` totals; their memory share (`memory_percent`) stays per card,
and a request with neither memory nor share asks whole cards, as their schedulers read it.
Each dialect's resource names are its profile's (`advisor.core.profiles`); this module reads
them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from advisor.core.model import Request
from advisor.core.profiles.base import Dialect
from advisor.core.profiles.cce import CCE_GPU_NUM_LABEL
from advisor.core.profiles.cce import DIALECT as CCE_DIALECT
from advisor.core.profiles.hami import DIALECT as HAMI_DIALECT
from advisor.core.profiles.volcano_vgpu import DIALECT as VOLCANO_DIALECT
from advisor.core.quantity import MAX_COUNT, MAX_MEMORY_MIB, quantity_int, show
from advisor.errors import known

__all__ = ["CCE", "CCE_GPU_NUM_LABEL", "DIALECTS", "HAMI", "VOLCANO_VGPU", "Dialect"]

MISSING = object()

CCE = CCE_DIALECT
VOLCANO_VGPU = VOLCANO_DIALECT
HAMI = HAMI_DIALECT
DIALECTS: tuple[Dialect, ...] = (CCE, VOLCANO_VGPU, HAMI)  # precedence when one container mixes

Lookup = Callable[[str], object]  # resource value from limits, else requests, else MISSING


def resource_lookup(limits: Mapping[object, object], requests: Mapping[object, object]) -> Lookup:
    def lookup(key: str) -> object:
        if key in limits:
            return limits[key]
        return requests.get(key, MISSING)

    return lookup


def _is_zero(value: object) -> bool:
    try:
        return quantity_int(value) == 0
    except ValueError:
        return False


def asks(dialect: Dialect, lookup: Lookup) -> bool:
    """Whether a container asks in this dialect: some key present and not plainly zero."""
    values = (lookup(key) for key in dialect.keys)
    return any(value is not MISSING and not _is_zero(value) for value in values)


class _Reader:
    """Values of one container, each unreadable one added to `problems` (then None)."""

    def __init__(self, lookup: Lookup, where: str, problems: list[str]) -> None:
        self.lookup, self.where, self.problems = lookup, where, problems

    def given(self, key: str | None) -> bool:
        return key is not None and self.lookup(key) is not MISSING

    def number(self, key: str, default: int | None) -> int | None:
        value = self.lookup(key)
        if value is MISSING:
            if default is None:
                self.problems.append(f"{self.where}: {key} is missing")
            return default
        try:
            return quantity_int(value)
        except ValueError as error:
            self.problems.append(f"{self.where}: {key} {error}")
            return None

    def problem(self, text: str) -> None:
        self.problems.append(f"{self.where}: {text}")


def read_request(
    dialect: Dialect, lookup: Lookup, label_gpus: int | None, where: str, problems: list[str]
) -> Request | None:
    """The container's totals, or None after adding to `problems` why they are unreadable.

    `label_gpus` is N from the CCE pod label (None when that label was unreadable).
    """
    read = _Reader(lookup, where, problems)
    if dialect.per_card:
        return _per_card_request(dialect, read)
    memory = read.number(dialect.memory, None)
    core = read.number(dialect.core, 0)
    if label_gpus is None or memory is None or core is None:
        return None
    request = Request(
        gpus=label_gpus, memory_mib=memory * dialect.memory_unit_mib, core_percent=core
    )
    return _within_range(request, read)


def _per_card_request(dialect: Dialect, read: _Reader) -> Request | None:
    """HAMi's `GenerateResourceRequests` (pkg/device/nvidia/device.go, v2.10.0) and Volcano's
    `ExtractResourceRequest` (pkg/scheduler/api/devices/util.go, v1.15.0).

    N: the count; without it one card (HAMi's webhook writes its DefaultGPUNum, 1; Volcano
    takes a memory alone as one card). Memory 0 counts as not given; with no share either the
    request asks whole cards (HAMi: its DefaultMemory, else 100 %; Volcano: 100 %).
    """
    count = known(dialect.count, f"the count resource of {dialect.name}")
    if dialect is VOLCANO_VGPU and not read.given(count) and not read.given(dialect.memory):
        read.problem(
            f"{count} and {dialect.memory} are both missing, so Volcano reads no card request"
        )
        return None
    gpus = read.number(count, 1)
    memory = read.number(dialect.memory, 0)
    share = _share(dialect, read)
    core = read.number(dialect.core, 0)
    if gpus is None or memory is None or share is None or core is None:
        return None
    request = Request(
        gpus=gpus,
        memory_mib=gpus * memory * dialect.memory_unit_mib,
        core_percent=gpus * core,
        memory_percent=share,
    )
    return _within_range(request, read)


def range_problem(request: Request) -> str | None:
    """Why a request is beyond the model's range (the scenario format's too), or None: the
    API server takes any int64 quantity, but 2**40 MiB of one card's memory is no card. A
    count of 0 beside a memory or core asks nothing any scheduler places (and 0 cards
    cannot hold the memory), so it is no request either."""
    if request.gpus < 1:
        return f"{request.gpus} cards"
    if request.gpus > MAX_COUNT:
        return f"{request.gpus} cards is more than {MAX_COUNT:,}"
    if request.memory_mib > MAX_MEMORY_MIB:
        return f"{request.memory_mib} MiB is more than the {MAX_MEMORY_MIB:,} MiB modelled"
    if request.core_percent > MAX_COUNT:
        return f"{request.core_percent}% of a core is more than {MAX_COUNT:,}"
    return None


def _within_range(request: Request, read: _Reader) -> Request | None:
    problem = range_problem(request)
    if problem is not None:
        read.problem(f"asks {problem}")
        return None
    return request


def _share(dialect: Dialect, read: _Reader) -> int | None:
    """The memory share per card (0: not given), as each scheduler reads it."""
    key = dialect.memory_percentage
    if key is None or not read.given(key):
        return 0
    value = read.lookup(key)
    try:
        percent = quantity_int(value)
    except ValueError as error:  # negative too: the API server refuses negative quantities
        read.problem(f"{key} {error}")
        return None
    if dialect is HAMI:
        return min(percent, 100)  # above 100 clamped, 0 ignored (not positive)
    if not 1 <= percent <= 100:  # Volcano takes it as given: 0 asks no memory, >100 never fits
        read.problem(
            f"{key} {show(value)} is outside 1..100: Volcano would give it "
            + ("no memory" if percent == 0 else "more than a card, so never place it")
        )
        return None
    return percent
