"""The cluster as one session's evictions leave it: the cycle's final state, copied (under
kube-scheduler rewound to each pod's turn: `kube.judge_kube`), minus the victims chosen so
far, plus the preemptors they made room for.

Evictions accumulate: kube-scheduler nominates each preemptor on its node and counts it there
for every later pod (RunFilterPluginsWithNominatedPods), and marks its victims terminating,
so no later pod picks them again; Volcano's statement evicts (Releasing, no longer a victim:
api.PreemptableStatus) and pipelines the preemptor on the node (its FutureIdle shrinks).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt

from advisor.core.model import Cluster, Pod
from advisor.core.state import CardState, Shape

# Volcano's node sum (api.Resource as util.ValidateVictims compares it): cpu millicores,
# memory bytes, GPU memory MiB, GPU core percent, vGPUs.
CPU, MEMORY, GPU_MEMORY, GPU_CORE, VGPUS = range(5)
DIMENSIONS = 5
FloatArray = npt.NDArray[np.float64]


class Board:
    """Private to one `judge` call, like the cycle's CardState it starts from."""

    def __init__(self, cluster: Cluster, state: CardState) -> None:
        self.state = state.copy()
        self.policy = (cluster.policy.node, cluster.policy.card)
        self.order = {p.name: i for i, p in enumerate(cluster.pods)}  # creation order
        self._on: dict[int, list[Pod]] = {}
        for pod in cluster.running:
            if pod.placement is not None and pod.placement.node in state.node_index:
                self._on.setdefault(state.node_index[pod.placement.node], []).append(pod)
        self.evicted: set[str] = set()
        # Volcano: what pipelined preemptors hold of a node's sums without holding cards.
        self.reserved = np.zeros((len(state.node_names), DIMENSIONS), dtype=np.float64)
        # Whether a vGPU count is a node resource (Volcano vGPU's volcano.sh/vgpu-number).
        dialect = state.profile.dialect
        self.counts_vgpus = dialect is not None and dialect.count is not None

    def snapshot(self) -> tuple[CardState, frozenset[str], FloatArray]:
        """A checkpoint (Volcano's statement: discarded when its job ends not pipelined)."""
        return (self.state.copy(), frozenset(self.evicted), self.reserved.copy())

    def restore(self, saved: tuple[CardState, frozenset[str], FloatArray]) -> None:
        self.state, self.evicted, self.reserved = saved[0], set(saved[1]), saved[2]

    @property
    def node_names(self) -> list[str]:
        return self.state.node_names

    def residents(self, node: int) -> list[Pod]:
        """The pods running on `node` before the cycle and not evicted since: the only
        possible victims (pods the cycle placed rank no lower than the pod that preempts,
        and the node's pods without GPUs carry no priority the advisor knows)."""
        return [p for p in self._on.get(node, []) if p.name not in self.evicted]

    def without(self, victims: Iterable[Pod]) -> CardState:
        """A copy of the state with `victims` gone."""
        st = self.state.copy()
        for victim in victims:
            if victim.placement is not None:
                st.release(st.positions(victim.placement), Shape.of_pod(victim))
        return st

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
        st = self.without(victims)
        shape = Shape.of_pod(pod)
        verdicts = st.verdicts(shape)
        helps = bool(np.isin(node, verdicts.nodes))
        if helps:
            nodes = np.array([node], dtype=np.int64)
            positions = st.profile.pick(st, nodes, shape, verdicts.eligible, self.policy)
            st.apply(positions, shape)
        else:
            self.reserved[node] += self.request(pod)
        self.state = st
        self.evicted.update(v.name for v in victims)
        return helps

    def nominate(self, pod: Pod, node: int, victims: Sequence[Pod]) -> bool:
        """kube-scheduler: evict `victims` and nominate `pod` on `node`, where from now on the
        in-tree filters count its cpu, memory and pod slot (not its cards); whether it fits
        its cards once the victims are gone (`helps`)."""
        st = self.without(victims)
        shape = Shape.of_pod(pod)
        helps = bool(np.isin(node, st.verdicts(shape).nodes))
        st.add_requested(node, shape.demand)
        self.state = st
        self.evicted.update(v.name for v in victims)
        return helps

    # -- Volcano's node sums ----------------------------------------------------------

    def request(self, pod: Pod) -> FloatArray:
        """The pod's InitResreq in the sum's dimensions: GPU memory and core only where it
        asks absolute figures (a whole card or a share of one is no node-level quantity)."""
        shape = Shape.of_pod(pod)
        out = np.zeros(DIMENSIONS, dtype=np.float64)
        out[CPU], out[MEMORY] = shape.resources.cpu_milli, shape.resources.memory_bytes
        if shape.card_memory_mib > 0 and shape.memory_percent == 0:
            out[GPU_MEMORY] = shape.gpus * shape.card_memory_mib
        out[GPU_CORE] = shape.gpus * self.state.profile.card_core(shape)
        if self.counts_vgpus:
            out[VGPUS] = shape.gpus
        return out

    def held(self, pod: Pod) -> FloatArray:
        """What a running pod frees when evicted (its Resreq), in the sum's dimensions."""
        out = self.request(pod)
        if pod.placement is not None:
            shape = Shape.of_pod(pod)
            positions = np.array(self.state.positions(pod.placement), dtype=np.int64)
            out[GPU_MEMORY] = float(self.state.card_need(shape, positions).sum())
            out[VGPUS] = len(positions) if self.counts_vgpus else 0
        return out

    def idle(self, node: int) -> FloatArray:
        """The node's FutureIdle: allocatable less what its pods and pipelined pods take."""
        st = self.state
        out = np.zeros(DIMENSIONS, dtype=np.float64)
        _, cpu, memory = st.free_resources(node)
        out[CPU] = np.inf if cpu is None else cpu
        out[MEMORY] = np.inf if memory is None else memory
        at = np.array(list(st.node_positions(node)), dtype=np.int64)
        counted = at[st.counted[at]]
        out[GPU_MEMORY] = float(st.free_memory[counted].sum())
        out[GPU_CORE] = float(st.free_core[counted].sum())
        out[VGPUS] = float((st.slots[counted] - st.vgpus[counted]).sum())
        return np.asarray(out - self.reserved[node], dtype=np.float64)


def covers(request: FloatArray, room: FloatArray) -> bool:
    """api.Resource.LessEqual(room, api.Zero): every dimension the request asks fits."""
    asked = request > 0
    return bool((request[asked] <= room[asked]).all())


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
