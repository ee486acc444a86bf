"""Metric families of docs/design.md §6, built from one `Snapshot` (names, labels: a contract).

Rendered on the exporter's own `CollectorRegistry`, once per collection and format; every
scrape in the freshness window gets the same bytes (hence "cached" in the HELP texts).
"""

from __future__ import annotations

import platform
from collections.abc import Iterator
from functools import cache
from importlib import metadata
from typing import cast

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest as generate_text
from prometheus_client.openmetrics.exposition import ALLOWUTF8
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

from advisor.errors import known
from exporter.readings import CardReading
from exporter.snapshot import CardKey, CardRow, Snapshot, VgpuRow

# Metric families that can be switched off (`--no-collector.<group>`), as node_exporter's
# collectors can. "cce": the six families CCE's own exporter publishes under the same names
# (docs/coexistence.md): beside it, serving them twice would double every sum().
CCE_FAMILIES = (
    "xgpu_memory_total",
    "xgpu_memory_used",
    "xgpu_core_percentage_total",
    "xgpu_core_percentage_used",
    "gpu_schedule_policy",
    "xgpu_device_health",
)
FAMILY_GROUPS = frozenset({"cce"})

VGPU_LABELS = ["namespace", "pod", "container", "gpu_index", "gpu_uuid"]
CARD_LABELS = ["gpu_index", "gpu_uuid"]
CACHED = " Collected at most once per freshness window; concurrent scrapes share it."


@cache
def exporter_version() -> str:
    try:
        return metadata.version("xgpu-insight")
    except metadata.PackageNotFoundError:
        return "0+unknown"


class SnapshotCollector:
    """A prometheus_client collector whose `collect()` only reads the snapshot it holds.

    `families`: the groups of FAMILY_GROUPS to serve; the families of the others are left out.
    """

    def __init__(self, snapshot: Snapshot, families: frozenset[str] = FAMILY_GROUPS) -> None:
        self.snapshot = snapshot
        self.families = families

    def collect(self) -> Iterator[Metric]:
        snap = self.snapshot
        yield _gauge(
            "xgpu_node_info", "1; the node's name (downward API).", ["node"], [([snap.node], 1)]
        )
        families = [*_vgpu_families(snap.vgpus), *_card_families(snap)]
        if "cce" not in self.families:
            families = [f for f in families if f.name not in CCE_FAMILIES]
        yield from families
        yield from _exporter_families(snap)

    def describe(self) -> Iterator[Metric]:
        return iter(())  # not called at registration: keeps the registry from collecting early


