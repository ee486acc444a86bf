"""The cluster as one session's evictions leave it: the cycle's final state, copied (under
kube-scheduler rewound to each pod's turn: `kube.judge_kube`), minus the victims chosen so
far, plus the preemptors they made room for.

Evictions accumulate: kube-scheduler nominates each preemptor on its node and counts it there
for every later pod (RunFilterPluginsWithNominatedPods), and marks its victims terminating,
so no later pod picks them again; Volcano's statement evicts (Releasing, no longer a victim:
api.PreemptableStatus) and pipelines the preemptor on the node (its FutureIdle shrinks).

MIG instances (docs/design.md §13) are the cycle's book (`core.mig_cycle.MigBook`), copied
over the board's state: a MIG victim frees its instances (and its cpu, memory and pod
slot), never vGPU memory; a vGPU victim frees no instance. In Volcano's node sums each
profile is a scalar of its own (`nvidia.com/mig-<profile>`, a column after the six below):
the node's allocatable instances less what its pods ask.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import NamedTuple, Protocol

import numpy as np
import numpy.typing as npt

from advisor.core.model import Cluster, Placement, Pod
from advisor.core.profiles.base import pick
from advisor.core.state import UNLIMITED, BoolArray, CardState, IntArray, Shape

# Volcano's node sum (api.Resource as util.ValidateVictims compares it): cpu millicores,
# memory bytes, GPU memory MiB, GPU core percent, vGPUs, pods (a task's Resreq counts one:
# api.NewResource's `pods` scalar, which the node's allocatable bounds), then one column
# per MIG profile of the cluster (`Board.mig_columns`).
CPU, MEMORY, GPU_MEMORY, GPU_CORE, VGPUS, PODS = range(6)
DIMENSIONS = 6
FloatArray = npt.NDArray[np.float64]


class Instance(Protocol):
    """One MIG instance of the book."""

    @property
    def card(self) -> int: ...
    @property
    def start(self) -> int: ...
    @property
    def holder(self) -> str | None: ...


class MigBook(Protocol):
    """What the board asks of the cycle's MIG instances (`core.mig_cycle.MigBook`, not
    imported: it imports the diagnosis, which imports this package's verdict)."""

    state: CardState

    @property
    def empty(self) -> bool: ...
    def copy(self, state: CardState) -> MigBook: ...
    def offered(self, profile: str) -> Sequence[Sequence[Instance]]: ...
    def free(self, profile: str) -> Sequence[Sequence[Instance]]: ...
    def held_unhealthy(self, profile: str) -> Sequence[Sequence[str]]: ...
    def resource(self, node: int, profile: str) -> str: ...
    def held_by(self, pod: str) -> tuple[tuple[int, int], ...]: ...
    def hold(self, pod: Pod, node: str, held: tuple[tuple[int, int], ...]) -> None: ...
    def release(self, pod: Pod, placement: Placement) -> None: ...


class Saved(NamedTuple):
    state: CardState
    evicted: frozenset[str]
    pipelined: frozenset[str]
    reserved: FloatArray
    mig: MigBook | None
    mig_left: FloatArray


