"""The metric contract of docs/design.md §6, written once: every series the exporter and the
advisor publish, with its type and labels (before the scrape adds `node`, `job`, `instance`).

The exporter's exposition tests check it name for name and label for label, the rules tests
that the rules read nothing else, the dashboard tests that the panels show it; a test here
(tests/deploy/test_rules.py) checks it against the design document.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

VGPU = frozenset({"namespace", "pod", "container", "gpu_index", "gpu_uuid"})
CARD = frozenset({"gpu_index", "gpu_uuid"})


@dataclass(frozen=True)
class Family:
    name: str  # as a series is named (a counter's samples end in _total)
    kind: Literal["gauge", "counter"]
    labels: frozenset[str]
    source: Literal["exporter", "advisor"]
    cce: bool = False  # one of the six names CCE's exporter publishes too (--collector.cce)


FAMILIES: tuple[Family, ...] = (
    Family("xgpu_memory_total", "gauge", VGPU, "exporter", cce=True),
    Family("xgpu_memory_used", "gauge", VGPU, "exporter", cce=True),
    Family("xgpu_core_percentage_total", "gauge", VGPU, "exporter", cce=True),
    Family("xgpu_core_percentage_used", "gauge", VGPU, "exporter", cce=True),
    Family("gpu_schedule_policy", "gauge", CARD, "exporter", cce=True),
    Family("xgpu_device_health", "gauge", CARD, "exporter", cce=True),
    Family("xgpu_node_info", "gauge", frozenset({"node"}), "exporter"),
    Family("xgpu_card_info", "gauge", CARD | {"model", "driver_version"}, "exporter"),
    Family("xgpu_card_memory_total_bytes", "gauge", CARD, "exporter"),
    Family("xgpu_card_memory_used_bytes", "gauge", CARD, "exporter"),
    Family("xgpu_card_memory_allotted_bytes", "gauge", CARD, "exporter"),
    Family("xgpu_card_unattributed_memory_bytes", "gauge", CARD, "exporter"),
    Family("xgpu_card_core_allotted_ratio", "gauge", CARD, "exporter"),
    Family("xgpu_card_utilization_ratio", "gauge", CARD, "exporter"),
    Family("xgpu_card_vgpus", "gauge", CARD, "exporter"),
    Family("xgpu_exporter_collector_success", "gauge", frozenset({"collector"}), "exporter"),
    Family(
        "xgpu_exporter_collector_duration_seconds", "gauge", frozenset({"collector"}), "exporter"
    ),
    Family(
        "xgpu_exporter_nvml_errors_total", "counter", frozenset({"function", "code"}), "exporter"
    ),
    Family(
        "xgpu_exporter_build_info", "gauge", frozenset({"version", "python_version"}), "exporter"
    ),
    Family("xgpu_advisor_pending_pods", "gauge", frozenset({"cause"}), "advisor"),
    Family("xgpu_advisor_stranded_memory_bytes", "gauge", frozenset(), "advisor"),
    Family("xgpu_advisor_fragmentation_ratio", "gauge", frozenset(), "advisor"),
    Family("xgpu_advisor_plans", "gauge", frozenset({"kind"}), "advisor"),
    Family("xgpu_advisor_rescuable_pods", "gauge", frozenset(), "advisor"),
    Family("xgpu_advisor_last_success_timestamp_seconds", "gauge", frozenset(), "advisor"),
    Family("xgpu_advisor_run_duration_seconds", "gauge", frozenset(), "advisor"),
)
BY_NAME = {family.name: family for family in FAMILIES}
NAMES = frozenset(BY_NAME)
EXPORTER = {f.name: f.labels for f in FAMILIES if f.source == "exporter"}
ADVISOR = frozenset(f.name for f in FAMILIES if f.source == "advisor")
CCE_NAMES = frozenset(f.name for f in FAMILIES if f.cce)
# Series every exporter or every card exports: the only ones a node or card variable of a
# dashboard may list its options from (a card lacking the series would vanish from the list).
EVERY_NODE_OR_CARD = frozenset({"xgpu_node_info", "xgpu_card_memory_total_bytes", "xgpu_card_info"})
