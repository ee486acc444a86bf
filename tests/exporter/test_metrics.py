"""The exposition: docs/design.md §6 names and labels exactly, both formats, promtool-clean."""

from __future__ import annotations

import shutil

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics
from prometheus_client.openmetrics.parser import (
    text_string_to_metric_families as parse_openmetrics,
)
from prometheus_client.parser import text_string_to_metric_families as parse_text

from advisor import metricnames
from exporter.allotments import Allotment, MigContainer, PodsView
from exporter.attribution import Owner
from exporter.metrics import SnapshotCollector, render
from exporter.nvml import CardReading, MigInstanceReading, NvmlReading, ProcessReading
from exporter.snapshot import CollectorRun, Snapshot, build_snapshot
from tests.realparts import promtool_check_metrics

GIB = 1024**3
# name -> labels; advisor/metricnames.py, which tests/advisor/test_metricnames.py holds to
# README's metric reference and docs/design.md §6
CONTRACT = {f.name: frozenset(f.labels) for f in metricnames.FAMILIES if f.source == "exporter"}


def snapshot() -> Snapshot:
    cards = (
        CardReading(0, "GPU-a", "Tesla T4", 16 * GIB, 6 * GIB, 0.42, True, ()),
        # a card that reports no utilisation and is lost
        CardReading(1, "GPU-b", "Tesla T4", 16 * GIB, None, None, False, ("gpu lost",)),
        # an A100 in MIG mode with one GPU instance
        # (NVML gives no card utilisation in MIG mode)
        CardReading(2, "GPU-c", "NVIDIA A100-SXM4-40GB", 40 * GIB, GIB, None, True, (), mig_mode=1),
    )
    mig = (MigInstanceReading(2, "GPU-c", 1, "3g.20gb", 4, 20 * GIB, GIB),)
    # a MIG pod's process on that instance (no vGPU: attributed to the pod's container)
    processes = (ProcessReading(7, 0, GIB, 0.3), ProcessReading(8, 2, GIB // 2, None, 1))
    return build_snapshot(
        node="gpu-node-1",
        collected_at=0.0,
        reading=NvmlReading("550.54.15", cards, processes, (), mig),
        pods=PodsView(
            (
                Allotment("team", "infer", "server", "0", 4 * GIB, 25, pod_uid="u1"),
                Allotment("team", "train", "main", "GPU-b", 2 * GIB, None, pod_uid="u2"),
            ),
            ok=True,
            mig_containers=(MigContainer("ml", "tune", "worker", "u3", "c3"),),
        ),
        owners={7: Owner("", "u1"), 8: Owner("c3", "u3")},
        collectors=(
            CollectorRun("nvml", False, 0.01, "gpu lost"),
            CollectorRun("scenario", True, 0.0),
        ),
        nvml_errors=(("nvmlDeviceGetMemoryInfo_v2", "gpu_is_lost", 3),),
    )


def samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    found: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in parse_text(text):
        for s in family.samples:
            found.setdefault(s.name, []).append((dict(s.labels), s.value))
    return found


def test_every_series_has_its_contract_name_and_labels() -> None:
    got = samples(render(snapshot(), openmetrics=False).decode())
    assert set(got) == set(CONTRACT)
    for name, rows in got.items():
        for labels, _ in rows:
            assert set(labels) == CONTRACT[name], name


def test_every_family_has_its_contract_type() -> None:
    types = {f.name: f.type for f in parse_text(render(snapshot(), False).decode())}
    # the text parser names a counter's family without its _total
    expected = {
        f.name.removesuffix("_total") if f.kind == "counter" else f.name: f.kind
        for f in metricnames.FAMILIES
        if f.source == "exporter"
    }
    assert types == expected


def test_without_the_cce_group_the_six_cce_names_are_left_out_and_nothing_else() -> None:
    """Beside CCE's own exporter (--no-collector.cce): no name served twice."""
    full = samples(render(snapshot(), False).decode())
    without = samples(render(snapshot(), False, families=frozenset()).decode())
    assert set(full) - set(without) == metricnames.CCE_NAMES
    assert len(metricnames.CCE_NAMES) == 6
    for name in without:
        assert without[name] == full[name], name  # the rest unchanged, value for value
    assert "gpu_schedule_policy" not in render(snapshot(), True, frozenset()).decode()


def test_values() -> None:
    got = samples(render(snapshot(), openmetrics=False).decode())

    def value(name: str, **labels: str) -> float:
        (v,) = [v for ls, v in got[name] if all(ls[k] == x for k, x in labels.items())]
        return v

    assert value("xgpu_memory_total", pod="infer") == 4 * GIB
    assert value("xgpu_memory_used", pod="infer") == GIB
    assert value("xgpu_core_percentage_used", pod="infer") == pytest.approx(30.0)
    assert value("xgpu_core_percentage_total", pod="infer") == 25
    assert [ls["pod"] for ls, _ in got["xgpu_core_percentage_total"]] == ["infer"]  # mode 1 only
    assert value("gpu_schedule_policy", gpu_index="0") == 1
    assert value("gpu_schedule_policy", gpu_index="1") == 0
    assert value("xgpu_device_health", gpu_uuid="GPU-b") == 1
    assert value("xgpu_device_health", gpu_uuid="GPU-a") == 0
    assert value("xgpu_card_utilization_ratio", gpu_index="0") == pytest.approx(0.42)
    # not reported by the card: absent, not zero
    assert [ls["gpu_index"] for ls, _ in got["xgpu_card_utilization_ratio"]] == ["0"]
    assert [ls["gpu_index"] for ls, _ in got["xgpu_card_memory_used_bytes"]] == ["0", "2"]
    assert value("xgpu_card_info", gpu_index="1") == 1
    assert value("xgpu_card_info", gpu_index="0", driver_version="550.54.15", model="Tesla T4") == 1
    assert value("xgpu_exporter_collector_success", collector="nvml") == 0
    assert value("xgpu_exporter_nvml_errors_total", code="gpu_is_lost") == 3
    assert value("xgpu_node_info", node="gpu-node-1") == 1
    # MIG: the mode of the cards that have it, and each GPU instance's memory
    assert [(ls["gpu_index"], v) for ls, v in got["xgpu_card_mig_mode"]] == [("2", 1)]
    assert value("xgpu_mig_instance_memory_total_bytes", GPU_I_PROFILE="3g.20gb") == 20 * GIB
    assert value("xgpu_mig_instance_memory_used_bytes", GPU_I_ID="1", mig_start="4") == GIB
    # the MIG pod's use of it, labelled as the instance; not unattributed on its card
    ((labels, used),) = got["xgpu_mig_instance_pod_memory_used_bytes"]
    assert used == GIB // 2
    assert labels == {
        "namespace": "ml",
        "pod": "tune",
        "container": "worker",
        "gpu_index": "2",
        "gpu_uuid": "GPU-c",
        "GPU_I_ID": "1",
        "GPU_I_PROFILE": "3g.20gb",
        "mig_start": "4",
    }
    assert value("xgpu_card_unattributed_memory_bytes", gpu_index="2") == 0


def test_openmetrics_carries_the_same_samples() -> None:
    snap = snapshot()
    text = samples(render(snap, openmetrics=False).decode())
    body = render(snap, openmetrics=True).decode()
    assert body.endswith("# EOF\n")
    om: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in parse_openmetrics(body):  # type: ignore[no-untyped-call]
        for s in family.samples:
            om.setdefault(s.name, []).append((dict(s.labels), s.value))
    assert om == text
    # rendered with "allow-utf-8" name escaping for speed: the same bytes as the default
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SnapshotCollector(snap))
    assert render(snap, openmetrics=True) == generate_openmetrics(registry)  # type: ignore[no-untyped-call]


@pytest.mark.realservices
@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_promtool_finds_only_the_two_cce_total_gauges() -> None:
    _, findings = promtool_check_metrics(render(snapshot(), openmetrics=False).decode())
    assert findings == [
        'xgpu_core_percentage_total non-counter metrics should not have "_total" suffix',
        'xgpu_memory_total non-counter metrics should not have "_total" suffix',
    ], findings
