"""The metric contract of docs/design.md §6, written once: every series the exporter and the
advisor publish (name, type, labels in exposition order, HELP text) and the recorded series
of deploy/rules/xgpu.rules.yaml that the dashboards read.

The exporter's collectors (exporter/metrics.py), the advisor's own series (advisor/metrics.py),
its Prometheus queries (advisor/sources/) and the dashboards (dashboards/) take their names
from here; tests check that the rules read, and the dashboards query, no other name. Labels
are those the exporter writes: the scrape adds `node` (and `job`, `instance`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

VGPU_LABELS = ("namespace", "pod", "container", "gpu_index", "gpu_uuid")
CARD_LABELS = ("gpu_index", "gpu_uuid")
# A MIG GPU instance: its card, its id and profile as dcgm-exporter names them, and the first
# memory slice it takes (docs/design.md §6).
MIG_LABELS = (*CARD_LABELS, "GPU_I_ID", "GPU_I_PROFILE", "mig_start")
MIG_POD_LABELS = ("namespace", "pod", "container", *MIG_LABELS)
CACHED = " Collected at most once per freshness window; concurrent scrapes share it."


@dataclass(frozen=True, slots=True)
class Family:
    name: str  # as a series is named (a counter's samples end in _total)
    kind: Literal["gauge", "counter", "summary", "histogram"]
    labels: tuple[str, ...]
    source: Literal["exporter", "advisor"]
    help: str
    cce: bool = False  # one of the six names CCE's exporter publishes too (--collector.cce)

    @property
    def series(self) -> tuple[str, ...]:
        """The names its samples carry: a summary's and a histogram's are suffixed."""
        if self.kind == "summary":
            return (f"{self.name}_count", f"{self.name}_sum")
        if self.kind == "histogram":
            return (f"{self.name}_bucket", f"{self.name}_count", f"{self.name}_sum")
        return (self.name,)

    @property
    def family_name(self) -> str:
        """The name a client library is given: it appends a counter's `_total` itself."""
        return self.name.removesuffix("_total") if self.kind == "counter" else self.name

    def __str__(self) -> str:  # so that a query reads f"sum({MEMORY_USED})"
        return self.name


