"""One collection, frozen: the card reading, the pods view, who owns which process, and the
rows the metrics are rendered from.

`build_snapshot` is pure (no I/O, no clock): it joins allotments to cards by UUID or index
and processes to allotments by container id, then by pod UID; a process on a MIG instance
that no vGPU claims, to the containers of the node's MIG pods the same way (their use of the
instance: docs/design.md §13).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from advisor.errors import known
from exporter.allotments import Allotment, MigContainer, PodsView
from exporter.attribution import Owner
from exporter.readings import CardReading, NvmlReading, ProcessReading

MODE_MEMORY = 0
MODE_MEMORY_CORE = 1
MODE_UNUSED = 2


class CardKey(NamedTuple):
    """A card's label values; either may be "" when no source told us (NVML off).

    A NamedTuple rather than a dataclass: it is hashed thousands of times per collection.
    """

    gpu_index: str
    gpu_uuid: str


@dataclass(frozen=True, slots=True)
class CollectorRun:
    name: str
    success: bool
    duration_s: float
    error: str | None = None


@dataclass(frozen=True, slots=True)
class CardRow:
    key: CardKey
    reading: CardReading | None  # None when NVML is off or did not answer
    allotted_bytes: int
    core_allotted_percent: int
    vgpus: int
    mode: int
    unattributed_bytes: int | None  # None when usage is unknown (NVML or attribution off)


@dataclass(frozen=True, slots=True)
class VgpuRow:
    namespace: str
    pod: str
    container: str
    card: CardKey
    memory_total_bytes: int
    core_total_percent: int | None  # None: memory isolation only
    memory_used_bytes: int | None  # None when usage is unknown
    core_used_percent: float | None


@dataclass(frozen=True, slots=True)
class MigUseRow:
    """A container's processes on one MIG GPU instance of a card: the memory they use."""

    namespace: str
    pod: str
    container: str
    card: CardKey
    gpu_instance_id: int
    memory_used_bytes: int


@dataclass(frozen=True, slots=True)
class Snapshot:
    node: str
    collected_at: float  # unix seconds, for logs and the landing page only (no timestamps)
    reading: NvmlReading | None
    pods: PodsView | None
    owners: Mapping[int, Owner] | None  # None when attribution is off
    cards: tuple[CardRow, ...]
    vgpus: tuple[VgpuRow, ...]
    collectors: tuple[CollectorRun, ...]
    nvml_errors: tuple[tuple[str, str, int], ...]  # (function, code, cumulative count)
    mig_uses: tuple[MigUseRow, ...] = ()

    @property
    def driver_version(self) -> str | None:
        return self.reading.driver_version if self.reading else None


def card_key_of(card: CardReading) -> CardKey:
    return CardKey(gpu_index=str(card.index), gpu_uuid=card.uuid)


def card_key_from_text(card: str) -> CardKey:
    """An allotment's card when no reading names it: digits are an index, else a UUID."""
    return CardKey(card, "") if card.isdigit() else CardKey("", card)


class _CardIndex:
    """Finds the card an allotment or process refers to, by UUID or decimal index."""

    def __init__(self, known: tuple[CardKey, ...]) -> None:
        self.keys: list[CardKey] = list(known)
        self._by_text: dict[str, CardKey] = {}
        for key in known:
            if key.gpu_uuid:
                self._by_text.setdefault(key.gpu_uuid, key)
            if key.gpu_index:
                self._by_text.setdefault(key.gpu_index, key)

    def find(self, card: str) -> CardKey:
        key = self._by_text.get(card)
        if key is None:
            key = card_key_from_text(card)
            self._by_text[card] = key
            self.keys.append(key)
        return key


