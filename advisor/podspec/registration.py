"""The cards a scheduler's device plugin registers on the Node object, as the scheduler reads them.

HAMi (`hami.io/node-nvidia-register`): v2.10.0 writes a JSON list (`MarshalNodeDevices`,
pkg/device/devices.go: id, index, count, devmem, devcore, type, numa, health, mode; Go's
`omitempty` leaves out zeros and false, so a missing health means unhealthy); older releases
wrote `id,count,devmem,devcore,type,numa,health[,index,mode]` per card, each ended by `:`
(`DecodeNodeDevices` reads 7 or 9 fields). Volcano vGPU (`volcano.sh/node-vgpu-register`,
`decodeNodeDevices` in pkg/scheduler/api/devices/nvidia/vgpu/utils.go, v1.15.0):
`UUID,Number,Memory,Type,Health,Mode` per card, each ended by `:`; a card's id is its place
in that list, and no cores or NUMA are registered. Both write a card's sharing mode; `mig`
is their dynamic MIG mode (docs/design.md §13.1).

Go reads a number it cannot parse as 0 in places; here anything that does not read cleanly
raises ValueError, so the caller can say so and fall back to what the exporter reports.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from advisor.core.model import ProfileName
from advisor.core.profiles import PROFILES
from advisor.core.profiles.hami import REGISTER as HAMI_REGISTER
from advisor.core.profiles.volcano_mig import MIG, card_mode
from advisor.core.profiles.volcano_vgpu import REGISTER as VOLCANO_REGISTER
from advisor.core.quantity import show

__all__ = ["HAMI_REGISTER", "VOLCANO_REGISTER", "RegisteredCard", "parse_registration"]


def registration_of(profile: ProfileName) -> str | None:
    """The node annotation where the profile's scheduler reads its cards; None: none."""
    known = PROFILES.get(profile)
    return None if known is None else known.registration_annotation


def registration_keys() -> tuple[str, ...]:
    """Every profile's card registration annotation."""
    keys = (p.registration_annotation for p in PROFILES.values())
    return tuple(key for key in keys if key is not None)


INT32_MAX = 2**31 - 1
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


@dataclass(frozen=True, slots=True)
class RegisteredCard:
    """One card as the scheduler sees it. `index`: the index the registration gives (HAMi's
    `index`, Volcano's place in the list), None when it gives none."""

    uuid: str
    index: int | None
    slots: int  # HAMi Count, Volcano Number: vGPUs the card takes
    memory_mib: int
    cores: int | None  # HAMi Devcore (100 x core scaling); None: not registered (Volcano)
    numa: int | None  # None: not registered (Volcano)
    healthy: bool
    model: str
    mig: bool = False  # registered in the scheduler's MIG mode (mode `mig`)


def parse_registration(profile: ProfileName, value: str) -> tuple[RegisteredCard, ...]:
    """The registered cards in the order listed; ValueError naming what does not read."""
    key = registration_of(profile)
    parse = None if key is None else _PARSERS.get(key)
    if parse is None:
        raise ValueError(f"profile {profile} registers no cards")
    cards = parse(value)
    if not cards:
        raise ValueError("registers no card")
    seen: set[str] = set()
    for card in cards:
        if card.uuid in seen:
            raise ValueError(f"card {show(card.uuid)} is registered twice")
        seen.add(card.uuid)
        if card.slots < 1:
            raise ValueError(f"card {show(card.uuid)} registers {card.slots} vGPU slots")
        if card.memory_mib < 1:
            raise ValueError(f"card {show(card.uuid)} registers {card.memory_mib} MiB")
    return cards


def parse_hami(value: str) -> tuple[RegisteredCard, ...]:
    text = value.strip()
    if text[:1] in ("[", "{"):
        return _hami_json(text)
    return _hami_colons(value)