class Board:
    """Private to one `judge` call, like the cycle's CardState it starts from."""

    def __init__(
        self,
        cluster: Cluster,
        state: CardState,
        placed: frozenset[str] = frozenset(),
        mig: MigBook | None = None,
    ) -> None:
        """`placed`: the pods the cycle placed (they hold their request); `mig`: the cycle's
        MIG instances as it left them (None or empty: no MIG card)."""
        self.state = state.copy()
        # Kept over `self.state` (its cpu and memory sums). Changed in place by evictions
        # unless a snapshot holds it (`_kept`): then copied first.
        self.mig = None if mig is None or mig.empty else mig.copy(self.state)
        self._kept = False
        self.placed = placed
        self.policy = (cluster.policy.node, cluster.policy.card)
        self.order = {p.name: i for i, p in enumerate(cluster.pods)}  # creation order
        self._on: dict[int, list[Pod]] = {}
        for pod in cluster.running:
            if pod.placement is not None and pod.placement.node in state.node_index:
                self._on.setdefault(state.node_index[pod.placement.node], []).append(pod)
        self.evicted: set[str] = set()
        self.pipelined: set[str] = set()  # Volcano: the preemptors pipelined so far
        profiles = {m.profile for n in cluster.nodes for c in n.mig_cards() for m in c.mig or ()}
        profiles.update(p.request.mig_profile for p in cluster.pods if p.request.mig_profile)
        self.mig_columns = {p: DIMENSIONS + k for k, p in enumerate(sorted(profiles))}
        self.dimensions = DIMENSIONS + len(profiles)
        # Volcano: what pipelined preemptors hold of a node's sums without holding cards.
        self.reserved = np.zeros((len(state.node_names), self.dimensions), dtype=np.float64)
        # Per node and MIG profile: the allocatable instances less what its pods ask.
        self.mig_left = self._mig_left()
        # Whether a vGPU count is a node resource (Volcano vGPU's volcano.sh/vgpu-number),
        # and whether the spec's memory and core are one card's (else the pod's totals).
        dialect = state.profile.dialect
        self.counts_vgpus = dialect is not None and dialect.count is not None
        self.per_card = dialect is None or dialect.per_card
        self.device = _device_allocatable(cluster, state)
        self.total = np.zeros(self.dimensions, dtype=np.float64)
        self.total[:DIMENSIONS] = total(state, self.device)
        for node in cluster.nodes:
            for profile, count in node.mig_allocatable().items():
                self.total[self.mig_columns[profile]] += count

    def _mig_left(self) -> FloatArray:
        """Per node and MIG profile: its allocatable less the instances its pods ask, a pod
        holding one on an unhealthy card included: `mig_holders`' free count."""
        out = np.zeros((len(self.state.node_names), len(self.mig_columns)), dtype=np.float64)
        for k, profile in enumerate(self.mig_columns):
            out[:, k] = [holders[None] for holders in self.mig_holders(profile)]
        return out

    def snapshot(self) -> Saved:
        """A checkpoint (Volcano's statement: discarded when its job ends not pipelined)."""
        self._kept = True
        return Saved(
            self.state.copy(), frozenset(self.evicted), frozenset(self.pipelined),
            self.reserved.copy(), self.mig, self.mig_left.copy(),
        )  # fmt: skip

    def restore(self, saved: Saved) -> None:
        self.state, self.mig = saved.state, saved.mig
        self.reserved, self.mig_left = saved.reserved.copy(), saved.mig_left.copy()
        if self.mig is not None:
            self.mig.state = self.state  # the sums it was kept over, copied by `snapshot`
        self._kept = True  # the snapshot may be restored again
        self.evicted, self.pipelined = set(saved.evicted), set(saved.pipelined)

    def allocated(self, pods: Iterable[Pod]) -> FloatArray:
        """What `pods` hold now, summed (drf's allocated of their job)."""
        out = np.zeros(self.dimensions, dtype=np.float64)
        for pod in pods:
            if self.holds(pod):
                out += self.request(pod)
        return out

    def holds(self, pod: Pod) -> bool:
        """Whether the pod holds its request now: running and not evicted, placed by the
        cycle, or pipelined (the tasks drf's allocated counts, event by event)."""
        if pod.name in self.evicted:
            return False
        return pod.running or pod.name in self.placed or pod.name in self.pipelined

    @property
    def node_names(self) -> list[str]:
        return self.state.node_names

    def residents(self, node: int) -> list[Pod]:
        """The pods running on `node` before the cycle and not evicted since: the only
        possible victims (pods the cycle placed rank no lower than the pod that preempts,
        and the node's pods without GPUs carry no priority the advisor knows)."""
        return [p for p in self._on.get(node, []) if p.name not in self.evicted]

    def _evict(self, victims: Iterable[Pod]) -> tuple[CardState, MigBook | None]:
        """A copy of the state with `victims` gone, and the MIG instances over it (the
        board's own, changed, unless a snapshot holds them: a copy), for `settle` and
        `nominate` to take."""
        st = self.state.copy()
        book = self.mig
        if book is not None:
            book = book.copy(st) if self._kept else book
            book.state = st
            self._kept = False
        for victim in victims:
            if victim.placement is None:
                continue
            if victim.request.mig_profile:  # its instances and node sums, no vGPU card
                self._mig_take(st.node_index[victim.placement.node], victim, -1)
                if book is not None:
                    book.release(victim, victim.placement)
                else:
                    st.add_requested(
                        st.node_index[victim.placement.node], Shape.of_pod(victim).demand, -1
                    )
            else:
                st.release(st.positions(victim.placement), Shape.of_pod(victim))
        return st, book

    def _mig_take(self, node: int, pod: Pod, sign: int = 1) -> None:
        """The MIG pod's instances asked on `node` (-1: given back) in the node's sums."""
        self.mig_left[node, self.mig_columns[pod.request.mig_profile] - DIMENSIONS] -= (
            sign * pod.request.gpus
        )

    def _mig_fit(self, book: MigBook | None, pod: Pod, node: int) -> bool:
        """Whether the MIG pod fits `node` of `book`'s instances, holding them if so (its
        cpu and memory too); either way its instances count in the node's sums."""
        free = [] if book is None else book.free(pod.request.mig_profile)[node]
        helps = book is not None and len(free) >= pod.request.gpus
        if helps and book is not None:
            held = tuple((i.card, i.start) for i in free[: pod.request.gpus])
            book.hold(pod, self.state.node_names[node], held)
        self._mig_take(node, pod)
        return helps

    def mig_holders(self, profile: str) -> list[Counter[str | None]]:
        """Per node, its instances of `profile` (on healthy cards its device plugin
        advertises: the node's allocatable of the resource) by holder, None free; a pod
        holding one on an unhealthy card counts too, as one fewer free (its request
        counts against the allocatable: `MigBook.free`)."""
        if self.mig is None:
            return [Counter() for _ in self.state.node_names]
        out = []
        for found, lost in zip(
            self.mig.offered(profile), self.mig.held_unhealthy(profile), strict=True
        ):
            holders = Counter(i.holder for i in found)
            for holder in lost:
                holders[holder] += 1
                holders[None] -= 1  # may go below zero: the node is over-committed
            out.append(holders)
        return out

    def freed(self, victims: Iterable[Pod]) -> tuple[int, int, int]:
        """(pod slots, cpu, memory) the victims free on their node (NodeResourcesFit's)."""
        total = [0, 0, 0]
        for victim in victims:
            for j, value in enumerate(Shape.of_pod(victim).demand):
                total[j] += value
        return (total[0], total[1], total[2])

    def settle(self, pod: Pod, node: int, victims: Sequence[Pod]) -> bool:
        """Volcano: evict `victims` and count `pod` on `node` from now on; whether it fits its
        cards there once they are gone (`helps`). A pod that does not fit still holds the
        node's sums (the statement pipelined it)."""
        st, self.mig = self._evict(victims)
        shape = Shape.of_pod(pod)
        if pod.request.mig_profile:
            helps = self._mig_fit(self.mig, pod, node)
            if not helps:  # its cpu, memory and pod slot; the instances are `mig_left`'s
                self.reserved[node, :DIMENSIONS] += self.request(pod)[:DIMENSIONS]
        else:
            verdicts = st.verdicts(shape)
            helps = bool(np.isin(node, verdicts.nodes))
            if helps:
                nodes = np.array([node], dtype=np.int64)
                positions = pick(st.profile, st, nodes, shape, verdicts.eligible, self.policy)
                st.apply(positions, shape)
            else:
                self.reserved[node] += self.request(pod)
        self.state = st
        self.evicted.update(v.name for v in victims)
        self.pipelined.add(pod.name)
        return helps

    def nominate(self, pod: Pod, node: int, victims: Sequence[Pod]) -> bool:
        """kube-scheduler: evict `victims` and nominate `pod` on `node`, where from now on the
        in-tree filters count its cpu, memory and pod slot (not its cards; a MIG pod's
        instances too: an extended resource they count); whether it fits its cards (a MIG
        pod: free instances of its profile) once the victims are gone (`helps`)."""
        st, book = self._evict(victims)
        shape = Shape.of_pod(pod)
        if pod.request.mig_profile:
            helps = self._mig_fit(book, pod, node)
            if not helps:
                st.add_requested(node, shape.demand)
        else:
            helps = bool(np.isin(node, st.verdicts(shape).nodes))
            st.add_requested(node, shape.demand)
        self.state, self.mig = st, book
        self.evicted.update(v.name for v in victims)
        return helps

    # -- Volcano's node sums ----------------------------------------------------------

    def request(self, pod: Pod) -> FloatArray:
        """The pod's InitResreq in the sum's dimensions, as its spec writes it (api
        NewResource over the container's requests): the vGPU count, the memory and core
        of one card where the dialect writes them per card (volcano.sh/vgpu-memory,
        vgpu-cores), else the pod's totals (CCE); no memory for a whole card or a share of
        one (no node-level quantity); a MIG pod's its instances in its profile's column,
        none of the vGPU dimensions."""
        shape = Shape.of_pod(pod)
        out = np.zeros(self.dimensions, dtype=np.float64)
        out[CPU], out[MEMORY] = shape.resources.cpu_milli, shape.resources.memory_bytes
        out[PODS] = 1
        if pod.request.mig_profile:  # its instances are no vGPU memory, core or count
            out[self.mig_columns[pod.request.mig_profile]] = pod.request.gpus
            return out
        per = 1 if self.per_card else shape.gpus
        if shape.memory_percent == 0:
            out[GPU_MEMORY] = shape.card_memory_mib * per
        out[GPU_CORE] = self.state.profile.card_core(shape) * per
        if self.counts_vgpus:
            out[VGPUS] = shape.gpus
        return out

    def held(self, pod: Pod) -> FloatArray:
        """What a running pod frees when evicted: its Resreq, the same spec figures."""
        return self.request(pod)

    def idle(self, node: int) -> FloatArray:
        """The node's FutureIdle: allocatable less what its pods and pipelined pods ask.
        The vGPU allocatable is the device plugin's (`device_allocatable`: Volcano vGPU's
        slots and cores of the healthy cards, memory of every card), less each pod's spec
        figures, whatever the cards hold: looser than the cards where a pod takes a whole
        card, or several cards of one per-card figure."""
        st = self.state
        out = np.zeros(self.dimensions, dtype=np.float64)
        pods, cpu, memory = st.free_resources(node)
        out[PODS] = np.inf if pods is None else pods
        out[CPU] = np.inf if cpu is None else cpu
        out[MEMORY] = np.inf if memory is None else memory
        out[[GPU_MEMORY, GPU_CORE, VGPUS]] = self._device_idle(np.array([node]))[0]
        out[DIMENSIONS:] = self.mig_left[node]
        return np.asarray(out - self.reserved[node], dtype=np.float64)

    def idle_at(self, nodes: IntArray) -> FloatArray:
        """`idle` of each of `nodes`, a row each, in one pass (allocate's fit error is read
        on every node a task's filters refuse)."""
        st = self.state
        out = np.zeros((nodes.size, self.dimensions), dtype=np.float64)
        allocatable = st.allocatable[nodes]
        left = (allocatable - st.requested[nodes]).astype(np.float64)
        left[allocatable >= UNLIMITED] = np.inf
        for row, node in enumerate(nodes.tolist()):
            if node in st.excess:  # rare: sums past REQUESTED_MAX, exactly
                free = st.free_resources(node)
                left[row] = [np.inf if f is None else f for f in free]
        out[:, [PODS, CPU, MEMORY]] = left
        out[:, [GPU_MEMORY, GPU_CORE, VGPUS]] = self._device_idle(nodes)
        out[:, DIMENSIONS:] = self.mig_left[nodes]
        return np.asarray(out - self.reserved[nodes], dtype=np.float64)

    def _device_idle(self, nodes: IntArray) -> FloatArray:
        """(memory, core, vGPUs) of the device plugin's allocatable left on `nodes`."""
        st = self.state
        if self.per_card:
            memory, core = st.node_memory_asked[nodes], st.node_core_asked[nodes]
        else:  # totals: what the cards give each pod, summed
            memory, core = st.node_used[nodes, 2], st.node_used[nodes, 1]
        asked = np.stack([memory, core, st.node_used[nodes, 0]], axis=1)
        return np.asarray(self.device[nodes] - asked, dtype=np.float64)


