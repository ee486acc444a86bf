"""The simulated exporter's MIG cards (docs/design.md §13): the series the NVML path serves
(exporter.nvml_mig), from a scenario's `mig` instances and the pods holding them."""

from __future__ import annotations

from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from advisor.core.mig import table_of
from advisor.scenario import scenario_from_data
from exporter.allotments import MigContainer, PodsView
from exporter.metrics import render
from exporter.readings import NvmlReading
from exporter.scenario_pods import (
    MIB,
    allotments_from_cluster,
    mig_containers_from_cluster,
    mig_holds_from_cluster,
)
from exporter.simulate import SimulatedReader
from exporter.snapshot import build_snapshot

A100 = "A100-SXM4-80GB"
INSTANCES = [
    {"profile": "3g.40gb", "start": 0},
    {"profile": "2g.20gb", "start": 4},
    {"profile": "1g.10gb", "start": 6},
]


def scenario(mig: bool = True) -> dict[str, Any]:
    card0: dict[str, Any] = {"index": 0, "memory_mib": 81920, "model": A100, "uuid": "GPU-m0"}
    if mig:
        card0["mig"] = {"instances": INSTANCES}
    pods: list[dict[str, Any]] = [
        {"name": "ml/v", "node": "m", "cards": [1], "request": {"gpus": 1, "memory_mib": 8192}},
    ]
    if mig:
        pods += [
            {
                "name": "ml/held",
                "node": "m",
                "request": {"gpus": 1, "mig_profile": "2g.20gb"},
                "mig_instances": [{"card": 0, "start": 4}],
                "annotations": {"xgpu.io/pod-uid": "uid-held"},
            },
            {"name": "ml/waiting", "request": {"gpus": 1, "mig_profile": "3g.40gb"}},
        ]
    return {
        "nodes": [
            {
                "name": "m",
                "mig_strategy": "mixed" if mig else "none",
                "cards": [
                    card0,
                    {"index": 1, "memory_mib": 81920, "model": A100, "uuid": "GPU-m1"},
                ],
            }
        ],
        "pods": pods,
    }


def read(data: dict[str, Any], t: float = 1000.0) -> tuple[NvmlReading, SimulatedReader]:
    cluster = scenario_from_data(data, "s.yaml")
    allotments = allotments_from_cluster(cluster, "m")
    holds = mig_holds_from_cluster(cluster, "m")
    reader = SimulatedReader(
        cluster.nodes[0], lambda: allotments, clock=lambda: t, mig_holds=lambda: holds
    )
    return reader.read(), reader


def exposition(
    reading: NvmlReading, reader: SimulatedReader, mig: tuple[MigContainer, ...] = ()
) -> dict[str, list[Any]]:
    snap = build_snapshot(
        node="m",
        collected_at=0.0,
        reading=reading,
        pods=PodsView(reader.allotments(), ok=True, mig_containers=mig),
        owners=reader.owners(p.pid for p in reading.processes),
        collectors=(),
    )
    text = render(snap, openmetrics=False).decode()
    return {f.name: f.samples for f in text_string_to_metric_families(text)}


def test_a_mig_card_serves_mode_1_and_one_series_set_per_instance() -> None:
    reading, reader = read(scenario())
    got = exposition(reading, reader)
    assert [(s.labels, s.value) for s in got["xgpu_card_mig_mode"]] == [
        ({"gpu_index": "0", "gpu_uuid": "GPU-m0"}, 1.0)
    ]
    table = table_of(A100)
    assert table is not None
    totals = {
        (s.labels["GPU_I_ID"], s.labels["GPU_I_PROFILE"], s.labels["mig_start"]): s.value
        for s in got["xgpu_mig_instance_memory_total_bytes"]
    }
    mib = {p.name: p.memory_mib for p in table.profiles}
    assert totals == {
        (str(i), str(p["profile"]), str(p["start"])): mib[str(p["profile"])] * MIB
        for i, p in enumerate(INSTANCES, start=1)
    }
    used = got["xgpu_mig_instance_memory_used_bytes"]
    assert len(used) == len(INSTANCES)
    assert {frozenset(s.labels) for s in used} == {
        frozenset({"gpu_index", "gpu_uuid", "GPU_I_ID", "GPU_I_PROFILE", "mig_start"})
    }


