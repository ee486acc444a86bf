"""Two hours of history, as OpenMetrics with timestamps, for promtool to backfill.

Every series the dashboards read, as the exporter publishes it (docs/design.md §6) plus the
`node`, `job` and `instance` labels the scrape adds and the `cluster` label a shared store
adds, for two nodes in two clusters (prod-a, prod-b):

- gpu-node-a, 4 x A100 40 GiB: cards 0 and 1 memory+core (infer/llm-0 on both, ml/notebook-0
  on card 0), card 2 memory only (infer/embed-0, kube-system/gpu-probe, some memory no vGPU
  owns), card 3 unused and unhealthy from minute 60 to 80 (NVML errors meanwhile);
- gpu-node-b, 2 x T4 16 GiB, memory only: research/sim-0, research/sim-1 (wasteful: uses
  about an eighth), and batch/etl-3 from minute 40 on; its Kubernetes collector fails from
  minute 20 to 30; and an A100 40 GiB in MIG mode (card 2): a 3g.20gb at slice 0 in use, an
  idle 1g.5gb at slice 4, slices 5-7 uncut (as the simulated exporter serves one).

The advisor runs every 5 minutes in prod-a (one skipped stretch, minutes 90-105), as a
Pushgateway would hand its series over; one autoscaler, short of its max every other run.
The recording rules' series are not here: conftest.py has promtool compute them from this
history. Sorted first, cluster prod-a /
node a / GPU 0 / namespace infer / pod llm-0 is a memory+core vGPU, so a dashboard on its
first options shows every panel.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from advisor import metricnames
from advisor.core.diagnosis import CAUSES
from advisor.core.waiting import LATENCY_BUCKETS

GIB = 1 << 30
MIB = 1 << 20
STEP = 15.0
HOURS = 2.0
ADVISOR_PERIOD = 300.0


@dataclass(frozen=True)
class MigInstance:
    gpu_instance_id: int
    profile: str
    start: int
    memory_mib: int  # advisor.core.mig's table
    use: float  # mean share of its memory in use; 0: idle
    holder: tuple[str, str, str] | None = None  # (namespace, pod, container) of its processes


@dataclass(frozen=True)
class Card:
    index: int
    memory_gib: int
    model: str
    mig: tuple[MigInstance, ...] | None = None  # None: MIG off


@dataclass(frozen=True)
class VGpu:
    namespace: str
    pod: str
    card: int
    memory_gib: float
    core: int  # percent of the card; 0 on memory-only cards
    use: float  # mean share of the allotment in use
    from_minute: float = 0.0

    @property
    def container(self) -> str:
        return self.pod.rsplit("-", 1)[0]


NODES: dict[str, tuple[Card, ...]] = {
    "gpu-node-a": tuple(Card(i, 40, "A100-PCIE-40GB") for i in range(4)),
    "gpu-node-b": (
        *(Card(i, 16, "Tesla T4") for i in range(2)),
        Card(
            2,
            40,
            "NVIDIA A100-SXM4-40GB",
            (
                MigInstance(1, "3g.20gb", 0, 19968, 0.6, ("ml", "tune-0", "worker")),
                MigInstance(2, "1g.5gb", 4, 4864, 0.0),
            ),
        ),
    ),
}
VGPUS: dict[str, tuple[VGpu, ...]] = {
    "gpu-node-a": (
        VGpu("infer", "llm-0", 0, 20, 60, 0.8),
        VGpu("infer", "llm-0", 1, 20, 60, 0.75),
        VGpu("ml", "notebook-0", 0, 8, 20, 0.3),
        VGpu("infer", "embed-0", 2, 30, 0, 0.75),
        VGpu("kube-system", "gpu-probe", 2, 1, 0, 0.5),
    ),
    "gpu-node-b": (
        VGpu("research", "sim-0", 0, 12, 0, 0.7),
        VGpu("research", "sim-1", 1, 14, 0, 0.12),
        VGpu("batch", "etl-3", 0, 2, 0, 0.5, from_minute=40),
    ),
}
CLUSTERS = {"gpu-node-a": "prod-a", "gpu-node-b": "prod-b"}
ADVISOR_CLUSTER = "prod-a"
UNHEALTHY = ("gpu-node-a", 3, 60.0, 80.0)  # node, card, from minute, to minute
COLLECTOR_DOWN = ("gpu-node-b", "kubernetes", 20.0, 30.0)
ADVISOR_SKIPPED = (90.0, 105.0)
PLAN_KINDS = ("rebalance", "scale_up", "scale_down")


def card_uuid(node: str, index: int) -> str:
    return f"GPU-{ord(node[-1]):08x}-0000-4000-8000-{index:012d}"


def wave(t: float, period: float, phase: float) -> float:
    return math.sin(2 * math.pi * t / period + phase)


class Families:
    """Samples grouped by metric family, then by series, in the order OpenMetrics needs."""

    def __init__(self) -> None:
        self.types: dict[str, str] = {}
        self.series: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))

    def add(self, name: str, labels: dict[str, str], value: float, at: float) -> None:
        """One sample of a contract series, typed as advisor/metricnames.py says (a
        summary's or a histogram's by its family's name and the sample's suffix)."""
        (contract,) = [f for f in metricnames.FAMILIES if name in f.series]
        kind = contract.kind
        family = name.removesuffix("_total") if kind == "counter" else contract.name
        self.types.setdefault(family, kind)
        text = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
        self.series[family][f"{name}{{{text}}}"].append(f"{float(value)!r} {at:.3f}")

    def lines(self) -> Iterator[str]:
        for family, kind in self.types.items():
            yield f"# TYPE {family} {kind}"
            for series, samples in self.series[family].items():
                for sample in samples:
                    yield f"{series} {sample}"
        yield "# EOF"


Incident = tuple[str, object, float, float]  # node, card or collector, from/to minute


def _during(incident: Incident, what: tuple[str, object], minute: float) -> bool:
    return incident[:2] == what and incident[2] <= minute < incident[3]


def _node_at(out: Families, node: str, minute: float, at: float, errors: dict[str, float]) -> None:
    target = {
        "cluster": CLUSTERS[node],
        "node": node,
        "job": "xgpu-exporter",
        "instance": f"{node}:19400",
    }
    t = minute * 60
    out.add("xgpu_node_info", target, 1, at)
    for card in NODES[node]:
        labels = {**target, "gpu_index": str(card.index), "gpu_uuid": card_uuid(node, card.index)}
        present = [v for v in VGPUS[node] if v.card == card.index and minute >= v.from_minute]
        allotted = used_sum = core_allotted = core_used_sum = 0.0
        for i, v in enumerate(present):
            total = v.memory_gib * GIB
            used = total * min(0.98, max(0.02, v.use + 0.12 * wave(t, 1800 + 300 * i, i)))
            core_used = (v.core or 100 / len(present)) * (0.5 + 0.4 * wave(t, 900, i + 1))
            vgpu = {**labels, "namespace": v.namespace, "pod": v.pod, "container": v.container}
            out.add("xgpu_memory_total", vgpu, total, at)
            out.add("xgpu_memory_used", vgpu, used, at)
            if v.core:
                out.add("xgpu_core_percentage_total", vgpu, v.core, at)
            out.add("xgpu_core_percentage_used", vgpu, core_used, at)
            allotted += total
            used_sum += used
            core_allotted += v.core
            core_used_sum += core_used
        unattributed = 512 * MIB if (node, card.index) == ("gpu-node-a", 2) else 0
        unhealthy = _during(UNHEALTHY, (node, card.index), minute)
        policy = 2 if not present else (1 if core_allotted else 0)
        out.add(
            "xgpu_card_info",
            {**labels, "model": card.model, "driver_version": "550.54.15"},
            1,
            at,
        )
        out.add("gpu_schedule_policy", labels, policy, at)
        out.add("xgpu_device_health", labels, 1 if unhealthy else 0, at)
        out.add("xgpu_card_memory_total_bytes", labels, card.memory_gib * GIB, at)
        out.add("xgpu_card_memory_used_bytes", labels, used_sum + unattributed + 300 * MIB, at)
        out.add("xgpu_card_memory_allotted_bytes", labels, allotted, at)
        out.add("xgpu_card_unattributed_memory_bytes", labels, unattributed, at)
        out.add("xgpu_card_core_allotted_ratio", labels, core_allotted / 100, at)
        if card.mig is None:  # NVML gives no card utilisation in MIG mode
            out.add("xgpu_card_utilization_ratio", labels, min(1.0, core_used_sum / 100), at)
        out.add("xgpu_card_vgpus", labels, len(present), at)
        for i, mig in enumerate(card.mig or ()):
            instance = {
                **labels,
                "GPU_I_ID": str(mig.gpu_instance_id),
                "GPU_I_PROFILE": mig.profile,
                "mig_start": str(mig.start),
            }
            total = mig.memory_mib * MIB
            used = total * max(0.0, mig.use + 0.1 * wave(t, 1200, i)) if mig.use else 0.0
            out.add("xgpu_mig_instance_memory_total_bytes", instance, total, at)
            out.add("xgpu_mig_instance_memory_used_bytes", instance, used, at)
            if mig.holder is not None:  # its one process, its pod's
                namespace, pod, container = mig.holder
                holder = {**instance, "namespace": namespace, "pod": pod, "container": container}
                out.add("xgpu_mig_instance_pod_memory_used_bytes", holder, used, at)
        if card.mig is not None:
            out.add("xgpu_card_mig_mode", labels, 1, at)
        if unhealthy:
            errors[node] += 2  # the card's memory reads fail with GPU_IS_LOST (15)
    for collector in ("nvml", "kubernetes", "attribution"):
        down = _during(COLLECTOR_DOWN, (node, collector), minute)
        out.add(
            "xgpu_exporter_collector_success",
            {**target, "collector": collector},
            0 if down else 1,
            at,
        )
    if node == UNHEALTHY[0]:
        nvml = {**target, "function": "nvmlDeviceGetMemoryInfo", "code": "15"}
        out.add("xgpu_exporter_nvml_errors_total", nvml, errors[node], at)


def _advisor_at(out: Families, minute: float, at: float, start: float) -> None:
    labels = {"cluster": ADVISOR_CLUSTER, "job": "xgpu-advisor"}
    runs = [
        r
        for r in range(int(minute * 60 // ADVISOR_PERIOD) + 1)
        if not ADVISOR_SKIPPED[0] <= r * ADVISOR_PERIOD / 60 < ADVISOR_SKIPPED[1]
    ]
    run = runs[-1]
    duration = 1.5 + (run % 3) * 0.7
    pending = {
        "schedulable": run % 2,
        "node-resources": run % 3 // 2,
        "fragmentation": 2 + run % 3,
        "capacity": 1,
        "unsatisfiable": 0,
        "invalid": run % 4 // 3,
    }
    for cause in CAUSES:
        out.add("xgpu_advisor_pending_pods", {**labels, "cause": cause}, pending[cause], at)
    for kind, count in zip(PLAN_KINDS, (1 + run % 2, 1, 0), strict=True):
        out.add("xgpu_advisor_plans", {**labels, "kind": kind}, count, at)
    out.add("xgpu_advisor_rescuable_pods", labels, pending["fragmentation"] - 1, at)
    out.add("xgpu_advisor_stranded_memory_bytes", labels, (6 + run % 5) * GIB, at)
    out.add("xgpu_advisor_fragmentation_ratio", labels, 0.2 + 0.05 * (run % 5), at)
    finished = start + run * ADVISOR_PERIOD  # runs finish on the period's boundaries
    out.add("xgpu_advisor_last_success_timestamp_seconds", labels, finished, at)
    out.add("xgpu_advisor_run_duration_seconds", labels, duration, at)
    for cause in CAUSES:  # each Pending pod waited 10 min more than the one before
        ages = [600.0 * (i + 1) + 60 * (run % 5) for i in range(pending[cause])]
        out.add("xgpu_advisor_pending_age_seconds_count", {**labels, "cause": cause}, len(ages), at)
        out.add("xgpu_advisor_pending_age_seconds_sum", {**labels, "cause": cause}, sum(ages), at)
        if ages:
            out.add(
                "xgpu_advisor_pending_age_max_seconds", {**labels, "cause": cause}, ages[-1], at
            )
    latency = {**labels, "profile": "cce"}
    placed = (1.0, 4.0, 40.0 + run % 7)  # seconds from creation to PodScheduled
    for bound in (*LATENCY_BUCKETS, math.inf):
        le = "+Inf" if math.isinf(bound) else repr(bound)
        count = sum(1 for s in placed if s <= bound)
        out.add("xgpu_advisor_scheduling_latency_seconds_bucket", {**latency, "le": le}, count, at)
    out.add("xgpu_advisor_scheduling_latency_seconds_count", latency, len(placed), at)
    out.add("xgpu_advisor_scheduling_latency_seconds_sum", latency, sum(placed), at)
    # infer/embed's HPA (2 replicas, max 6): every other run one replica short, for
    # fragmentation; its blocked series exists only then, as a push leaves it
    hpa = {**labels, "autoscaler": "infer/embed"}
    placeable = 4 - run % 2
    out.add("xgpu_advisor_autoscaler_replicas", hpa, 2, at)
    out.add("xgpu_advisor_autoscaler_max_replicas", hpa, 6, at)
    out.add("xgpu_advisor_autoscaler_placeable_replicas", hpa, placeable, at)
    if placeable < 4:
        out.add("xgpu_advisor_autoscaler_blocked", {**hpa, "cause": "fragmentation"}, 1, at)


def write_history(path: Path, end: float) -> float:
    """Write the history ending at `end` (unix seconds) to `path`; returns its start."""
    steps = int(HOURS * 3600 / STEP)
    start = end - steps * STEP
    out = Families()
    errors: dict[str, float] = defaultdict(float)
    for i in range(steps + 1):
        at = start + i * STEP
        minute = i * STEP / 60
        for node in NODES:
            _node_at(out, node, minute, at, errors)
        _advisor_at(out, minute, at, start)
    path.write_text("\n".join(out.lines()) + "\n", encoding="utf-8")
    return start