def build_snapshot(
    *,
    node: str,
    collected_at: float,
    reading: NvmlReading | None,
    known_cards: tuple[CardKey, ...] = (),
    pods: PodsView | None,
    owners: Mapping[int, Owner] | None,
    collectors: tuple[CollectorRun, ...],
    nvml_errors: tuple[tuple[str, str, int], ...] = (),
) -> Snapshot:
    """Join a reading, a pods view and process owners into renderable rows.

    `known_cards` labels allotments while NVML is failing (the last good identities).
    """
    readings = {card_key_of(c): c for c in reading.cards} if reading else {}
    index = _CardIndex(tuple(readings) if reading else known_cards)
    allotments = pods.allotments if pods else ()

    merged = _merge_allotments(allotments, index)
    usage_known = reading is not None and owners is not None
    used_mem: dict[tuple[str, str, str, CardKey], int] = defaultdict(int)
    used_core: dict[tuple[str, str, str, CardKey], float] = defaultdict(float)
    core_unknown: set[tuple[str, str, str, CardKey]] = set()
    core_known: set[tuple[str, str, str, CardKey]] = set()
    unattributed: dict[CardKey, int] = defaultdict(int)
    mig_used: dict[tuple[str, str, str, CardKey, int], int] = defaultdict(int)
    if reading is not None and owners is not None:
        uid_containers = _containers_by_pod_uid(allotments, index)
        id_containers = _containers_by_id(allotments, index)
        mig = _MigHolders(pods.mig_containers if pods else ())
        for proc in reading.processes:
            key = index.find(str(proc.gpu_index))
            owner = owners.get(proc.pid)
            vgpu = _match(owner, key, id_containers, uid_containers) if owner else None
            if vgpu is not None:
                _account(proc, vgpu, used_mem, used_core, core_known, core_unknown)
            elif (held := mig.match(owner, proc.gpu_instance_id)) is not None:
                mig_used[(*held, key, known(proc.gpu_instance_id, "an instance"))] += (
                    proc.memory_used_bytes or 0
                )
            else:
                unattributed[key] += proc.memory_used_bytes or 0

    rows: list[VgpuRow] = []
    for k, (memory, core) in sorted(merged.items(), key=lambda item: _row_order(item[0])):
        ns, pod, container, key = k
        rows.append(
            VgpuRow(
                namespace=ns,
                pod=pod,
                container=container,
                card=key,
                memory_total_bytes=memory,
                core_total_percent=core,
                memory_used_bytes=used_mem.get(k, 0) if usage_known else None,
                core_used_percent=(
                    _core_used(k, used_core, core_known, core_unknown) if usage_known else None
                ),
            )
        )
    vgpus = tuple(rows)
    per_card: dict[CardKey, list[VgpuRow]] = defaultdict(list)
    for row in vgpus:
        per_card[row.card].append(row)
    cards = tuple(
        _card_row(
            key, readings.get(key), per_card.get(key, []), unattributed if usage_known else None
        )
        for key in sorted(set(index.keys) | set(readings), key=_card_order)
    )
    return Snapshot(
        node=node,
        collected_at=collected_at,
        reading=reading,
        pods=pods,
        owners=owners,
        cards=cards,
        vgpus=vgpus,
        collectors=collectors,
        nvml_errors=nvml_errors,
        mig_uses=tuple(
            MigUseRow(ns, pod, container, key, instance, used)
            for (ns, pod, container, key, instance), used in sorted(
                mig_used.items(), key=lambda item: (_card_order(item[0][3]), item[0])
            )
        ),
    )


_VgpuKey = tuple[str, str, str, CardKey]


def _merge_allotments(
    allotments: tuple[Allotment, ...], index: _CardIndex
) -> dict[_VgpuKey, tuple[int, int | None]]:
    # One series per (container, card): a duplicate would make Prometheus drop the scrape.
    merged: dict[_VgpuKey, tuple[int, int | None]] = {}
    for a in allotments:
        k = (a.namespace, a.pod, a.container, index.find(a.card))
        core = a.core_percent if a.core_percent else None
        if k in merged:
            old_mem, old_core = merged[k]
            core = (old_core or 0) + (core or 0) or None
            merged[k] = (old_mem + a.memory_bytes, core)
        else:
            merged[k] = (a.memory_bytes, core)
    return merged


def _containers_by_id(
    allotments: tuple[Allotment, ...], index: _CardIndex
) -> dict[tuple[str, CardKey], _VgpuKey]:
    return {
        (a.container_id, index.find(a.card)): (a.namespace, a.pod, a.container, index.find(a.card))
        for a in allotments
        if a.container_id
    }


