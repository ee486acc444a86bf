"""The queue arithmetic Volcano's preempt and reclaim ask of the proportion plugin (volcano
v1.15.1 pkg/scheduler/plugins/proportion/proportion.go): each queue's deserved share,
allocated and request, in the node sums' dimensions (`board.DIMENSIONS`).

- deserved: OnSessionOpen's loop: the remaining cluster total shared among the queues with
  jobs by weight, each capped by its realCapability ((total - all guarantees) + its guarantee,
  at most its capability) and by its request, never below its guarantee; until every queue
  is met or nothing changes.
- Allocatable (AllocatableFn, also the PreemptiveFn): allocated + the task's request within
  deserved in each dimension the task asks; Overused: deserved within allocated in every
  dimension.
- Evictions and pipelines move `allocated` (the plugin's event handlers).

A capability or guarantee names resources as the API does: cpu, memory and the profile's
GPU resource names; others are not in the sums and are ignored.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

import numpy as np

from advisor.core.jobs import DEFAULT_QUEUE, Queue, ResourceList
from advisor.core.preemption.board import (
    CPU,
    DIMENSIONS,
    GPU_CORE,
    GPU_MEMORY,
    MEMORY,
    VGPUS,
    Board,
    FloatArray,
)
from advisor.core.state import UNLIMITED

_SUFFIX = {
    "": 1.0, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
    "Ki": 2.0**10, "Mi": 2.0**20, "Gi": 2.0**30, "Ti": 2.0**40, "Pi": 2.0**50, "Ei": 2.0**60,
}  # fmt: skip
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")


def quantity(text: str) -> float | None:
    """A Kubernetes quantity as a number (None: unreadable, so ignored)."""
    match = _QUANTITY.match(text.strip())
    if match is None:
        return None
    try:
        return float(match.group(1)) * _SUFFIX[match.group(2) or ""]
    except ValueError:
        return None


class QueueBook:
    """Every queue with a job in the session: its settings, allocated, request, deserved."""

    def __init__(
        self,
        board: Board,
        queues: Mapping[str, Queue],
        allocated: Mapping[str, FloatArray],
        request: Mapping[str, FloatArray],
    ) -> None:
        self.queues = dict(queues)
        self.allocated = {q: allocated[q].copy() for q in queues}
        self.request = {q: request[q].copy() for q in queues}
        self._names = self._resource_names(board)
        self.deserved = self._deserved(_total(board))

    def _resource_names(self, board: Board) -> dict[str, tuple[int, float]]:
        names = {"cpu": (CPU, 1000.0), "memory": (MEMORY, 1.0)}
        dialect = board.state.profile.dialect
        if dialect is not None:
            names[dialect.memory] = (GPU_MEMORY, float(dialect.memory_unit_mib))
            names[dialect.core] = (GPU_CORE, 1.0)
            if dialect.count is not None:
                names[dialect.count] = (VGPUS, 1.0)
        return names

    def _vector(self, resources: ResourceList, missing: float) -> FloatArray:
        out = np.full(DIMENSIONS, missing, dtype=np.float64)
        for name, text in resources.items():
            known = self._names.get(name)
            value = quantity(text)
            if known is not None and value is not None:
                out[known[0]] = value * known[1]
        return out

    def _deserved(self, total: FloatArray) -> dict[str, FloatArray]:
        names = sorted(self.queues)
        guarantee = {q: self._vector(self.queues[q].guarantee, 0.0) for q in names}
        all_guarantees = sum(guarantee.values(), np.zeros(DIMENSIONS))
        real = {}
        for q in names:
            cap = self._vector(self.queues[q].capability, math.inf)
            cap[cap <= 0] = math.inf  # proportion: a zero cpu or memory capability is none
            real[q] = np.minimum(np.maximum(total - all_guarantees, 0) + guarantee[q], cap)
        deserved = {q: np.zeros(DIMENSIONS) for q in names}
        remaining, met = total.copy(), set[str]()
        while True:
            weight = sum(self.queues[q].weight for q in names if q not in met)
            if weight <= 0:
                break
            before = remaining.copy()
            increased, decreased = np.zeros(DIMENSIONS), np.zeros(DIMENSIONS)
            for q in names:
                if q in met:
                    continue
                old = deserved[q]
                share = np.where(np.isinf(remaining), math.inf, remaining) * (
                    self.queues[q].weight / weight
                )
                new = np.minimum(np.minimum(old + share, real[q]), self.request[q])
                new = np.maximum(new, guarantee[q])
                if (self.request[q] <= new).all() or np.array_equal(new, old):
                    met.add(q)
                increased += np.maximum(new - old, 0)
                decreased += np.maximum(old - new, 0)
                deserved[q] = new
            with np.errstate(invalid="ignore"):
                remaining = np.maximum(remaining + decreased - increased, 0)
            remaining = np.nan_to_num(remaining, nan=math.inf)
            if not remaining.any() or np.array_equal(remaining, before):
                break
        return deserved

    def allocatable(self, queue: str, request: FloatArray) -> bool:
        """AllocatableFn: allocated + request within deserved where the request asks."""
        asked = request > 0
        future = self.allocated[queue] + request
        return bool((future[asked] <= self.deserved[queue][asked] + 1e-9).all())

    def overused(self, queue: str) -> bool:
        return bool((self.deserved[queue] <= self.allocated[queue] + 1e-9).all())

    def move(self, queue: str, amount: FloatArray) -> None:
        """An eviction (negative) or a pipeline (positive) in `queue`."""
        self.allocated[queue] = self.allocated[queue] + amount

    def copy_allocated(self) -> dict[str, FloatArray]:
        return {q: a.copy() for q, a in self.allocated.items()}


def queue_of(queues: Mapping[str, Queue], name: str) -> Queue:
    """The named queue; one not listed is an Open queue of weight 1 (as `default` is)."""
    return queues.get(name) or Queue(name or DEFAULT_QUEUE)


def _total(board: Board) -> FloatArray:
    """The cluster's allocatable in the sums' dimensions (unknown allocatable: unlimited)."""
    st = board.state
    out = np.zeros(DIMENSIONS, dtype=np.float64)
    from_state = st.allocatable.astype(np.float64)
    unknown = st.allocatable >= UNLIMITED
    out[CPU] = math.inf if unknown[:, 1].any() else float(from_state[:, 1].sum())
    out[MEMORY] = math.inf if unknown[:, 2].any() else float(from_state[:, 2].sum())
    counted = st.counted
    out[GPU_MEMORY] = float(st.capacity[counted].sum())
    out[GPU_CORE] = 100.0 * float(counted.sum())
    out[VGPUS] = float(st.slots[counted].sum())
    return out
