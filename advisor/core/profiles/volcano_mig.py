"""Volcano v1.15.1's vGPU MIG mode (docs/design.md §13.1): a card's geometry chosen at bind
time from configured groups, as pkg/scheduler/api/devices/nvidia/vgpu (mig.go, utils.go) and
pkg/scheduler/api/devices/config/vgpu.go do it.

- A card registers its mode as the sixth field of `volcano.sh/node-vgpu-register`
  (`decodeNodeDevices`, utils.go:56-104): `mig` gives it the geometry groups of the first
  `knownMigGeometries` entry whose one of `models` is a substring of the card's type
  (`extractGeometryFromType`, utils.go:39-54); none found: the card falls back to hami-core.
  The node's mode is the last card's (`retval.Mode = sharingMode` after the loop), and a
  pod's `volcano.sh/vgpu-mode` annotation must equal it (utils.go:344-347).
- A group lists templates (name, memory, count). Once a pod holds an instance of a group,
  the card keeps that group (`MigInUse.Index`, kept even when the last pod leaves); until
  then the groups are tried in order (`findMatch`, mig.go:121-150).
- In a group, templates go by memory, smallest first (Go's `sort.Slice` sorts fewer than
  13 by insertion, so equal memories keep their place, as here). An unused card takes the first
  template whose memory holds the request; a card in use takes only a template it already
  holds an instance of, with one left (`pickFromGroup`, mig.go:171-207): a template of the
  group no pod holds yet is never picked there.
- The instance is the template's first free index; its position in the group counts the
  templates before it (`getPosition`, mig.go:209-230), written `UUID[group-position]`
  (`encodeMIGID`, mig.go:243-245).
- The card's used memory grows by the instance's memory (divided by `gpuMemoryFactor` when
  above 1), not by the request (`TryAddPod`, mig.go:36-57; `AddPod`, mig.go:59-91).

Pure values: every function returns a new `MigUse`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

HAMI_CORE, MIG = "hami-core", "mig"  # type.go:55-56 (mps registers but is read as hami-core)


@dataclass(frozen=True, slots=True)
class MigTemplate:
    """`config.MigTemplate`: `count` instances of `name`, each `memory_mib`."""

    name: str
    memory_mib: int
    count: int


@dataclass(frozen=True, slots=True)
class Geometry:
    """`config.Geometry`: one group of templates, a way to cut the card."""

    group: str
    instances: tuple[MigTemplate, ...]


@dataclass(frozen=True, slots=True)
class KnownGeometries:
    """One `knownMigGeometries` entry: the card types it names (substrings) and their groups."""

    models: tuple[str, ...]
    geometries: tuple[Geometry, ...]


@dataclass(frozen=True, slots=True)
class MigUse:
    """`config.MigInUse`: the group in use (None: none yet, Go's -1) and, per template name
    in the order first taken, its memory as first taken and the indices held within that
    template (ascending). Two templates of one name share the entry, and its first memory
    (`addMigUsed` returns the entry's, mig.go:279-283)."""

    group: int | None = None
    used: tuple[tuple[str, int, tuple[int, ...]], ...] = ()

    def held(self, name: str) -> tuple[int, ...] | None:
        return next((idx for n, _, idx in self.used if n == name), None)

    def memory(self, name: str) -> int:
        return next(m for n, m, _ in self.used if n == name)


@dataclass(frozen=True, slots=True)
class Match:
    """An instance `findMatch` picks: its group, position in the group, and memory."""

    group: int
    position: int
    memory_mib: int


def card_mode(registered: str) -> str:
    """`getSharingMode` (utils.go:325-332): `mig`, else hami-core."""
    return MIG if registered == MIG else HAMI_CORE


def geometries_for(model: str, known: Sequence[KnownGeometries]) -> tuple[Geometry, ...] | None:
    """`extractGeometryFromType`: the first entry one of whose models the type contains."""
    for entry in known:
        if any(m in model for m in entry.models):
            return entry.geometries
    return None


def node_mode(
    cards: Sequence[tuple[str, str]], known: Sequence[KnownGeometries]
) -> tuple[str, tuple[tuple[Geometry, ...], ...]]:
    """`decodeNodeDevices` over (registered mode, type) per card: the node's mode (the last
    card's, after its fallback) and each card's groups (empty unless it found some)."""
    mode = HAMI_CORE
    groups: list[tuple[Geometry, ...]] = []
    for registered, model in cards:
        mode = card_mode(registered)
        found = geometries_for(model, known) if mode == MIG else None
        if mode == MIG and found is None:
            mode = HAMI_CORE  # "extract mig geometry error and fall back to hamicore mode"
        groups.append(found or ())
    return mode, tuple(groups)


def _position(group: Geometry, count: int, held: Sequence[int], index: int) -> int:
    """`getPosition`: templates before `index`, plus the template's first free index."""
    before = sum(t.count for t in group.instances[:index])
    free = next((i for i in range(count) if i not in held), 0)
    return before + free


def pick_from_group(group: Geometry, use: MigUse | None, request_mib: int) -> Match | None:
    """`pickFromGroup` (group index left 0: `find_match` sets it)."""
    by_memory = sorted(enumerate(group.instances), key=lambda it: it[1].memory_mib)
    for index, template in by_memory:
        if use is None or not use.used:
            if template.memory_mib >= request_mib:
                return Match(0, _position(group, template.count, (), index), template.memory_mib)
            continue
        held = use.held(template.name)
        if held is None:
            continue  # a template the card holds none of is not looked at (mig.go:194-203)
        if template.count - len(held) > 0 and template.memory_mib >= request_mib:
            return Match(0, _position(group, template.count, held, index), template.memory_mib)
    return None


def find_match(geometries: Sequence[Geometry], use: MigUse, request_mib: int) -> Match | None:
    """`findMatch`: the group in use only, else each group in order, unused."""
    if use.group is not None:
        found = pick_from_group(geometries[use.group], use, request_mib)
        return None if found is None else Match(use.group, found.position, found.memory_mib)
    for g, group in enumerate(geometries):
        found = pick_from_group(group, None, request_mib)
        if found is not None:
            return Match(g, found.position, found.memory_mib)
    return None


def try_add(
    geometries: Sequence[Geometry], use: MigUse, request_mib: int, factor: int = 1
) -> tuple[Match, int] | None:
    """`MIGFactory.TryAddPod`: the instance for a request (in the registration's unit) and
    the memory the card then counts used, both through `gpuMemoryFactor`."""
    need = request_mib * factor if factor > 1 else request_mib
    found = find_match(geometries, use, need)
    if found is None:
        return None
    return found, found.memory_mib // factor if factor > 1 else found.memory_mib


def find_position(group: Geometry, position: int) -> tuple[int, int] | None:
    """`findPosition`: (template index, index in it), None past the group's end."""
    start = 0
    for i, template in enumerate(group.instances):
        if position < start + template.count:
            return i, position - start
        start += template.count
    return None


def take(
    geometries: Sequence[Geometry], use: MigUse, group_name: str, position: int
) -> tuple[MigUse, int]:
    """`addMigUsed`: the card holding the instance `UUID[group-position]` names, and its
    memory; 0 and no change for a group the card does not have. A held index is kept once
    (`insert` logs and keeps the list)."""
    for g, group in enumerate(geometries):
        if group.group != group_name:
            continue
        where = find_position(group, position)
        if where is None:
            raise ValueError(f"position {position} is past group {group_name}")  # Go panics
        template = group.instances[where[0]]
        held = use.held(template.name)
        if held is None:
            entry = (template.name, template.memory_mib, (where[1],))
            return MigUse(g, (*use.used, entry)), template.memory_mib
        grown = tuple(sorted({*held, where[1]}))
        used = tuple((n, m, grown if n == template.name else idx) for n, m, idx in use.used)
        return MigUse(g, used), use.memory(template.name)
    return use, 0


def release(
    geometries: Sequence[Geometry], use: MigUse, group_name: str, position: int
) -> tuple[MigUse, int]:
    """`subMigUsed`: the card without that instance, and its memory. The group stays the
    card's even when nothing is left held (`Index` is never reset)."""
    for g, group in enumerate(geometries):
        if group.group != group_name:
            continue
        where = find_position(group, position)
        if where is None:
            raise ValueError(f"position {position} is past group {group_name}")
        template = group.instances[where[0]]
        held = use.held(template.name)
        if held is None:
            return MigUse(g, use.used), 0
        left = tuple(i for i in held if i != where[1])
        used = tuple(
            (n, m, left if n == template.name else idx)
            for n, m, idx in use.used
            if n != template.name or left
        )
        return MigUse(g, used), use.memory(template.name)
    return use, 0


def instance_id(uuid: str, group: str, position: int) -> str:
    """`encodeMIGID`: the device id a pod's `volcano.sh/vgpu-ids-new` records."""
    return f"{uuid}[{group}-{position}]"


def parse_instance_id(device_id: str) -> tuple[str, int]:
    """`decodeMIGID`: (group, position); ValueError where Go returns an error."""
    start, end = device_id.find("["), device_id.find("]")
    if start == -1 or end == -1 or start > end:
        raise ValueError("invalid format")
    parts = device_id[start + 1 : end].split("-")
    if len(parts) != 2:
        raise ValueError("invalid format inside brackets")
    digits = parts[1][1:] if parts[1][:1] in "+-" else parts[1]
    if not digits.isascii() or not digits.isdigit():
        raise ValueError(f"invalid index: {parts[1]!r}")
    return parts[0], int(parts[1])
