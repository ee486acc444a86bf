"""Scale-up's check, fast: the whole queue scheduled on the cluster plus trial node counts.

The check (`scaling.up`) schedules the whole Pending queue on the cluster with each entry's
new nodes added, once per node count it tries. Two facts make the later checks cheap while
the placements stay those of a fresh pass on exactly those nodes:

- A node no pod can land on is as good as absent: every profile picks among the nodes that
  pass every filter, so one that passes none changes no pick. The running pods are bound
  once, on a state holding room for more nodes than a check needs; each check copies it and
  takes out the nodes beyond its counts as scale-down takes out a node (no healthy card, no
  allocatable: every pod takes a pod slot).
- A pass can start where it would first differ from an earlier one. Adding or removing
  nodes a pod does not pick does not change its pick (every profile ranks nodes by their
  own score, ties by name; CCE's near-tie window holds scores equal but for float noise).
  So a pass on fewer nodes repeats an earlier pass on more up to the first pod that landed
  on a node it lacks; and a pass on more nodes repeats one on fewer while each entry that
  grows still has an empty node there, which, identical to its new ones and first by name,
  wins over them (where no pod's node filters tell an entry's nodes apart). Those first pods
  are replayed (bound where they landed), the rest placed.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from advisor.core.fragmentation import valid_shape
from advisor.core.mig_cycle import MigBook, is_mig
from advisor.core.model import Cluster, Placement, Pod, queue_order
from advisor.core.occupancy import build_state
from advisor.core.profiles import profile_of
from advisor.core.state import CardState, IntArray, Shape
from advisor.core.whatif import place_queue
from advisor.errors import known

# New nodes are named ENTRY-NNNN: past this many per entry, names stop sorting by number.
NAME_ORDERED = 10_000


@dataclass(frozen=True, slots=True)
class _Pass:
    counts: tuple[int, ...]
    landed: tuple[Placement | None, ...]  # per queued pod


class QueueCheck:
    """Where each Pending pod lands with `counts[k]` new nodes of entry k: `grown(counts)` is
    that cluster (its new nodes appended in entry, then index order, named `name(k, i)`;
    the same Pending pods whatever the counts)."""

    def __init__(
        self,
        grown: Callable[[Sequence[int]], Cluster],
        name: Callable[[int, int], str],
        entries: int,
    ) -> None:
        self.grown = grown
        self.entries = entries
        self.name = name
        bare = grown([0] * entries)
        self.nodes = len(bare.nodes)  # the cluster's own, first in every grown one
        self.queue: tuple[Pod, ...] = queue_order(bare.pending)
        self.policy = bare.policy
        self.capacity: list[int] = [-1] * entries
        self.state: CardState | None = None
        self.runs: list[_Pass] = []
        self.where: dict[str, tuple[int, int]] = {}  # new node -> (entry, index)
        self.alike: list[bool] = []  # entry k's nodes told apart by no queued pod's filters
        # the shapes `place_queue` binds the queued pods by, to replay them
        profile = profile_of(bare.scheduler).name
        self.shapes: list[Shape | None] = [valid_shape(p, profile) for p in self.queue]
        # MIG pods take instances the state does not hold (`core.mig_cycle`): each pass
        # places the whole queue with the grown cluster's book, no earlier pass replayed
        self.mig = any(is_mig(p) for p in self.queue)
        self.cluster = bare

    def landed(self, counts: Sequence[int]) -> tuple[Placement | None, ...]:
        """Each queued pod's placement (None: nowhere) with `counts` new nodes per entry."""
        state = self._state(counts)
        if self.mig:
            book = MigBook(self.cluster, state)
            landed = place_queue(state, self.queue, self.policy, book)
            self.runs.append(_Pass(tuple(counts), landed))
            return landed
        start, source = self._resume(counts)
        for pod_shape, where in zip(self.shapes[:start], source[:start], strict=True):
            if where is not None and pod_shape is not None:
                state.apply(state.positions(where), pod_shape)
        landed = source[:start] + place_queue(
            state, self.queue[start:], self.policy, shapes=self.shapes[start:]
        )
        self.runs.append(_Pass(tuple(counts), landed))
        return landed

    def needed(self, counts: Sequence[int]) -> list[int]:
        """The counts the last pass (on `counts`) needed: each entry up to the last of its
        new nodes a pod landed on, at least one where it has any. The nodes after it no pod
        picked, so without them every pick is the same (the module docstring): the same
        pass on fewer nodes."""
        run = self.runs[-1]
        if list(run.counts) != list(counts):
            raise ValueError(f"the last pass was on {list(run.counts)}, not {list(counts)}")
        last = [0] * self.entries
        for where in run.landed:
            if where is not None and where.node in self.where:
                k, i = self.where[where.node]
                last[k] = max(last[k], i + 1)
        return [min(c, max(n, 1)) if c else 0 for c, n in zip(counts, last, strict=True)]

    def _state(self, counts: Sequence[int]) -> CardState:
        """A copy of the built state with the nodes beyond `counts` taken out; built anew
        (twice the counts asked, for the growth to come) when a count passes its room."""
        if self.state is None or any(c > r for c, r in zip(counts, self.capacity, strict=True)):
            room = [max(c, 2 * c if self.state is not None else c) for c in counts]
            self.capacity = [max(r, c) for r, c in zip(room, self.capacity, strict=True)]
            cluster = self.cluster = self.grown(self.capacity)
            self.state = (
                build_state(cluster)
                if self.state is None
                else _with_occupancy(CardState(cluster), self.state, self.nodes)
            )
            self.where = {
                self.name(k, i): (k, i)
                for k in range(self.entries)
                for i in range(self.capacity[k])
            }
            self.alike = [self._alike(k) for k in range(self.entries)]
        state = self.state.copy()
        for k, count in enumerate(counts):
            for i in range(count, self.capacity[k]):
                take_out(state, state.node_index[self.name(k, i)])
        return state

    def _alike(self, entry: int) -> bool:
        """Whether no queued pod's node filters (selectors, affinity on the hostname or the
        name) tell entry `entry`'s new nodes apart, as the growth rule needs."""
        state = known(self.state, "the check's state, built before its entries are read")
        nodes = np.array(
            [state.node_index[self.name(entry, i)] for i in range(self.capacity[entry])],
            dtype=np.int64,
        )
        if nodes.size == 0:
            return True
        seen = set()
        for pod_shape in self.shapes:
            if pod_shape is None or pod_shape.constraints in seen:
                continue
            seen.add(pod_shape.constraints)
            ok = state.static_ok(pod_shape.constraints)[nodes]
            if ok.any() and not ok.all():
                return False
        return True

    def _resume(self, counts: Sequence[int]) -> tuple[int, tuple[Placement | None, ...]]:
        """The earlier pass this one repeats the longest start of, and that start's length
        (0 and no pass: place the whole queue)."""
        best: tuple[int, tuple[Placement | None, ...]] = (0, ())
        for run in self.runs:
            start = self._shared(run, counts)
            if start > best[0]:
                best = (start, run.landed)
        return best

    def _shared(self, run: _Pass, counts: Sequence[int]) -> int:
        """How many first pods land as in `run` with `counts` nodes (the module docstring)."""
        end = len(self.queue)
        growing = [k for k in range(self.entries) if counts[k] > run.counts[k]]
        for k in growing:
            if run.counts[k] == 0 or not self.alike[k] or counts[k] > NAME_ORDERED:
                return 0
        opened: dict[tuple[int, int], int] = {}  # new node -> the step its first pod came
        for step, where in enumerate(run.landed):
            if where is None or where.node not in self.where:
                continue
            k, i = self.where[where.node]
            if i >= counts[k]:
                end = step  # this pass lacks the node that pod landed on
                break
            opened.setdefault((k, i), step)
        for k in growing:
            firsts = [opened.get((k, i)) for i in range(run.counts[k])]
            if all(s is not None for s in firsts):  # no empty node left after the last
                end = min(end, max(s for s in firsts if s is not None) + 1)
        return end