def test_used_memory_comes_from_the_pod_holding_the_instance() -> None:
    for t in (0.0, 1000.0, 55_555.5):
        reading, reader = read(scenario(), t)
        used = {i.profile: i.memory_used_bytes for i in reading.mig_instances}
        total = {i.profile: i.memory_total_bytes for i in reading.mig_instances}
        assert used["3g.40gb"] == used["1g.10gb"] == 0  # free
        assert 0 < used["2g.20gb"] <= total["2g.20gb"]  # type: ignore[operator]
        (process,) = [p for p in reading.processes if p.gpu_instance_id is not None]
        assert (process.gpu_index, process.gpu_instance_id) == (0, 2)
        assert process.memory_used_bytes == used["2g.20gb"]
        assert process.sm_utilization_ratio is None  # NVML gives none in MIG mode
        assert reader.owners([process.pid])[process.pid].pod_uid == "uid-held"
    (card0, card1) = reading.cards
    assert (card0.mig_mode, card0.utilization_ratio) == (1, None)
    assert card1.mig_mode is None
    assert card1.utilization_ratio is not None


def test_a_mig_pod_gets_no_vgpu_allotment() -> None:
    cluster = scenario_from_data(scenario(), "s.yaml")
    assert [a.pod for a in allotments_from_cluster(cluster, "m")] == ["v"]
    (hold,) = mig_holds_from_cluster(cluster, "m")
    assert (hold.namespace, hold.pod, hold.card, hold.start) == ("ml", "held", 0, 4)


def test_a_card_with_mig_off_gives_exactly_the_series_it_gave_before() -> None:
    """Card 1 (no MIG) reads the same beside a MIG card as on a node without MIG, and a
    node without MIG serves no MIG series at all."""
    with_mig, _ = read(scenario())
    without, reader = read(scenario(mig=False))
    assert with_mig.cards[1] == without.cards[1]
    assert [p for p in with_mig.processes if p.gpu_index == 1] == [
        p for p in without.processes if p.gpu_index == 1
    ]
    assert without.mig_instances == ()
    assert all(c.mig_mode is None for c in without.cards)
    got = exposition(without, reader)
    for family in (
        "xgpu_card_mig_mode",
        "xgpu_mig_instance_memory_total_bytes",
        "xgpu_mig_instance_memory_used_bytes",
        "xgpu_mig_instance_pod_memory_used_bytes",
    ):
        assert got.get(family, []) == []


def test_the_pod_holding_an_instance_is_named_on_its_use_of_it() -> None:
    """The scenario source names each bound MIG pod's container (its name, the pod UID
    annotation): the simulated process on the held instance is attributed to it, as a real
    one is through /proc, and leaves the card's unattributed memory."""
    cluster = scenario_from_data(scenario(), "s.yaml")
    mig = mig_containers_from_cluster(cluster, "m")
    assert mig == (MigContainer("ml", "held", "held", "uid-held", ""),)
    reading, reader = read(scenario())
    got = exposition(reading, reader, mig)
    ((sample,),) = [got["xgpu_mig_instance_pod_memory_used_bytes"]]
    held = next(i for i in reading.mig_instances if i.profile == "2g.20gb")
    assert sample.value == held.memory_used_bytes
    assert sample.labels == {
        "namespace": "ml",
        "pod": "held",
        "container": "held",
        "gpu_index": "0",
        "gpu_uuid": "GPU-m0",
        "GPU_I_ID": "2",
        "GPU_I_PROFILE": "2g.20gb",
        "mig_start": "4",
    }
    unattributed = {
        s.labels["gpu_index"]: s.value for s in got["xgpu_card_unattributed_memory_bytes"]
    }
    assert unattributed["0"] == 0
    # without the pod's container, the same process is unattributed memory of its card
    before = exposition(reading, reader)
    assert before.get("xgpu_mig_instance_pod_memory_used_bytes", []) == []
    assert {s.labels["gpu_index"]: s.value for s in before["xgpu_card_unattributed_memory_bytes"]}[
        "0"
    ] == held.memory_used_bytes
