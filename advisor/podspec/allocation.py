"""Allocation annotations: which cards a scheduler granted to which container.

HAMi (`hami.io/vgpu-devices-allocated`) and Volcano vGPU (`volcano.sh/vgpu-ids-new`) write
`UUID,Type,memMiB,cores` per card, each followed by `:`, and separate containers by `;`.
HAMi ends every container with `;` and keeps one (possibly empty) entry per container,
init containers first; older HAMi and Volcano join only the GPU containers with `;`.
`align_allocation` picks whichever of those layouts fits the pod. CCE (`volcano.sh/gpu-index`)
records only the card indices of the whole pod, comma-separated.
"""

from __future__ import annotations

from collections.abc import Sequence

from advisor.core.quantity import decimal_int, show
from advisor.podspec.values import AllocatedCard
from advisor.words import plural

CardsPerContainer = tuple[tuple[AllocatedCard, ...], ...]


def _parse_card(entry: str) -> AllocatedCard | None:
    fields = [part.strip() for part in entry.split(",")]
    if len(fields) < 4:
        raise ValueError(
            f"card entry {show(entry)} has {plural(len(fields), 'field')}, "
            "expected UUID,Type,memMiB,cores"
        )
    uuid, _card_type, memory, cores = fields[:4]  # later fields: room for newer writers
    if not uuid:
        # Some HAMi versions pad a container that asks nothing with an empty device.
        if all(field in ("", "0") for field in fields[1:]):
            return None
        raise ValueError(f"card entry {show(entry)} has an empty UUID")
    try:
        memory_mib = decimal_int(memory)
        core_percent = decimal_int(cores)
    except ValueError as error:
        raise ValueError(f"card entry {show(entry)}: {error}") from None
    return AllocatedCard(card=uuid, memory_mib=memory_mib, core_percent=core_percent)


def _parse_container(segment: str) -> tuple[AllocatedCard, ...]:
    cards = (_parse_card(entry) for entry in segment.split(":") if entry.strip())
    return tuple(card for card in cards if card is not None)


def parse_allocation(value: str) -> CardsPerContainer:
    """Cards per container entry, in the order written; ValueError on a malformed entry.

    One trailing `;` ends the last entry (HAMi writes one after every container), so
    `"A:;"` is one container and `"A:;;"` two, the second empty. `:` after a card and empty
    entries are allowed.
    """
    if not isinstance(value, str):
        raise ValueError(f"{show(value)} is not a string")
    text = value.strip()
    if not text:
        return ()
    if text.endswith(";"):
        text = text[:-1]
    return tuple(_parse_container(segment) for segment in text.split(";"))


def parse_gpu_index(value: str) -> tuple[AllocatedCard, ...]:
    """CCE's `volcano.sh/gpu-index`: distinct card indices such as "0,1"."""
    if not isinstance(value, str):
        raise ValueError(f"{show(value)} is not a string")
    indices: list[int] = []
    for part in value.split(","):
        if not part.strip():
            continue
        index = decimal_int(part)
        if index in indices:
            raise ValueError(f"card {index} is listed twice in {show(value)}")
        indices.append(index)
    if not indices:
        raise ValueError(f"{show(value)} lists no card")
    return tuple(AllocatedCard(card=str(i), memory_mib=None, core_percent=None) for i in indices)


def align_allocation(
    entries: CardsPerContainer, n_init: int, n_containers: int, gpu_positions: Sequence[int]
) -> dict[int, tuple[AllocatedCard, ...]]:
    """Cards keyed by position in spec.containers, or ValueError when no layout fits.

    Layouts tried: init containers then containers (current HAMi), containers only (older
    HAMi), GPU containers only (Volcano). An exact entry count wins; otherwise the first
    layout that can hold the entries up to the last non-empty one. A layout never fits if it
    would hand cards to a container that asks for none (or to an init container).
    """
    gpu = set(gpu_positions)
    layouts: list[list[int | None]] = []  # entry i -> container position, None: not ours
    if n_init:
        layouts.append([None] * n_init + list(range(n_containers)))
    layouts.append(list(range(n_containers)))
    layouts.append(list(gpu_positions))
    used = max((i + 1 for i, cards in enumerate(entries) if cards), default=0)

    def fits(layout: list[int | None]) -> bool:
        if used > len(layout):
            return False
        return all(not cards or layout[i] in gpu for i, cards in enumerate(entries[:used]))

    chosen = next((lay for lay in layouts if len(lay) == len(entries) and fits(lay)), None)
    if chosen is None:
        chosen = next((lay for lay in layouts if fits(lay)), None)
    if chosen is None:
        raise ValueError(
            f"{len(entries)} container {'entry' if len(entries) == 1 else 'entries'} do not "
            f"match the pod's "
            f"{plural(n_containers, 'container')}, {len(gpu)} of them asking for GPUs"
        )
    aligned: dict[int, tuple[AllocatedCard, ...]] = {}
    for i, cards in enumerate(entries[:used]):
        position = chosen[i]
        if position is not None and cards:
            aligned[position] = cards
    return aligned