# The six families CCE's own exporter publishes under the same names (docs/coexistence.md).
MEMORY_TOTAL = Family(
    "xgpu_memory_total",
    "gauge",
    VGPU_LABELS,
    "exporter",
    "Bytes of card memory allotted to this vGPU (container x card).",
    cce=True,
)
MEMORY_USED = Family(
    "xgpu_memory_used",
    "gauge",
    VGPU_LABELS,
    "exporter",
    "Bytes of card memory used by this vGPU's container processes on the card (NVML); "
    "usage of processes of no known vGPU is in xgpu_card_unattributed_memory_bytes.",
    cce=True,
)
CORE_TOTAL = Family(
    "xgpu_core_percentage_total",
    "gauge",
    VGPU_LABELS,
    "exporter",
    "Core percent allotted to this vGPU (memory+core isolation, mode 1, only).",
    cce=True,
)
CORE_USED = Family(
    "xgpu_core_percentage_used",
    "gauge",
    VGPU_LABELS,
    "exporter",
    "Percent of the card's SMs used by this vGPU's container processes (NVML).",
    cce=True,
)
SCHEDULE_POLICY = Family(
    "gpu_schedule_policy",
    "gauge",
    CARD_LABELS,
    "exporter",
    "Card isolation mode: 0 memory, 1 memory+core, 2 unused (no vGPU).",
    cce=True,
)
DEVICE_HEALTH = Family(
    "xgpu_device_health",
    "gauge",
    CARD_LABELS,
    "exporter",
    "0 healthy, 1 unhealthy (device lost, critical Xid, ECC or row-remap failure).",
    cce=True,
)
# The exporter's own names.
NODE_INFO = Family(
    "xgpu_node_info", "gauge", ("node",), "exporter", "1; the node's name (downward API)."
)
CARD_INFO = Family(
    "xgpu_card_info",
    "gauge",
    (*CARD_LABELS, "model", "driver_version"),
    "exporter",
    "1; card metadata.",
)
CARD_MEMORY_TOTAL = Family(
    "xgpu_card_memory_total_bytes",
    "gauge",
    CARD_LABELS,
    "exporter",
    "Physical card memory in bytes (NVML).",
)
CARD_MEMORY_USED = Family(
    "xgpu_card_memory_used_bytes",
    "gauge",
    CARD_LABELS,
    "exporter",
    "Physical card memory in use in bytes (NVML).",
)
CARD_UTILIZATION = Family(
    "xgpu_card_utilization_ratio",
    "gauge",
    CARD_LABELS,
    "exporter",
    "SM utilisation of the card, 0-1 (NVML).",
)
CARD_MEMORY_ALLOTTED = Family(
    "xgpu_card_memory_allotted_bytes",
    "gauge",
    CARD_LABELS,
    "exporter",
    "Sum of the vGPUs' memory allotments on the card, bytes.",
)
CARD_UNATTRIBUTED = Family(
    "xgpu_card_unattributed_memory_bytes",
    "gauge",
    CARD_LABELS,
    "exporter",
    "Bytes used on the card by processes of no known vGPU (no vGPU series for them); "
    "absent when NVML or attribution is off.",
)
CARD_CORE_ALLOTTED = Family(
    "xgpu_card_core_allotted_ratio",
    "gauge",
    CARD_LABELS,
    "exporter",
    "Sum of the vGPUs' core allotments on the card / 100.",
)
CARD_VGPUS = Family("xgpu_card_vgpus", "gauge", CARD_LABELS, "exporter", "vGPUs on the card.")
CARD_MIG_MODE = Family(
    "xgpu_card_mig_mode",
    "gauge",
    CARD_LABELS,
    "exporter",
    "MIG mode of the card: 0 off, 1 on (NVML); absent on a card without MIG.",
)
MIG_MEMORY_TOTAL = Family(
    "xgpu_mig_instance_memory_total_bytes",
    "gauge",
    MIG_LABELS,
    "exporter",
    "Memory of the MIG GPU instance in bytes (NVML).",
)
MIG_MEMORY_USED = Family(
    "xgpu_mig_instance_memory_used_bytes",
    "gauge",
    MIG_LABELS,
    "exporter",
    "Memory in use in the MIG GPU instance in bytes (NVML).",
)
MIG_POD_MEMORY_USED = Family(
    "xgpu_mig_instance_pod_memory_used_bytes",
    "gauge",
    MIG_POD_LABELS,
    "exporter",
    "Memory used in the MIG GPU instance by the container's processes in bytes (NVML, "
    "attributed through /proc).",
)
COLLECTOR_SUCCESS = Family(
    "xgpu_exporter_collector_success",
    "gauge",
    ("collector",),
    "exporter",
    "1 if the collector's last run succeeded." + CACHED,
)
COLLECTOR_DURATION = Family(
    "xgpu_exporter_collector_duration_seconds",
    "gauge",
    ("collector",),
    "exporter",
    "Duration of the collector's last run, seconds." + CACHED,
)
NVML_ERRORS = Family(
    "xgpu_exporter_nvml_errors_total",
    "counter",
    ("function", "code"),
    "exporter",
    "NVML calls that failed, by function and NVML error code (or timeout, unknown_device).",
)
BUILD_INFO = Family(
    "xgpu_exporter_build_info",
    "gauge",
    ("version", "python_version"),
    "exporter",
    "1; the exporter's version and Python version.",
)
# The advisor's own series, one set per run (textfile or Pushgateway).
PENDING_PODS = Family(
    "xgpu_advisor_pending_pods",
    "gauge",
    ("cause",),
    "advisor",
    "Pending GPU pods by cause in the advisor's last run.",
)
STRANDED_MEMORY = Family(
    "xgpu_advisor_stranded_memory_bytes",
    "gauge",
    (),
    "advisor",
    "Free memory on healthy cards that no Pending pod can use, in bytes.",
)
FRAGMENTATION = Family(
    "xgpu_advisor_fragmentation_ratio",
    "gauge",
    (),
    "advisor",
    "FGD fragmentation of the cluster as a share of its free memory (0-1).",
)
PLANS = Family(
    "xgpu_advisor_plans", "gauge", ("kind",), "advisor", "Plans the last run proposed, by kind."
)
RESCUABLE_PODS = Family(
    "xgpu_advisor_rescuable_pods",
    "gauge",
    (),
    "advisor",
    "Pending GPU pods that the proposed rebalancing plans would let run.",
)
LAST_SUCCESS = Family(
    "xgpu_advisor_last_success_timestamp_seconds",
    "gauge",
    (),
    "advisor",
    "Unix time at which the advisor last finished a run successfully.",
)
RUN_DURATION = Family(
    "xgpu_advisor_run_duration_seconds",
    "gauge",
    (),
    "advisor",
    "How long the advisor's last run took, in seconds.",
)
# The scheduling layer's own signals (docs/design.md §12.3).
PENDING_AGE = Family(
    "xgpu_advisor_pending_age_seconds",
    "summary",
    ("cause",),
    "advisor",
    "Ages of the Pending GPU pods of known creation time, by cause: their count and sum.",
)
PENDING_AGE_MAX = Family(
    "xgpu_advisor_pending_age_max_seconds",
    "gauge",
    ("cause",),
    "advisor",
    "Age of the oldest Pending GPU pod of known creation time, by cause.",
)
SCHEDULING_LATENCY = Family(
    "xgpu_advisor_scheduling_latency_seconds",
    "histogram",
    ("profile",),
    "advisor",
    "Creation to PodScheduled of the GPU pods scheduled in the hour before the run, "
    "by scheduler profile.",
)

