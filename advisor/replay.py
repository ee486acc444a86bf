"""Trace replay of the Alibaba openb GPU-sharing trace onto the model (docs/design.md §7).

`--resources gpu` (the default) models GPUs only, as the trace replay always has. With
`--resources all` the trace's node and pod cpu_milli and memory_mib count too, as
kube-scheduler's NodeResourcesFit would count them (docs/design.md §9.1): a node's
cpu and memory become its allocatable, a pod's its request.

With `all`, the trace's CPU-only pods are replayed as well. On a real cluster such a pod
takes a GPU node's cpu and memory like any other pod, and the openb node list holds GPU
nodes only, so leaving them out would overstate the room the GPU pods have. They arrive in
trace order among the GPU pods and, like them, never leave. kube-scheduler places them by
its default resource scores (below), since no GPU scheduler scores a pod that asks no GPU;
one that fits no node stays Pending and is counted apart from the GPU pods' causes.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from advisor.core.diagnose import Cycle, diagnose
from advisor.core.diagnosis import CAUSES, Diagnosis, PodDiagnosis
from advisor.core.mig_cycle import MigBook
from advisor.core.model import (
    CCE,
    Card,
    Cluster,
    Mode,
    Node,
    OtherPod,
    Pod,
    Policy,
    Request,
    Scheduler,
    queue_order,
)
from advisor.core.nodefilters import NO_RESOURCES, Allocatable, Resources
from advisor.core.occupancy import build_state
from advisor.core.profiles import profile_for
from advisor.core.state import UNLIMITED, CardState, IntArray, Shape
from advisor.core.verdicts import CPU, MEMORY
from advisor.defaults import ResourceMode
from advisor.scenario.profile import default_max_vgpus
from advisor.schemas import REPLAY_SCHEMA, CpuOnlyPodsJson, NodeAllocationJson, ReplayJson
from advisor.trace_rows import TraceError as TraceError  # where the CLI catches it
from advisor.trace_rows import TraceRows, once, read_int, read_name, read_trace_rows
from advisor.words import plural

CARD_UNITS = 1000  # gpu_milli of a whole card
CARD_MIB = CARD_UNITS * 128
MIB = 2**20


# kube-scheduler's default profile scores a pod's node by NodeResourcesFit (LeastAllocated)
# plus NodeResourcesBalancedAllocation, cpu and memory weighted 1 each, 0..100 each
# (pkg/scheduler/framework/plugins/noderesources).
MAX_NODE_SCORE = 100


@dataclass(frozen=True, slots=True)
class CpuPod:
    """A trace pod that asks for no GPU, replayed with `--resources all` only."""

    pod: OtherPod
    after: int  # GPU pods that arrive before it (in the cluster's queue order)


@dataclass(frozen=True, slots=True)
class Trace:
    cluster: Cluster  # every GPU pod Pending, in arrival order
    resources: ResourceMode = "gpu"
    cpu_pods: tuple[CpuPod, ...] = ()  # in arrival order


@dataclass(frozen=True, slots=True)
class Replay:
    cluster: Cluster  # the trace as a cluster with every GPU pod Pending, in arrival order
    diagnosis: Diagnosis
    resources: ResourceMode = "gpu"
    cpu_pods: tuple[CpuPod, ...] = ()
    cpu_nodes: tuple[str | None, ...] = ()  # where each of cpu_pods landed; None: Pending

    def end_state(self) -> Cluster:
        """Placed pods running where they landed, the rest Pending in queue order; with
        `all`, each node lists the CPU-only pods placed on it as its other pods."""
        placed = {d.pod.name: d.placement for d in self.diagnosis.pods if d.placement}
        running = tuple(
            Pod(
                p.name,
                p.request,
                placed[p.name],
                resources=p.resources,
                constraints=p.constraints,
            )
            for p in self.cluster.pods
            if p.name in placed
        )
        pending = tuple(d.pod for d in self.diagnosis.pods if d.placement is None)
        nodes = self.cluster.nodes
        if self.resources == "all":
            others: dict[str, list[OtherPod]] = {n.name: [] for n in nodes}
            for cpu_pod, node in zip(self.cpu_pods, self.cpu_nodes, strict=True):
                if node is not None:
                    others[node].append(cpu_pod.pod)
            nodes = tuple(replace(n, other_pods=tuple(others[n.name])) for n in nodes)
        return replace(self.cluster, nodes=nodes, pods=running + pending)

    def figures(self) -> ReplayJson:
        capacity = sum(len(n.cards) for n in self.cluster.nodes)
        demand = sum(_units(p) for p in self.cluster.pods)
        placed = sum(_units(d.pod) for d in self.diagnosis.pods if d.placement)
        failed = Counter(d.cause for d in self.diagnosis.pods if d.placement is None)
        figures: ReplayJson = {
            "schema": REPLAY_SCHEMA,
            "resources": self.resources,
            "scheduler": {"profile": self.cluster.scheduler.profile},
            "policy": {"node": self.cluster.policy.node, "card": self.cluster.policy.card},
            "pods": len(self.cluster.pods),
            "capacity_gpus": capacity,
            "demand_gpus": demand / CARD_UNITS,
            "placed_gpus": placed / CARD_UNITS,
            "allocation_ratio": round(placed / CARD_UNITS / capacity, 6) if capacity else 0.0,
            "failed": {c: failed[c] for c in CAUSES if c != "schedulable" and failed[c]},
        }
        if self.resources == "all":
            figures["cpu_only_pods"], figures["node_allocation"] = self._node_figures()
        return figures

    def _node_figures(self) -> tuple[CpuOnlyPodsJson, NodeAllocationJson]:
        """CPU-only pods placed, and the share of the nodes' cpu and memory requested."""
        placed_cpu_pods = [c.pod for c, n in zip(self.cpu_pods, self.cpu_nodes, strict=True) if n]
        requested = [p.resources for p in placed_cpu_pods]
        requested += [d.pod.resources for d in self.diagnosis.pods if d.placement]
        known = [n.allocatable for n in self.cluster.nodes]
        cpu = sum(a.cpu_milli or 0 for a in known)
        memory = sum(a.memory_bytes or 0 for a in known)
        placed = len(placed_cpu_pods)
        pods: CpuOnlyPodsJson = {
            "replayed": len(self.cpu_pods),
            "placed": placed,
            "pending": len(self.cpu_pods) - placed,
        }
        share: NodeAllocationJson = {
            "cpu": round(sum(r.cpu_milli for r in requested) / cpu, 6) if cpu else 0.0,
            "memory": round(sum(r.memory_bytes for r in requested) / memory, 6) if memory else 0.0,
        }
        return pods, share


