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

from advisor import metricnames as M
from advisor.errors import known
from exporter.readings import CardReading, MigInstanceReading
from exporter.snapshot import CardKey, CardRow, MigUseRow, Snapshot, VgpuRow

# Metric families that can be switched off (`--no-collector.<group>`), as node_exporter's
# collectors can. "cce": the six families CCE's own exporter publishes under the same names
# (docs/coexistence.md): beside it, serving them twice would double every sum().
CCE_FAMILIES = tuple(f.name for f in M.FAMILIES if f.cce)
FAMILY_GROUPS = frozenset({"cce"})


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
        yield _gauge(M.NODE_INFO, [([snap.node], 1)])
        families = [*_vgpu_families(snap.vgpus), *_card_families(snap), *_mig_families(snap)]
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


def _gauge(family: M.Family, samples: list[tuple[list[str], float]]) -> GaugeMetricFamily:
    metric = GaugeMetricFamily(family.name, family.help, labels=family.labels)
    for values, value in samples:
        metric.add_metric(values, value)
    return metric


def _card_labels(key: CardKey) -> list[str]:
    return [key.gpu_index, key.gpu_uuid]


def _vgpu_labels(row: VgpuRow) -> list[str]:
    return [row.namespace, row.pod, row.container, row.card.gpu_index, row.card.gpu_uuid]


def _vgpu_families(vgpus: tuple[VgpuRow, ...]) -> Iterator[Metric]:
    yield _gauge(M.MEMORY_TOTAL, [(_vgpu_labels(v), v.memory_total_bytes) for v in vgpus])
    yield _gauge(
        M.MEMORY_USED,
        [(_vgpu_labels(v), v.memory_used_bytes) for v in vgpus if v.memory_used_bytes is not None],
    )
    yield _gauge(
        M.CORE_TOTAL,
        [(_vgpu_labels(v), v.core_total_percent) for v in vgpus if v.core_total_percent],
    )
    yield _gauge(
        M.CORE_USED,
        [(_vgpu_labels(v), v.core_used_percent) for v in vgpus if v.core_used_percent is not None],
    )


def _card_families(snap: Snapshot) -> Iterator[Metric]:
    cards = snap.cards
    read = [c for c in cards if c.reading is not None]
    yield _gauge(M.SCHEDULE_POLICY, [(_card_labels(c.key), c.mode) for c in cards])
    yield _gauge(
        M.DEVICE_HEALTH,
        [(_card_labels(c.key), 0 if _reading(c).healthy else 1) for c in read],
    )
    driver = snap.driver_version or ""
    yield _gauge(M.CARD_INFO, [([*_card_labels(c.key), _reading(c).name, driver], 1) for c in read])
    yield _optional_card_gauge(
        M.CARD_MEMORY_TOTAL, [(c, _reading(c).memory_total_bytes) for c in read]
    )
    yield _optional_card_gauge(
        M.CARD_MEMORY_USED, [(c, _reading(c).memory_used_bytes) for c in read]
    )
    yield _optional_card_gauge(
        M.CARD_UTILIZATION, [(c, _reading(c).utilization_ratio) for c in read]
    )
    yield _optional_card_gauge(M.CARD_MEMORY_ALLOTTED, [(c, c.allotted_bytes) for c in cards])
    yield _optional_card_gauge(M.CARD_UNATTRIBUTED, [(c, c.unattributed_bytes) for c in cards])
    yield _optional_card_gauge(
        M.CARD_CORE_ALLOTTED, [(c, c.core_allotted_percent / 100.0) for c in cards]
    )
    yield _optional_card_gauge(M.CARD_VGPUS, [(c, c.vgpus) for c in cards])


def _mig_families(snap: Snapshot) -> Iterator[Metric]:
    """MIG's families: samples only where a card has MIG, so a card without it is served the
    series it was served before (a card with MIG off adds its mode's 0)."""
    yield _optional_card_gauge(
        M.CARD_MIG_MODE, [(c, _reading(c).mig_mode) for c in snap.cards if c.reading is not None]
    )
    instances = snap.reading.mig_instances if snap.reading is not None else ()
    totals = [(_mig_labels(i), i.memory_total_bytes) for i in instances]
    used = [(_mig_labels(i), i.memory_used_bytes) for i in instances]
    # a value NVML did not give is an absent series, as for cards
    yield _gauge(M.MIG_MEMORY_TOTAL, [(ls, v) for ls, v in totals if v is not None])
    yield _gauge(M.MIG_MEMORY_USED, [(ls, v) for ls, v in used if v is not None])
    # a MIG pod's use of an instance: labelled as the instance's series (its profile and
    # start empty where NVML would not list the card's instances, as there)
    where = {(str(i.gpu_index), i.gpu_instance_id): i for i in instances}
    yield _gauge(
        M.MIG_POD_MEMORY_USED,
        [
            ([u.namespace, u.pod, u.container, *_use_labels(u, where)], u.memory_used_bytes)
            for u in snap.mig_uses
        ],
    )


def _use_labels(use: MigUseRow, instances: dict[tuple[str, int], MigInstanceReading]) -> list[str]:
    found = instances.get((use.card.gpu_index, use.gpu_instance_id))
    if found is not None:
        return _mig_labels(found)
    card = use.card
    return [card.gpu_index, card.gpu_uuid, str(use.gpu_instance_id), "", ""]


def _mig_labels(instance: MigInstanceReading) -> list[str]:
    start = "" if instance.placement_start is None else str(instance.placement_start)
    return [
        str(instance.gpu_index), instance.gpu_uuid, str(instance.gpu_instance_id),
        instance.profile, start,
    ]  # fmt: skip


def _reading(card: CardRow) -> CardReading:
    return known(card.reading, f"the reading of card {card.key}")


def _optional_card_gauge(
    family: M.Family, values: list[tuple[CardRow, float | int | None]]
) -> GaugeMetricFamily:
    # A field NVML does not support is an absent series, not an error.
    return _gauge(family, [(_card_labels(c.key), v) for c, v in values if v is not None])


def _exporter_families(snap: Snapshot) -> Iterator[Metric]:
    yield _gauge(M.COLLECTOR_SUCCESS, [([c.name], 1 if c.success else 0) for c in snap.collectors])
    yield _gauge(M.COLLECTOR_DURATION, [([c.name], c.duration_s) for c in snap.collectors])
    family = M.NVML_ERRORS
    errors = CounterMetricFamily(family.family_name, family.help, labels=family.labels)
    for function, code, count in snap.nvml_errors:
        errors.add_metric([function, code], count)
    yield errors
    yield _gauge(M.BUILD_INFO, [([exporter_version(), platform.python_version()], 1)])