def take_out(state: CardState, node: int) -> None:
    """Node `node` as scale-down removes one: no healthy card, no allocatable (every pod
    takes a pod slot), so no pod lands on it."""
    start = int(state.first_card[node])
    state.healthy[start : start + int(state.card_count[node])] = False
    state.allocatable[node] = 0


def put_back(state: CardState, node: int, allocatable: IntArray) -> None:
    """A new node `take_out` took out, as it was: its cards healthy (a template's all are)
    and its `allocatable`."""
    start = int(state.first_card[node])
    state.healthy[start : start + int(state.card_count[node])] = True
    state.allocatable[node] = allocatable


# What binding pods changes in a `CardState` (`apply`, `release`, `add_requested`): per
# card, then per node.
CARD_OCCUPANCY = ("free_memory", "free_core", "vgpus", "mode")
NODE_OCCUPANCY = (
    "allotted_healthy",
    "node_used",
    "node_core_asked",
    "node_memory_asked",
    "requested",
)


def _with_occupancy(fresh: CardState, built: CardState, nodes: int) -> CardState:
    """`fresh` (nothing bound) with the pods `built` binds on its first `nodes` nodes, which
    both share, bound alike: their occupancy copied, not every running pod bound again. The
    nodes after them are new ones, with nothing bound in `built` either."""
    cards = int(built.first_card[nodes]) if nodes < len(built.node_names) else built.vgpus.size
    for names, size in ((CARD_OCCUPANCY, cards), (NODE_OCCUPANCY, nodes)):
        for name in names:
            getattr(fresh, name)[:size] = getattr(built, name)[:size]
    kept = {node: over for node, over in fresh.excess.items() if node >= nodes}
    fresh.excess = {node: over for node, over in built.excess.items() if node < nodes} | kept
    return fresh