# Reachable replicas (docs/design.md §12.2), one set per autoscaler the cluster lists.
AUTOSCALER_REPLICAS = Family(
    "xgpu_advisor_autoscaler_replicas",
    "gauge",
    ("autoscaler",),
    "advisor",
    "Replicas the HorizontalPodAutoscaler's target has now (status.currentReplicas).",
)
AUTOSCALER_MAX_REPLICAS = Family(
    "xgpu_advisor_autoscaler_max_replicas",
    "gauge",
    ("autoscaler",),
    "advisor",
    "The HorizontalPodAutoscaler's maxReplicas.",
)
AUTOSCALER_PLACEABLE = Family(
    "xgpu_advisor_autoscaler_placeable_replicas",
    "gauge",
    ("autoscaler",),
    "advisor",
    "Replicas beyond today's, up to maxReplicas, that the cluster places now; absent when "
    "the target has no running pod to copy (unknown-template).",
)
AUTOSCALER_BLOCKED = Family(
    "xgpu_advisor_autoscaler_blocked",
    "gauge",
    ("autoscaler", "cause"),
    "advisor",
    "1, with the cause of the first replica up to maxReplicas that stays Pending; absent "
    "when every replica places or none is known.",
)

FAMILIES: tuple[Family, ...] = (
    MEMORY_TOTAL,
    MEMORY_USED,
    CORE_TOTAL,
    CORE_USED,
    SCHEDULE_POLICY,
    DEVICE_HEALTH,
    NODE_INFO,
    CARD_INFO,
    CARD_MEMORY_TOTAL,
    CARD_MEMORY_USED,
    CARD_MEMORY_ALLOTTED,
    CARD_UNATTRIBUTED,
    CARD_CORE_ALLOTTED,
    CARD_UTILIZATION,
    CARD_VGPUS,
    CARD_MIG_MODE,
    MIG_MEMORY_TOTAL,
    MIG_MEMORY_USED,
    MIG_POD_MEMORY_USED,
    COLLECTOR_SUCCESS,
    COLLECTOR_DURATION,
    NVML_ERRORS,
    BUILD_INFO,
    PENDING_PODS,
    STRANDED_MEMORY,
    FRAGMENTATION,
    PLANS,
    RESCUABLE_PODS,
    LAST_SUCCESS,
    RUN_DURATION,
    PENDING_AGE,
    PENDING_AGE_MAX,
    SCHEDULING_LATENCY,
    AUTOSCALER_REPLICAS,
    AUTOSCALER_MAX_REPLICAS,
    AUTOSCALER_PLACEABLE,
    AUTOSCALER_BLOCKED,
)
BY_NAME = {family.name: family for family in FAMILIES}
NAMES = frozenset(BY_NAME)
SERIES = frozenset(name for family in FAMILIES for name in family.series)  # what queries read
CCE_NAMES = frozenset(f.name for f in FAMILIES if f.cce)
# Series every exporter or every card exports: the only ones a node or card variable of a
# dashboard may list its options from (a card lacking the series would vanish from the list).
EVERY_NODE_OR_CARD = frozenset({NODE_INFO.name, CARD_MEMORY_TOTAL.name, CARD_INFO.name})