def _containers_by_pod_uid(
    allotments: tuple[Allotment, ...], index: _CardIndex
) -> dict[tuple[str, CardKey], set[_VgpuKey]]:
    found: dict[tuple[str, CardKey], set[_VgpuKey]] = defaultdict(set)
    for a in allotments:
        if a.pod_uid:
            key = index.find(a.card)
            found[(a.pod_uid, key)].add((a.namespace, a.pod, a.container, key))
    return found


def _match(
    owner: Owner,
    card: CardKey,
    by_id: dict[tuple[str, CardKey], _VgpuKey],
    by_uid: dict[tuple[str, CardKey], set[_VgpuKey]],
) -> _VgpuKey | None:
    if owner.container_id and (owner.container_id, card) in by_id:
        return by_id[(owner.container_id, card)]
    candidates = by_uid.get((owner.pod_uid, card)) if owner.pod_uid else None
    if candidates and len(candidates) == 1:
        return next(iter(candidates))
    return None  # unknown, or a pod with several vGPU containers on this card: ambiguous


class _MigHolders:
    """The node's MIG pods' containers, found by a process owner's container id, else by
    its pod UID where that pod has one such container (as vGPUs are: `_match`)."""

    def __init__(self, containers: tuple[MigContainer, ...]) -> None:
        self.by_id = {c.container_id: c for c in containers if c.container_id}
        by_uid: dict[str, list[MigContainer]] = defaultdict(list)
        for c in containers:
            if c.pod_uid:
                by_uid[c.pod_uid].append(c)
        self.by_uid = {uid: found[0] for uid, found in by_uid.items() if len(found) == 1}

    def match(self, owner: Owner | None, instance: int | None) -> tuple[str, str, str] | None:
        """(namespace, pod, container) of a process on MIG instance `instance` (None: not
        on one), or None when no MIG pod's container owns it."""
        if owner is None or instance is None:
            return None
        found = self.by_id.get(owner.container_id) if owner.container_id else None
        if found is None and owner.pod_uid:
            found = self.by_uid.get(owner.pod_uid)
        return None if found is None else (found.namespace, found.pod, found.container)


def _account(
    proc: ProcessReading,
    vgpu: _VgpuKey,
    used_mem: dict[_VgpuKey, int],
    used_core: dict[_VgpuKey, float],
    core_known: set[_VgpuKey],
    core_unknown: set[_VgpuKey],
) -> None:
    used_mem[vgpu] += proc.memory_used_bytes or 0
    if proc.sm_utilization_ratio is None:
        core_unknown.add(vgpu)
    else:
        used_core[vgpu] += proc.sm_utilization_ratio * 100.0
        core_known.add(vgpu)


def _core_used(
    k: _VgpuKey, used: dict[_VgpuKey, float], known: set[_VgpuKey], unknown: set[_VgpuKey]
) -> float | None:
    if k in unknown and k not in known:
        return None  # it has processes but the card reports no per-process utilisation
    return round(used.get(k, 0.0), 6)  # 0.07 * 100 is 7.000000000000001


def _card_row(
    key: CardKey,
    reading: CardReading | None,
    mine: list[VgpuRow],
    unattributed: Mapping[CardKey, int] | None,
) -> CardRow:
    cores = [v.core_total_percent or 0 for v in mine]
    if not mine:
        mode = MODE_UNUSED
    elif any(cores):
        mode = MODE_MEMORY_CORE
    else:
        mode = MODE_MEMORY
    return CardRow(
        key=key,
        reading=reading,
        allotted_bytes=sum(v.memory_total_bytes for v in mine),
        core_allotted_percent=sum(cores),
        vgpus=len(mine),
        mode=mode,
        unattributed_bytes=None if unattributed is None else unattributed.get(key, 0),
    )


def _card_order(key: CardKey) -> tuple[int, int, str]:
    return (
        (0, int(key.gpu_index), key.gpu_uuid) if key.gpu_index.isdigit() else (1, 0, key.gpu_uuid)
    )


def _row_order(k: _VgpuKey) -> tuple[tuple[int, int, str], str, str, str]:
    ns, pod, container, key = k
    return (_card_order(key), ns, pod, container)