def total(state: CardState, device: FloatArray) -> FloatArray:
    """The cluster's allocatable in the sum's dimensions (the session's TotalResource:
    every node's, summed); unlimited: inf."""
    out = np.zeros(DIMENSIONS, dtype=np.float64)
    for column, dim in ((0, PODS), (1, CPU), (2, MEMORY)):
        values = state.allocatable[:, column]
        out[dim] = np.inf if (values >= UNLIMITED).any() else float(values.sum())
    out[[GPU_MEMORY, GPU_CORE, VGPUS]] = device.sum(axis=0)
    return out


def _device_allocatable(cluster: Cluster, state: CardState) -> FloatArray:
    """Per node, what its device plugin advertises (profile `device_allocatable`), as
    (memory MiB, core %, vGPUs)."""
    out = np.zeros((len(state.node_names), 3), dtype=np.float64)
    dialect = state.profile.dialect
    if dialect is None:
        return out
    for node in cluster.nodes:
        i = state.node_index.get(node.name)
        if i is None:
            continue
        # a card in MIG mode is no vGPU device (design §13): its instances are the MIG book's
        found = state.profile.device_allocatable(node.vgpu_cards(), cluster.max_vgpus_per_card)
        out[i] = (
            found.get(dialect.memory or "", 0) * dialect.memory_unit_mib,
            found.get(dialect.core or "", 0),
            found.get(dialect.count or "", 0),
        )
    return out


def covers(request: FloatArray, room: FloatArray) -> bool:
    """api.Resource.LessEqual(room, api.Zero): cpu and memory always (a node its pods
    overcommit takes nothing, not even a pod that asks none), every other dimension the
    request asks."""
    asked = _asked(request)
    return bool((request[asked] <= room[asked]).all())


def covers_at(request: FloatArray, rooms: FloatArray) -> BoolArray:
    """`covers` for each row of `rooms`."""
    asked = _asked(request)
    return np.asarray((request[asked] <= rooms[:, asked]).all(axis=1), dtype=np.bool_)


def _asked(request: FloatArray) -> BoolArray:
    asked: BoolArray = request > 0
    asked[[CPU, MEMORY]] = True
    return asked


def started_key(pod: Pod) -> float:
    """The pod's start time as a sortable number; a pod without one counts as started now,
    after every pod that has one (k8s pkg/scheduler/util GetPodStartTime)."""
    text = (pod.started or "").strip()
    try:
        when = datetime.fromisoformat(text.replace("z", "Z"))
    except ValueError:
        return np.inf
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()
