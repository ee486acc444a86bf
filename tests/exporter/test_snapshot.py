"""Joining card readings, allotments and process owners into the rows metrics render from."""

from __future__ import annotations

from exporter.allotments import Allotment, MigContainer, PodsView
from exporter.attribution import Owner
from exporter.nvml import CardReading, NvmlReading, ProcessReading
from exporter.snapshot import (
    MODE_MEMORY,
    MODE_MEMORY_CORE,
    MODE_UNUSED,
    CardKey,
    Snapshot,
    VgpuRow,
    build_snapshot,
)

GIB = 1024**3
UUID0, UUID1, UUID2 = "GPU-aaaa", "GPU-bbbb", "GPU-cccc"
CID_A, CID_B = "a" * 64, "b" * 64


def card(index: int, uuid: str, healthy: bool = True) -> CardReading:
    return CardReading(index, uuid, "Tesla T4", 16 * GIB, 5 * GIB, 0.5, healthy, ())


def reading(*processes: ProcessReading) -> NvmlReading:
    return NvmlReading("550.54", (card(0, UUID0), card(1, UUID1), card(2, UUID2)), processes, ())


ALLOTMENTS = (
    # by index (CCE) with container id; memory+core
    Allotment("ns", "a", "main", "0", 4 * GIB, 30, pod_uid="uid-a", container_id=CID_A),
    # by UUID (HAMi/Volcano), pod UID only; memory isolation
    Allotment("ns", "b", "main", UUID1, 2 * GIB, None, pod_uid="uid-b"),
    # pod b has a second container on card 1 too: pod-UID matching is ambiguous there
    Allotment("ns", "b", "side", UUID1, 1 * GIB, None, pod_uid="uid-b"),
    # pod b's main container also on card 0 (core 0 counts as memory isolation)
    Allotment("ns", "b", "main", "0", 1 * GIB, 0, pod_uid="uid-b", container_id=CID_B),
)


def build(
    read: NvmlReading | None,
    owners: dict[int, Owner] | None,
    pods: PodsView | None = None,
) -> Snapshot:
    return build_snapshot(
        node="n1",
        collected_at=0.0,
        reading=read,
        pods=PodsView(ALLOTMENTS, ok=True) if pods is None else pods,
        owners=owners,
        collectors=(),
        known_cards=(CardKey("0", UUID0),),
    )


def vgpu(snap: Snapshot, pod: str, container: str, index: str) -> VgpuRow:
    (row,) = [
        v for v in snap.vgpus if (v.pod, v.container, v.card.gpu_index) == (pod, container, index)
    ]
    return row


def test_allotments_join_cards_by_index_or_uuid_and_set_modes() -> None:
    snap = build(reading(), {})
    cards = {c.key.gpu_index: c for c in snap.cards}
    assert [c.key for c in snap.cards] == [
        CardKey("0", UUID0),
        CardKey("1", UUID1),
        CardKey("2", UUID2),
    ]
    assert (cards["0"].mode, cards["1"].mode, cards["2"].mode) == (
        MODE_MEMORY_CORE,
        MODE_MEMORY,
        MODE_UNUSED,
    )
    assert (cards["0"].vgpus, cards["0"].allotted_bytes, cards["0"].core_allotted_percent) == (
        2,
        5 * GIB,
        30,
    )
    assert (cards["1"].vgpus, cards["1"].allotted_bytes) == (2, 3 * GIB)
    assert vgpu(snap, "b", "main", "1").card == CardKey("1", UUID1)
    assert vgpu(snap, "b", "main", "0").core_total_percent is None