def render(
    snapshot: Snapshot, openmetrics: bool, families: frozenset[str] = FAMILY_GROUPS
) -> bytes:
    """The exposition of one snapshot in the Prometheus text (0.0.4) or OpenMetrics format."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(snapshot, families))
    if openmetrics:
        # Every name here is a legacy (ASCII) name, so "allow-utf-8" writes the same bytes
        # while skipping the client's per-character name escaping (about 20 % of the render).
        body = generate_openmetrics(registry, escaping=ALLOWUTF8)  # type: ignore[no-untyped-call]
        return cast(bytes, body)
    return generate_text(registry)


def _gauge(
    name: str, doc: str, labels: list[str], samples: list[tuple[list[str], float]]
) -> GaugeMetricFamily:
    family = GaugeMetricFamily(name, doc, labels=labels)
    for values, value in samples:
        family.add_metric(values, value)
    return family


def _card_labels(key: CardKey) -> list[str]:
    return [key.gpu_index, key.gpu_uuid]


def _vgpu_labels(row: VgpuRow) -> list[str]:
    return [row.namespace, row.pod, row.container, row.card.gpu_index, row.card.gpu_uuid]


def _vgpu_families(vgpus: tuple[VgpuRow, ...]) -> Iterator[Metric]:
    yield _gauge(
        "xgpu_memory_total",
        "Bytes of card memory allotted to this vGPU (container x card).",
        VGPU_LABELS,
        [(_vgpu_labels(v), v.memory_total_bytes) for v in vgpus],
    )
    yield _gauge(
        "xgpu_memory_used",
        "Bytes of card memory used by this vGPU's container processes on the card (NVML); "
        "usage of processes of no known vGPU is in xgpu_card_unattributed_memory_bytes.",
        VGPU_LABELS,
        [(_vgpu_labels(v), v.memory_used_bytes) for v in vgpus if v.memory_used_bytes is not None],
    )
    yield _gauge(
        "xgpu_core_percentage_total",
        "Core percent allotted to this vGPU (memory+core isolation, mode 1, only).",
        VGPU_LABELS,
        [(_vgpu_labels(v), v.core_total_percent) for v in vgpus if v.core_total_percent],
    )
    yield _gauge(
        "xgpu_core_percentage_used",
        "Percent of the card's SMs used by this vGPU's container processes (NVML).",
        VGPU_LABELS,
        [(_vgpu_labels(v), v.core_used_percent) for v in vgpus if v.core_used_percent is not None],
    )


def _card_families(snap: Snapshot) -> Iterator[Metric]:
    cards = snap.cards
    read = [c for c in cards if c.reading is not None]
    yield _gauge(
        "gpu_schedule_policy",
        "Card isolation mode: 0 memory, 1 memory+core, 2 unused (no vGPU).",
        CARD_LABELS,
        [(_card_labels(c.key), c.mode) for c in cards],
    )
    yield _gauge(
        "xgpu_device_health",
        "0 healthy, 1 unhealthy (device lost, critical Xid, ECC or row-remap failure).",
        CARD_LABELS,
        [(_card_labels(c.key), 0 if _reading(c).healthy else 1) for c in read],
    )
    driver = snap.driver_version or ""
    yield _gauge(
        "xgpu_card_info",
        "1; card metadata.",
        [*CARD_LABELS, "model", "driver_version"],
        [([*_card_labels(c.key), _reading(c).name, driver], 1) for c in read],
    )
    yield _optional_card_gauge(
        "xgpu_card_memory_total_bytes",
        "Physical card memory in bytes (NVML).",
        [(c, _reading(c).memory_total_bytes) for c in read],
    )
    yield _optional_card_gauge(
        "xgpu_card_memory_used_bytes",
        "Physical card memory in use in bytes (NVML).",
        [(c, _reading(c).memory_used_bytes) for c in read],
    )
    yield _optional_card_gauge(
        "xgpu_card_utilization_ratio",
        "SM utilisation of the card, 0-1 (NVML).",
        [(c, _reading(c).utilization_ratio) for c in read],
    )
    yield _optional_card_gauge(
        "xgpu_card_memory_allotted_bytes",
        "Sum of the vGPUs' memory allotments on the card, bytes.",
        [(c, c.allotted_bytes) for c in cards],
    )
    yield _optional_card_gauge(
        "xgpu_card_unattributed_memory_bytes",
        "Bytes used on the card by processes of no known vGPU (no vGPU series for them); "
        "absent when NVML or attribution is off.",
        [(c, c.unattributed_bytes) for c in cards],
    )
    yield _optional_card_gauge(
        "xgpu_card_core_allotted_ratio",
        "Sum of the vGPUs' core allotments on the card / 100.",
        [(c, c.core_allotted_percent / 100.0) for c in cards],
    )
    yield _optional_card_gauge(
        "xgpu_card_vgpus", "vGPUs on the card.", [(c, c.vgpus) for c in cards]
    )


def _reading(card: CardRow) -> CardReading:
    return known(card.reading, f"the reading of card {card.key}")


def _optional_card_gauge(
    name: str, doc: str, values: list[tuple[CardRow, float | int | None]]
) -> GaugeMetricFamily:
    # A field NVML does not support is an absent series, not an error.
    return _gauge(
        name, doc, CARD_LABELS, [(_card_labels(c.key), v) for c, v in values if v is not None]
    )


def _exporter_families(snap: Snapshot) -> Iterator[Metric]:
    yield _gauge(
        "xgpu_exporter_collector_success",
        "1 if the collector's last run succeeded." + CACHED,
        ["collector"],
        [([c.name], 1 if c.success else 0) for c in snap.collectors],
    )
    yield _gauge(
        "xgpu_exporter_collector_duration_seconds",
        "Duration of the collector's last run, seconds." + CACHED,
        ["collector"],
        [([c.name], c.duration_s) for c in snap.collectors],
    )
    errors = CounterMetricFamily(
        "xgpu_exporter_nvml_errors",
        "NVML calls that failed, by function and NVML error code (or timeout, unknown_device).",
        labels=["function", "code"],
    )
    for function, code, count in snap.nvml_errors:
        errors.add_metric([function, code], count)
    yield errors
    yield _gauge(
        "xgpu_exporter_build_info",
        "1; the exporter's version and Python version.",
        ["version", "python_version"],
        [([exporter_version(), platform.python_version()], 1)],
    )