def _units(pod: Pod) -> int:
    """The pod's GPU share in the trace's gpu_milli units, whichever way its request says it."""
    if pod.request.memory_percent:
        return pod.request.gpus * pod.request.memory_percent * 10
    return pod.request.memory_mib // 128


# -- reading the trace -------------------------------------------------------------------


def _resources(path: Path, line: int, row: dict[str, str]) -> Resources:
    cpu = read_int(path, line, row, "cpu_milli")
    return Resources(cpu, read_int(path, line, row, "memory_mib") * MIB)


def read_trace(
    nodes_csv: Path,
    pods_csv: Path,
    policy: Policy,
    resources: ResourceMode = "gpu",
    scheduler: Scheduler = CCE,
) -> Trace:
    """The trace as a cluster of GPU nodes with every GPU pod Pending in arrival order (and,
    with `all`, node allocatable, pod requests and the CPU-only pods). Outside CCE a pod's
    gpu_milli is read as the share of each card it asks (`memory_percent`), as HAMi's and
    Volcano's percentage requests say it; on the trace's 1000-unit cards both readings give
    the same MiB."""
    rows = read_trace_rows(nodes_csv, pods_csv, resources == "all")
    return trace_from_rows(rows, policy, resources, scheduler)


def trace_from_rows(
    rows: TraceRows,
    policy: Policy,
    resources: ResourceMode = "gpu",
    scheduler: Scheduler = CCE,
) -> Trace:
    """`read_trace` of the files' rows, read already (`trace_rows.read_trace_rows`: `replay`
    reads its input before it loads the model)."""
    every, pods_csv = resources == "all", rows.pods_csv
    nodes = []
    for n in rows.nodes:
        node = Node(n.name, tuple(Card(i, CARD_MIB, n.model) for i in range(n.gpus)))
        if n.cpu_milli is not None and n.memory_mib is not None:
            node = replace(node, allocatable=Allocatable(n.cpu_milli, n.memory_mib * MIB))
        nodes.append(node)
    arrivals: list[tuple[int, int, Pod | OtherPod]] = []
    seen: dict[str, int] = {}
    for order, (line, row) in enumerate(rows.pods):
        name = f"openb/{read_name(pods_csv, line, row, 'name')}"
        once(pods_csv, line, "pod", name.removeprefix("openb/"), seen)
        gpus = read_int(pods_csv, line, row, "num_gpu")
        if gpus == 0 and not every:
            continue  # CPU-only pods are not GPU demand, and `gpu` sees no cpu
        asks = _resources(pods_csv, line, row) if every else NO_RESOURCES
        pod: Pod | OtherPod = OtherPod(name, resources=asks)
        if gpus:
            milli = read_int(pods_csv, line, row, "gpu_milli")
            if milli == 0:
                raise TraceError(
                    f"{pods_csv}: line {line}: gpu_milli 0 for a pod of {plural(gpus, 'GPU')}"
                )
            request = Request(gpus=gpus, memory_mib=gpus * milli * 128)
            if not profile_for(scheduler.profile).requires_memory:
                if milli % 10 or not 0 < milli <= 1000:
                    raise TraceError(
                        f"{pods_csv}: line {line}: gpu_milli {milli} is not a whole percent "
                        f"of a card, as {scheduler.profile} asks"
                    )
                request = Request(gpus=gpus, memory_mib=0, memory_percent=milli // 10)
            pod = Pod(name, request, resources=asks)
        created = read_int(pods_csv, line, row, "creation_time", default=0)
        arrivals.append((created, order, pod))
    arrivals.sort(key=lambda a: (a[0], a[1]))
    gpu_pods: list[Pod] = []
    cpu_pods: list[CpuPod] = []
    for _, _, pod in arrivals:
        if isinstance(pod, Pod):
            gpu_pods.append(pod)
        else:
            cpu_pods.append(CpuPod(pod, len(gpu_pods)))
    limit = default_max_vgpus(scheduler)
    cluster = Cluster(tuple(nodes), tuple(gpu_pods), policy, limit, scheduler)
    return Trace(cluster, resources, tuple(cpu_pods))


def load_trace(
    nodes_csv: Path,
    pods_csv: Path,
    policy: Policy,
    resources: ResourceMode = "gpu",
    scheduler: Scheduler = CCE,
) -> Cluster:
    """The GPU part of `read_trace` (no CPU-only pods)."""
    return read_trace(nodes_csv, pods_csv, policy, resources, scheduler).cluster


# -- replaying it ------------------------------------------------------------------------


def replay(source: Cluster | Trace) -> Replay:
    """Every pod arrives in order and never leaves; misfits are diagnosed at arrival."""
    trace = source if isinstance(source, Trace) else Trace(source)
    cluster = trace.cluster
    if not trace.cpu_pods:
        return Replay(cluster, diagnose(cluster, node_detail_limit=0), trace.resources)
    # diagnose()'s cycle, with the CPU-only pods bound between the GPU pods they arrive
    # among (queue order is arrival order in a trace: every pod has priority 0).
    state = build_state(cluster)
    cycle = Cycle(state, cluster.policy, 0, MigBook(cluster, state))
    cpu_nodes: list[str | None] = []
    verdicts: list[PodDiagnosis] = []
    pending = iter(trace.cpu_pods)
    following = next(pending, None)
    for count, pod in enumerate((*queue_order(cluster.pending), None)):
        while following is not None and (following.after <= count or pod is None):
            node = _bind_cpu_pod(state, following.pod.resources)
            if node is not None:
                cycle.changed(state.node_index[node])
            cpu_nodes.append(node)
            following = next(pending, None)
        if pod is not None:
            verdicts.append(cycle.visit(pod))
    diagnosis = Diagnosis(cluster.policy, tuple(verdicts))
    return Replay(cluster, diagnosis, trace.resources, trace.cpu_pods, tuple(cpu_nodes))


def _bind_cpu_pod(state: CardState, resources: Resources) -> str | None:
    """Bind a pod that asks no GPU where kube-scheduler would: among the nodes passing
    every filter, the best by its default resource scores; ties to the name that sorts
    first (kube-scheduler picks one of the tied at random). None: it fits nowhere."""
    shape = Shape(
        gpus=0, card_memory_mib=0, card_core=0, mode=int(Mode.MEMORY), resources=resources
    )
    fits = np.flatnonzero(state.node_ok(shape))
    if fits.size == 0:
        return None
    score = resource_scores(state.allocatable[fits], state.requested[fits], resources)
    best = int(fits[np.lexsort((state.name_rank[fits], -score))[0]])
    state.add_requested(int(best), shape.demand)
    return state.node_names[best]


def resource_scores(allocatable: IntArray, requested: IntArray, pod: Resources) -> IntArray:
    """kube-scheduler's default resource score of each node for a pod: LeastAllocated plus
    BalancedAllocation. Rows of (pods, cpu, memory) allocatable and requested, the pod not
    yet counted. An allocatable not known scores as a capacity of 0 does there."""
    capacity = np.where(allocatable >= UNLIMITED, 0, allocatable)[:, [CPU, MEMORY]]
    asked = requested[:, [CPU, MEMORY]] + np.array(
        [pod.cpu_milli, pod.memory_bytes], dtype=np.int64
    )
    score = least_allocated(capacity, asked)
    if pod.cpu_milli or pod.memory_bytes:  # BalancedAllocation skips a best-effort pod
        score += balanced_allocation(capacity, asked)
    return score


def least_allocated(capacity: IntArray, asked: IntArray) -> IntArray:
    """NodeResourcesFit's LeastAllocated score (cpu and memory columns, weights 1, the pod
    counted in `asked`): noderesources/least_allocated.go `leastRequestedScore`, in
    integers as there. (The trace states every request, so no default request applies.)"""
    free = np.where(
        (capacity == 0) | (asked > capacity),
        0,
        (capacity - asked) * MAX_NODE_SCORE // np.maximum(capacity, 1),
    )
    return np.asarray(free.sum(axis=1) // free.shape[1], dtype=np.int64)


def balanced_allocation(capacity: IntArray, asked: IntArray) -> IntArray:
    """NodeResourcesBalancedAllocation for cpu and memory: (1 - |f_cpu - f_mem| / 2) * 100,
    each fraction capped at 1, truncated as Go's int64() does; a resource of capacity 0 is
    left out, and one fraction alone scores 100 (balanced_allocation.go
    `balancedResourceScorer`)."""
    fraction = np.minimum(asked / np.maximum(capacity, 1), 1.0)
    both = (capacity > 0).all(axis=1)
    spread = np.where(both, np.abs(fraction[:, 0] - fraction[:, 1]) / 2, 0.0)
    return np.asarray(((1 - spread) * MAX_NODE_SCORE).astype(np.int64), dtype=np.int64)