def _recorded(level: str, metric: str, operation: str) -> str:
    """A recording rule's name, level:metric:operation (Prometheus' naming practice)."""
    return f"{level}:{metric}:{operation}"


# The recorded series of deploy/rules/xgpu.rules.yaml (the rules file defines them; a test
# checks that it defines exactly these).
NODE_VGPUS = _recorded("node", "xgpu_vgpus", "count")
NODE_ALLOTTED = _recorded("node", "xgpu_memory_allotted_bytes", "sum")
NODE_CARD_MEMORY = _recorded("node", "xgpu_card_memory_total_bytes", "sum")
NODE_ALLOTTED_RATIO = _recorded("node", "xgpu_memory_allotted", "ratio")
NODE_UNUSED_ALLOTTED = _recorded("node", "xgpu_memory_unused_allotted_bytes", "sum")
NODE_ALLOTTED_USAGE = _recorded("node", "xgpu_memory_allotted_usage", "ratio")
NODE_GPU_MEMORY_USED = _recorded("node_gpu", "xgpu_memory_used_bytes", "sum")
NODE_GPU_ALLOTTED_USAGE = _recorded("node_gpu", "xgpu_memory_allotted_usage", "ratio")
NAMESPACE_ALLOTTED = _recorded("namespace", "xgpu_memory_allotted_bytes", "sum")
NAMESPACE_USED = _recorded("namespace", "xgpu_memory_used_bytes", "sum")
NAMESPACE_UNUSED_ALLOTTED = _recorded("namespace", "xgpu_memory_unused_allotted_bytes", "sum")
NAMESPACE_UNUSED_RATIO = _recorded("namespace", "xgpu_memory_unused_allotted", "ratio")
CLUSTER_CARD_MEMORY = _recorded("cluster", "xgpu_card_memory_total_bytes", "sum")
CLUSTER_ALLOTTED = _recorded("cluster", "xgpu_memory_allotted_bytes", "sum")
CLUSTER_ALLOTTED_RATIO = _recorded("cluster", "xgpu_memory_allotted", "ratio")
CLUSTER_USED = _recorded("cluster", "xgpu_memory_used_bytes", "sum")
CLUSTER_UNUSED_ALLOTTED = _recorded("cluster", "xgpu_memory_unused_allotted_bytes", "sum")
RECORDED = frozenset(
    {
        NODE_VGPUS,
        NODE_ALLOTTED,
        NODE_CARD_MEMORY,
        NODE_ALLOTTED_RATIO,
        NODE_UNUSED_ALLOTTED,
        NODE_ALLOTTED_USAGE,
        NODE_GPU_MEMORY_USED,
        NODE_GPU_ALLOTTED_USAGE,
        NAMESPACE_ALLOTTED,
        NAMESPACE_USED,
        NAMESPACE_UNUSED_ALLOTTED,
        NAMESPACE_UNUSED_RATIO,
        CLUSTER_CARD_MEMORY,
        CLUSTER_ALLOTTED,
        CLUSTER_ALLOTTED_RATIO,
        CLUSTER_USED,
        CLUSTER_UNUSED_ALLOTTED,
    }
)
