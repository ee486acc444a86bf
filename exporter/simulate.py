"""A card reading source without a GPU: one node of a scenario, usage moving with time.

Cards come from the scenario's node; each allotment gets one process whose memory and
SM use follow a seeded sine of the wall clock (so two readers with one seed agree at one
instant). Memory never exceeds the allotment (both isolating modes cap it); core never
exceeds the allotment in mode 1, and the vGPUs of a mode-0 card share at most 100 %.
It replaces `NvmlReader` and is its own `PidResolver`; everything downstream is the same.

A card with MIG instances (docs/design.md §13) reads as `exporter.nvml_mig` reads a real one:
mode 1, one instance reading per GPU instance (its memory from the model's profile table in
`advisor.core.mig`), no card utilisation (NVML does not give it in MIG mode), and one process
per held instance, on that instance, without an SM share, owned by the pod holding it (so the
snapshot names the pod's use of the instance). An instance a pod holds uses a
seeded sine of its memory; a free one uses none. The driver numbers GPU instances; here they
are numbered from 1 in the scenario's order. A card without MIG reads as before.
"""

from __future__ import annotations

import math
import random
import threading
import time
import uuid
import zlib
from collections import Counter
from collections.abc import Callable, Iterable

from advisor.core.mig import table_of
from advisor.core.model import Card, Node
from exporter.allotments import Allotment, MigHold
from exporter.attribution import Owner
from exporter.readings import CardReading, MigInstanceReading, NvmlReading, ProcessReading

MIB = 1024 * 1024
FIRST_PID = 100_000
_UUID_NAMESPACE = uuid.UUID("0c6b1a7e-5d4e-4f3b-8a2c-9e7d6f5a4b3c")


def card_uuid(node: str, card: Card) -> str:
    return card.uuid or f"GPU-{uuid.uuid5(_UUID_NAMESPACE, f'{node}/{card.index}')}"


class SimulatedReader:
    def __init__(
        self,
        node: Node,
        allotments: Callable[[], tuple[Allotment, ...]],
        seed: int = 0,
        clock: Callable[[], float] = time.time,
        mig_holds: Callable[[], tuple[MigHold, ...]] = tuple,
    ) -> None:
        self.node = node
        self.allotments = allotments
        self.mig_holds = mig_holds
        self.seed = seed
        self.clock = clock
        self._owners: dict[int, Owner] = {}
        self._waves: dict[str, tuple[float, float]] = {}  # reads are serialised by the engine
        self._lock = threading.Lock()

    def read(self) -> NvmlReading:
        now = self.clock()
        allotments = self.allotments()
        per_card = Counter(a.card for a in allotments)
        processes: list[ProcessReading] = []
        owners: dict[int, Owner] = {}
        for i, a in enumerate(allotments):
            if not a.card.isdigit():
                continue  # the scenario dialect records indices; anything else is not ours
            pid = FIRST_PID + i
            memory, core = self._usage(a, now, per_card[a.card])
            processes.append(ProcessReading(pid, int(a.card), memory, core / 100.0))
            owners[pid] = Owner(container_id=a.container_id, pod_uid=a.pod_uid)
        instances = self._mig(now, processes, owners)
        with self._lock:
            self._owners = owners
        cards = tuple(self._card(card, processes) for card in self.node.cards)
        return NvmlReading(
            driver_version="simulated",
            cards=cards,
            processes=tuple(processes),
            errors=(),
            mig_instances=instances,
        )

    def owners(self, pids: Iterable[int]) -> dict[int, Owner]:
        with self._lock:
            table = self._owners
        return {pid: table[pid] for pid in pids if pid in table}

    def close(self) -> None:
        pass

    def _usage(self, a: Allotment, now: float, sharing: int) -> tuple[int, float]:
        """Memory bytes and core percent this allotment's process uses at `now`."""
        phase, period = self._wave(a)
        level = 0.5 + 0.5 * math.sin(2 * math.pi * now / period + phase)  # 0..1
        busy = 0.5 + 0.5 * math.sin(2 * math.pi * now / (period * 0.7) + phase * 2)
        memory = int(a.memory_bytes * (0.2 + 0.75 * level)) // MIB * MIB
        ceiling = float(a.core_percent) if a.core_percent else 100.0 / max(sharing, 1)
        return min(memory, a.memory_bytes), round(ceiling * (0.05 + 0.9 * busy), 1)

    def _wave(self, a: Allotment) -> tuple[float, float]:
        """Phase and period of one vGPU's usage: seeded by its identity, fixed for its life."""
        return self._wave_of(f"{a.namespace}/{a.pod}/{a.container}/{a.card}")

    def _wave_of(self, key: str) -> tuple[float, float]:
        wave = self._waves.get(key)
        if wave is None:
            rng = random.Random(self.seed ^ zlib.crc32(key.encode()))
            wave = self._waves[key] = (rng.uniform(0, 2 * math.pi), rng.uniform(60.0, 300.0))
        return wave

    def _mig(
        self, now: float, processes: list[ProcessReading], owners: dict[int, Owner]
    ) -> tuple[MigInstanceReading, ...]:
        """The MIG cards' instances; adds a process (and its owner) per held instance."""
        holds = {(h.card, h.start): h for h in self.mig_holds()}
        found: list[MigInstanceReading] = []
        for card in self.node.cards:
            table = table_of(card.model)
            for number, instance in enumerate(card.mig or (), start=1):
                profile = table.profile(instance.profile) if table is not None else None
                if profile is None:
                    continue  # the scenario reader refuses it; nothing NVML would list
                total = profile.memory_mib * MIB
                used = 0
                hold = holds.get((card.index, instance.start))
                if hold is not None:
                    key = f"{hold.namespace}/{hold.pod}/mig/{card.index}/{hold.start}"
                    level = self._level(key, now)
                    used = int(total * (0.2 + 0.75 * level)) // MIB * MIB
                    pid = FIRST_PID + len(processes)
                    processes.append(ProcessReading(pid, card.index, used, None, number))
                    owners[pid] = Owner(container_id=hold.container_id, pod_uid=hold.pod_uid)
                uuid_ = card_uuid(self.node.name, card)
                found.append(
                    MigInstanceReading(
                        card.index, uuid_, number, profile.name, instance.start, total, used
                    )
                )
        return tuple(found)

    def _level(self, key: str, now: float) -> float:
        phase, period = self._wave_of(key)
        return 0.5 + 0.5 * math.sin(2 * math.pi * now / period + phase)

    def _card(self, card: Card, processes: list[ProcessReading]) -> CardReading:
        mine = [p for p in processes if p.gpu_index == card.index]  # 8 x 160: cheap enough
        total = card.memory_mib * MIB
        used = sum(p.memory_used_bytes or 0 for p in mine) + total // 200  # driver overhead
        busy = sum(p.sm_utilization_ratio or 0.0 for p in mine)
        mig = card.mig is not None
        return CardReading(
            index=card.index,
            uuid=card_uuid(self.node.name, card),
            name=card.model or "Simulated GPU",
            memory_total_bytes=total,
            memory_used_bytes=min(used, total),
            utilization_ratio=None if mig else round(min(busy, 1.0), 3),
            healthy=card.healthy,
            health_problems=() if card.healthy else ("marked unhealthy in the scenario",),
            mig_mode=1 if mig else None,
        )
