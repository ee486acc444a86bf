"""A pod reduced to what its cards and its node must give: the key every filter reads.

Below the profiles (which judge cards for a shape) and the state (which places shapes).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from advisor.core.model import Mode, Pod, Request
from advisor.core.nodefilters import NO_CONSTRAINTS, NO_RESOURCES, NodeConstraints, Resources
from advisor.core.pod_options import NO_OPTIONS, PodOptions, hami_options


@dataclass(frozen=True, slots=True)
class Shape:
    """A pod reduced to what each card must give and what its node must offer besides.

    Two pods of one shape are interchangeable to every filter, so the core caches verdicts
    by shape (e.g. "this shape already failed in this queue").
    """

    gpus: int
    card_memory_mib: int
    card_core: int
    mode: int
    resources: Resources = NO_RESOURCES
    constraints: NodeConstraints = NO_CONSTRAINTS
    memory_percent: int = 0  # per card, outside CCE; with card_memory_mib 0: the whole card
    options: PodOptions = NO_OPTIONS  # HAMi's per-pod annotations
    # Shapes key the core's caches, so each is hashed many times: once is enough (frozen).
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        fields = (self.gpus, self.card_memory_mib, self.card_core, self.mode, self.resources)
        rest = (self.constraints, self.memory_percent, self.options)
        object.__setattr__(self, "_hash", hash((*fields, *rest)))

    def __hash__(self) -> int:
        return self._hash

    @staticmethod
    def of(request: Request) -> Shape:
        """The GPU part only: a pod that asks nothing of its node besides its cards."""
        return Shape(
            request.gpus,
            request.card_memory_mib,
            request.card_core_percent,
            int(request.mode),
            memory_percent=request.memory_percent,
        )

    @staticmethod
    def of_pod(pod: Pod) -> Shape:
        return Shape(
            pod.request.gpus,
            pod.request.card_memory_mib,
            pod.request.card_core_percent,
            int(pod.request.mode),
            pod.resources,
            pod.constraints,
            pod.request.memory_percent,
            hami_options(pod.annotations),
        )

    def needs_no_less(self, than: Shape) -> bool:
        """Every node and card that can take `self` can take `than`: same mode and node
        constraints, and no fewer cards, memory or core per card, cpu or memory. (A pod
        slot is one per pod, so equal.) Placing pods only takes room, so once `than`
        fits nowhere, neither does `self`, for the rest of a queue."""
        return (
            self.mode == than.mode
            and self.constraints == than.constraints
            and self.memory_percent == than.memory_percent
            # memory asked the same way: a whole card (or hami's share beside no memory)
            # needs the card's size, which no absolute figure bounds
            and (self.card_memory_mib == 0) == (than.card_memory_mib == 0)
            and self.options == than.options
            and self.gpus >= than.gpus
            and self.card_memory_mib >= than.card_memory_mib
            and (self.mode != int(Mode.MEMORY_CORE) or self.card_core >= than.card_core)
            and self.resources.cpu_milli >= than.resources.cpu_milli
            and self.resources.memory_bytes >= than.resources.memory_bytes
        )

    @property
    def demand(self) -> tuple[int, int, int]:
        """(pod slots, cpu millicores, memory bytes) the pod takes from its node."""
        return (1, self.resources.cpu_milli, self.resources.memory_bytes)


class Failures:
    """The shapes that found no place in one pass over a queue, and whether a shape will
    find none either (it `needs_no_less` than one of them): placing only takes room, so the
    answer holds for the rest of the pass. A queue repeats few shapes, so each shape is
    compared with each failure once, not once per pod."""

    def __init__(self) -> None:
        self._failed: list[Shape] = []
        # per shape, how many failures it was compared with (-1: it needs no less than one)
        self._compared: dict[Shape, int] = {}

    def known(self, shape: Shape) -> bool:
        """Whether `shape` fits nowhere, by the failures so far (no scan of the cluster)."""
        seen = self._compared.get(shape, 0)
        if seen < 0 or any(shape.needs_no_less(f) for f in self._failed[seen:]):
            self._compared[shape] = -1
            return True
        self._compared[shape] = len(self._failed)
        return False

    def add(self, shape: Shape) -> None:
        """`shape` found no place."""
        self._failed.append(shape)
        self._compared[shape] = -1
