"""The three ways a container asks for shared GPUs (DESIGN.md §1) and how to read them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from advisor.core.model import MIB_PER_UNIT, Request
from advisor.podspec.quantity import quantity_int, show

MISSING = object()


@dataclass(frozen=True, slots=True)
class Dialect:
    name: str
    count: str | None  # resource holding N; None: N is the pod label (CCE)
    memory: str
    core: str
    memory_percentage: str | None  # a share of the card, which the model cannot express
    memory_unit_mib: int
    per_card: bool  # memory and core are per card (Volcano vGPU, HAMi) or totals (CCE)
    allocation: str  # annotation that records the granted cards

    @property
    def keys(self) -> tuple[str, ...]:
        named = (self.count, self.memory, self.core, self.memory_percentage)
        return tuple(key for key in named if key is not None)


CCE_GPU_NUM_LABEL = "volcano.sh/gpu-num"

CCE = Dialect(
    name="cce",
    count=None,
    memory="volcano.sh/gpu-mem.128Mi",
    core="volcano.sh/gpu-core.percentage",
    memory_percentage=None,
    memory_unit_mib=MIB_PER_UNIT,
    per_card=False,
    allocation="volcano.sh/gpu-index",
)
VOLCANO_VGPU = Dialect(
    name="volcano-vgpu",
    count="volcano.sh/vgpu-number",
    memory="volcano.sh/vgpu-memory",
    core="volcano.sh/vgpu-cores",
    memory_percentage="volcano.sh/vgpu-memory-percentage",
    memory_unit_mib=1,
    per_card=True,
    allocation="volcano.sh/vgpu-ids-new",
)
HAMI = Dialect(
    name="hami",
    count="nvidia.com/gpu",
    memory="nvidia.com/gpumem",
    core="nvidia.com/gpucores",
    memory_percentage="nvidia.com/gpumem-percentage",
    memory_unit_mib=1,
    per_card=True,
    allocation="hami.io/vgpu-devices-allocated",
)
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


def read_request(
    dialect: Dialect, lookup: Lookup, label_gpus: int | None, where: str, problems: list[str]
) -> Request | None:
    """The container's totals, or None after adding to `problems` why they are unreadable.

    `label_gpus` is N from the CCE pod label (None when that label was unreadable).
    """

    def number(key: str, default: int | None) -> int | None:
        value = lookup(key)
        if value is MISSING:
            if default is None:
                problems.append(f"{where}: {key} is missing")
            return default
        try:
            return quantity_int(value)
        except ValueError as error:
            problems.append(f"{where}: {key} {error}")
            return None

    gpus = label_gpus if dialect.count is None else number(dialect.count, 1)
    if lookup(dialect.memory) is MISSING:
        if dialect.memory_percentage and lookup(dialect.memory_percentage) is not MISSING:
            value = show(lookup(dialect.memory_percentage))
            problems.append(
                f"{where}: {dialect.memory_percentage} {value} asks a share of the card, "
                "which is not modelled (no memory in MiB)"
            )
        elif dialect.per_card:
            problems.append(
                f"{where}: {dialect.memory} is missing; whole-card requests are not modelled"
            )
        else:
            problems.append(f"{where}: {dialect.memory} is missing")
        memory: int | None = None
    else:
        memory = number(dialect.memory, None)
    core = number(dialect.core, 0)
    if gpus is None or memory is None or core is None:
        return None
    memory_mib = memory * dialect.memory_unit_mib
    if dialect.per_card:
        return Request(gpus=gpus, memory_mib=gpus * memory_mib, core_percent=gpus * core)
    return Request(gpus=gpus, memory_mib=memory_mib, core_percent=core)