def _hami_json(text: str) -> tuple[RegisteredCard, ...]:
    try:
        raw = json.loads(text)
    except ValueError as error:
        raise ValueError(f"not JSON: {error}") from None
    if not isinstance(raw, list):
        raise ValueError("not a JSON list")
    cards = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise ValueError(f"device [{i}] is not an object")
        # Go's encoding/json matches keys without regard to case.
        fields = {str(k).lower(): v for k, v in item.items() if v is not None}
        where = f"device [{i}]"
        uuid = fields.get("id", "")
        if not isinstance(uuid, str) or not uuid:
            raise ValueError(f"{where}: id {show(uuid)} is not a card id")
        model = fields.get("type", "")
        health = fields.get("health", False)
        mode = fields.get("mode", "")
        if not isinstance(model, str) or not isinstance(health, bool):
            raise ValueError(f"{where}: type or health of the wrong kind")
        cards.append(
            RegisteredCard(
                uuid=uuid,
                index=_json_int(fields, "index", where, 0, 2**63 - 1),
                slots=_json_int(fields, "count", where, -(2**31), INT32_MAX),
                memory_mib=_json_int(fields, "devmem", where, -(2**31), INT32_MAX),
                cores=_json_int(fields, "devcore", where, -(2**31), INT32_MAX),
                numa=_json_int(fields, "numa", where, -(2**63), 2**63 - 1),
                healthy=health,
                model=model,
                mig=mode == MIG,
            )
        )
    return tuple(cards)


def _json_int(fields: dict[str, Any], key: str, where: str, low: int, high: int) -> int:
    value = fields.get(key, 0)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{where}: {key} {show(value)} is not an integer Go reads")
    return value


def _hami_colons(value: str) -> tuple[RegisteredCard, ...]:
    if ":" not in value:
        raise ValueError("no ':' after a card")
    cards = []
    for segment in value.split(":"):
        if not segment:
            continue
        items = segment.split(",")
        if len(items) not in (7, 9):
            raise ValueError(f"card {show(segment)} has {len(items)} fields, expected 7 or 9")
        cards.append(
            RegisteredCard(
                uuid=items[0],
                index=_go_int(items[7], segment, 0) if len(items) == 9 else None,
                slots=_go_int(items[1], segment),
                memory_mib=_go_int(items[2], segment),
                cores=_go_int(items[3], segment),
                numa=_go_int(items[5], segment),
                healthy=_go_bool(items[6], segment),
                model=items[4],
                mig=len(items) == 9 and items[8] == MIG,
            )
        )
    return tuple(cards)


def parse_volcano(value: str) -> tuple[RegisteredCard, ...]:
    if ":" not in value:
        raise ValueError("no ':' after a card, so Volcano reads no card")
    cards = []
    for position, segment in enumerate(value.split(":")):
        if "," not in segment:
            continue
        items = segment.split(",")
        if len(items) < 6:
            raise ValueError(f"card {show(segment)} has {len(items)} fields, expected 6")
        cards.append(
            RegisteredCard(
                uuid=items[0],
                index=position,
                slots=_go_int(items[1], segment),
                memory_mib=_go_int(items[2], segment),
                cores=None,
                numa=None,
                healthy=_go_bool(items[4], segment),
                model=items[3],
                mig=card_mode(items[5]) == MIG,
            )
        )
    return tuple(cards)


def _go_int(text: str, segment: str, low: int = -(2**31)) -> int:
    """strconv.Atoi / ParseInt(s, 10, 32): an optional sign and decimal digits only."""
    digits = text[1:] if text[:1] in "+-" else text
    if not digits.isascii() or not digits.isdigit():
        raise ValueError(f"card {show(segment)}: {show(text)} is not an integer")
    number = int(text)
    if not low <= number <= INT32_MAX:
        raise ValueError(f"card {show(segment)}: {show(text)} is out of range")
    return number


def _go_bool(text: str, segment: str) -> bool:
    """strconv.ParseBool."""
    if text in _GO_TRUE:
        return True
    if text in _GO_FALSE:
        return False
    raise ValueError(f"card {show(segment)}: health {show(text)} is not true or false")


# registration annotation -> its reader
_PARSERS: dict[str, Callable[[str], tuple[RegisteredCard, ...]]] = {
    HAMI_REGISTER: parse_hami,
    VOLCANO_REGISTER: parse_volcano,
}