def test_usage_follows_container_id_then_pod_uid_and_the_rest_is_unattributed() -> None:
    snap = build(
        reading(
            ProcessReading(10, 0, 1 * GIB, 0.25),  # container a, card 0
            ProcessReading(11, 0, 1 * GIB, 0.05),  # container a again: summed
            ProcessReading(20, 0, 512 * 2**20, None),  # pod b main by container id, no SM data
            ProcessReading(21, 1, 256 * 2**20, 0.1),  # pod b by UID on card 1: two containers
            ProcessReading(30, 2, 3 * GIB, 0.9),  # a host process
            ProcessReading(31, 2, 1 * GIB, 0.1),  # a container of no known vGPU
        ),
        {
            10: Owner(CID_A, "uid-a"),
            11: Owner(CID_A, ""),
            20: Owner(CID_B, "uid-b"),
            21: Owner("", "uid-b"),
            31: Owner("c" * 64, "uid-unknown"),
        },
    )
    a = vgpu(snap, "a", "main", "0")
    assert a.memory_used_bytes == 2 * GIB
    assert a.core_used_percent is not None
    assert abs(a.core_used_percent - 30.0) < 1e-9
    b0 = vgpu(snap, "b", "main", "0")
    assert (b0.memory_used_bytes, b0.core_used_percent) == (512 * 2**20, None)
    # ambiguous pod-UID match on card 1: neither container gets it
    assert vgpu(snap, "b", "main", "1").memory_used_bytes == 0
    assert vgpu(snap, "b", "side", "1").core_used_percent == 0.0
    unattributed = {c.key.gpu_index: c.unattributed_bytes for c in snap.cards}
    assert unattributed == {"0": 0, "1": 256 * 2**20, "2": 4 * GIB}


def test_without_nvml_usage_is_unknown_and_known_cards_label_allotments() -> None:
    snap = build(None, {})
    assert all(v.memory_used_bytes is None and v.core_used_percent is None for v in snap.vgpus)
    keys = {c.key for c in snap.cards}
    # card 0 is named by the last good reading; UUID1 was never read: index unknown
    assert keys == {CardKey("0", UUID0), CardKey("", UUID1)}
    assert all(c.reading is None and c.unattributed_bytes is None for c in snap.cards)


def test_without_attribution_usage_is_unknown() -> None:
    snap = build(reading(ProcessReading(10, 0, GIB, 0.5)), None)
    assert vgpu(snap, "a", "main", "0").memory_used_bytes is None
    assert all(c.unattributed_bytes is None for c in snap.cards)


def test_duplicate_allotments_merge_into_one_series() -> None:
    twice = (
        Allotment("ns", "p", "c", "0", GIB, 10),
        Allotment("ns", "p", "c", UUID0, GIB, 15),
    )
    snap = build_snapshot(
        node="n1",
        collected_at=0.0,
        reading=reading(),
        pods=PodsView(twice, ok=True),
        owners={},
        collectors=(),
    )
    (row,) = snap.vgpus
    assert (row.memory_total_bytes, row.core_total_percent) == (2 * GIB, 25)


# -- MIG pods' use of their instances (docs/design.md §13) -------------------------------------

MIG_PODS = (
    MigContainer("ml", "one", "main", "uid-one", CID_A),
    MigContainer("ml", "two", "left", "uid-two"),  # two containers, no ids: uid is ambiguous
    MigContainer("ml", "two", "right", "uid-two"),
    MigContainer("ml", "solo", "main", "uid-solo"),
)


def test_processes_on_mig_instances_are_their_pods_use_of_them() -> None:
    read = reading(
        ProcessReading(1, 2, GIB, None, 3),  # by container id (its pod UID unread)
        ProcessReading(2, 2, GIB, None, 3),  # the same container again: summed, one row
        ProcessReading(3, 2, 2 * GIB, None, 5),  # by pod UID: one container
        ProcessReading(4, 2, 4 * GIB, None, 5),  # pod UID of two containers: unattributed
        ProcessReading(5, 2, 8 * GIB, None, None),  # a MIG pod's, not on an instance
    )
    owners = {
        1: Owner(CID_A, ""),
        2: Owner(CID_A, "uid-one"),
        3: Owner("", "uid-solo"),
        4: Owner("", "uid-two"),
        5: Owner("", "uid-solo"),
    }
    snap = build(read, owners, PodsView(ALLOTMENTS, ok=True, mig_containers=MIG_PODS))
    assert [
        (u.pod, u.container, u.gpu_instance_id, u.memory_used_bytes) for u in snap.mig_uses
    ] == [
        ("one", "main", 3, 2 * GIB),
        ("solo", "main", 5, 2 * GIB),
    ]
    assert {u.card for u in snap.mig_uses} == {CardKey("2", UUID2)}
    (row,) = [c for c in snap.cards if c.key.gpu_index == "2"]
    assert row.unattributed_bytes == 12 * GIB
    # no MIG pods known: every such process is unattributed
    assert build(read, owners).mig_uses == ()
