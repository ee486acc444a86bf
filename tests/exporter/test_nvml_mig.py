"""MIG in the exporter: the reader over the fake libnvidia-ml.so.1, the snapshot joining MIG
processes to pods through a fake /proc, and the exposition (docs/design.md §6).

A card with MIG off is served as before (only `xgpu_card_mig_mode 0` is new); a MIG card gives
one series set per GPU instance; a failing MIG call degrades only what it reads.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from exporter.allotments import Allotment, MigContainer, PodsView
from exporter.attribution import ProcCgroupResolver
from exporter.collection import Engine
from exporter.metrics import render
from exporter.nvml import MigInstanceReading, NvmlError, NvmlReader, NvmlReading
from exporter.snapshot import CollectorRun, build_snapshot
from tests.exporter.fakenvml.state import (
    FUNCTION_NOT_FOUND,
    GPU_IS_LOST,
    NO_PERMISSION,
    FakeCard,
    FakeComputeInstance,
    FakeFault,
    FakeGpuInstance,
    FakeNvml,
    FakeProcess,
    FakeState,
    write_procfs,
)
from tests.exporter.test_metrics import CONTRACT, samples

GIB, MIB = 2**30, 2**20
MakeReader = Callable[..., NvmlReader]
A100, T4 = "GPU-a100", "GPU-t4"
INFER_UID = "0f0e0d0c-0b0a-0908-0706-050403020100"
MIG_NAMES = {"xgpu_card_mig_mode", *(n for n, ls in CONTRACT.items() if "GPU_I_ID" in ls)}


def mixed(**changes: object) -> FakeState:
    """Card 0: an A100-40GB in MIG mode, a 3g.20gb at 4 and a 1g.5gb at 0, a process in each;
    card 1: a whole T4 with one process."""
    state = FakeState(
        cards=[
            FakeCard(
                A100,
                "NVIDIA A100-SXM4-40GB",
                40 * GIB,
                4 * GIB,
                util=0,
                mig_profiles="A100-SXM4-40GB",
                mig=True,
            ),
            FakeCard(T4, mem_used=GIB, util=40),
        ],
        gpu_instances=[
            FakeGpuInstance(0, 1, "3g.20gb", 4, mem_used=3 * GIB, mem_total=20224 * MIB),
            FakeGpuInstance(0, 9, "1g.5gb", 0, mem_used=GIB),
        ],
        compute_instances=[FakeComputeInstance(0, gi=1), FakeComputeInstance(0, gi=9)],
        processes=[
            FakeProcess(0, 4242, 2 * GIB, gi=1),  # infer-0's
            FakeProcess(0, 4343, 512 * MIB, gi=9),  # a host process
            FakeProcess(1, 5555, 256 * MIB),
        ],
    )
    for key, value in changes.items():
        setattr(state, key, value)
    return state


def test_a_mig_card_is_read_per_gpu_instance(fake_nvml: FakeNvml, make_reader: MakeReader) -> None:
    fake_nvml.write(mixed())
    reading = make_reader().read()
    assert [(c.uuid, c.mig_mode, c.healthy) for c in reading.cards] == [
        (A100, 1, True),
        (T4, None, True),  # no MIG on a T4: no mode, no error
    ]
    assert reading.mig_instances == (
        MigInstanceReading(0, A100, 1, "3g.20gb", 4, 20224 * MIB, 3 * GIB),
        MigInstanceReading(0, A100, 9, "1g.5gb", 0, 4864 * MIB, GIB),
    )
    assert [(p.pid, p.gpu_index, p.memory_used_bytes, p.gpu_instance_id) for p in
            reading.processes] == [
        (4242, 0, 2 * GIB, 1), (4343, 0, 512 * MIB, 9), (5555, 1, 256 * MIB, None),
    ]  # fmt: skip
    # NVML has no per-process utilisation in MIG mode: unknown, not idle
    assert [p.sm_utilization_ratio for p in reading.processes[:2]] == [None, None]
    assert reading.errors == ()


INFER = PodsView(
    (Allotment("team-a", "infer-0", "server", A100, 8 * GIB, None, pod_uid=INFER_UID),), ok=True
)


def exposition(
    reading: NvmlReading, procfs: Path, pods: PodsView = INFER
) -> dict[str, list[tuple[dict[str, str], float]]]:
    owners = ProcCgroupResolver(procfs).owners(p.pid for p in reading.processes)
    snapshot = build_snapshot(
        node="gpu-node-1",
        collected_at=0.0,
        reading=reading,
        pods=pods,
        owners=owners,
        collectors=(CollectorRun("nvml", True, 0.0),),
    )
    return samples(render(snapshot, openmetrics=False).decode())


def test_mixed_cards_series_and_attribution(
    fake_nvml: FakeNvml, make_reader: MakeReader, tmp_path: Path
) -> None:
    fake_nvml.write(mixed())
    procfs = write_procfs(
        tmp_path,
        {
            4242: f"0::/kubepods.slice/kubepods-pod{INFER_UID.replace('-', '_')}.slice/"
            f"cri-containerd-{'e' * 64}.scope\n",
            4343: "0::/system.slice/render-farm.service\n",
        },
    )
    got = exposition(make_reader().read(), procfs)
    for name in MIG_NAMES:
        assert all(set(labels) == CONTRACT[name] for labels, _ in got.get(name, [])), name
    assert got["xgpu_card_mig_mode"] == [({"gpu_index": "0", "gpu_uuid": A100}, 1)]
    instance = {"gpu_index": "0", "gpu_uuid": A100}
    assert got["xgpu_mig_instance_memory_total_bytes"] == [
        ({**instance, "GPU_I_ID": "1", "GPU_I_PROFILE": "3g.20gb", "mig_start": "4"}, 20224 * MIB),
        ({**instance, "GPU_I_ID": "9", "GPU_I_PROFILE": "1g.5gb", "mig_start": "0"}, 4864 * MIB),
    ]
    used = {ls["GPU_I_ID"]: v for ls, v in got["xgpu_mig_instance_memory_used_bytes"]}
    assert used == {"1": 3 * GIB, "9": GIB}
    # the MIG process joins its pod as any process does; the host one is unattributed
    assert got["xgpu_memory_used"] == [
        ({"namespace": "team-a", "pod": "infer-0", "container": "server", **instance}, 2 * GIB)
    ]
    unattributed = {ls["gpu_index"]: v for ls, v in got["xgpu_card_unattributed_memory_bytes"]}
    assert unattributed == {"0": 512 * MIB, "1": 256 * MIB}
    assert "xgpu_core_percentage_used" not in got  # no SM share in MIG mode: unknown


def test_a_mig_pods_process_is_its_use_of_the_instance(
    fake_nvml: FakeNvml, make_reader: MakeReader, tmp_path: Path
) -> None:
    """The process in the 1g.5gb belongs, by its cgroup, to a pod holding MIG instances (no
    vGPU): its memory there is that pod's container's use of the instance, labelled as the
    instance, and no longer unattributed memory of the card."""
    tune_uid, tune_id = "1f1e1d1c-1b1a-1918-1716-151413121110", "d" * 64
    fake_nvml.write(mixed())
    procfs = write_procfs(
        tmp_path,
        {
            4343: f"0::/kubepods.slice/kubepods-besteffort-pod{tune_uid.replace('-', '_')}"
            f".slice/cri-containerd-{tune_id}.scope\n",
        },
    )
    tune = MigContainer("ml", "tune", "worker", tune_uid, tune_id)
    got = exposition(make_reader().read(), procfs, PodsView((), ok=True, mig_containers=(tune,)))
    instance = {"gpu_index": "0", "gpu_uuid": A100, "GPU_I_ID": "9", "GPU_I_PROFILE": "1g.5gb"}
    pod = {"namespace": "ml", "pod": "tune", "container": "worker"}
    assert got["xgpu_mig_instance_pod_memory_used_bytes"] == [
        ({**pod, **instance, "mig_start": "0"}, 512 * MIB)
    ]
    unattributed = {ls["gpu_index"]: v for ls, v in got["xgpu_card_unattributed_memory_bytes"]}
    assert unattributed == {"0": 2 * GIB, "1": 256 * MIB}  # 4242 (no pod known) and the T4's


def test_a_card_with_mig_off_is_served_as_before(
    fake_nvml: FakeNvml, make_reader: MakeReader, tmp_path: Path
) -> None:
    """An H200 with MIG off (the one real card the exporter met) and the same card without
    MIG at all: the same series, bar the mode's 0; a card without MIG adds no MIG series."""
    reader = make_reader()
    h200 = FakeCard("GPU-h200", "NVIDIA H200", 141 * GIB, 2 * GIB, util=12)
    procs = [FakeProcess(0, 7, GIB)]
    fake_nvml.write(FakeState(cards=[h200], processes=procs))
    before = exposition(reader.read(), tmp_path)
    h200.mig_profiles = "H200-SXM5-141GB"
    fake_nvml.write(FakeState(cards=[h200], processes=procs))
    off = exposition(reader.read(), tmp_path)

    assert MIG_NAMES.isdisjoint(before)
    assert off.pop("xgpu_card_mig_mode") == [({"gpu_index": "0", "gpu_uuid": "GPU-h200"}, 0)]
    assert off == before
    assert before["xgpu_card_memory_used_bytes"] == [
        ({"gpu_index": "0", "gpu_uuid": "GPU-h200"}, 2 * GIB)
    ]


def instance_ids(reading: NvmlReading, name: str) -> list[int]:
    return [i.gpu_instance_id for i in reading.mig_instances if getattr(i, name) is not None]


def test_a_failing_mig_call_degrades_only_its_series(
    fake_nvml: FakeNvml, make_reader: MakeReader
) -> None:
    # MIG device 1 (GPU instance 9) may not read its memory
    fault = FakeFault("nvmlDeviceGetMemoryInfo_v2", NO_PERMISSION, card=0, mig=1)
    fake_nvml.write(mixed(faults=[fault]))
    reading = make_reader().read()
    assert reading.errors == (NvmlError("nvmlDeviceGetMemoryInfo_v2", "no_permission"),)
    assert instance_ids(reading, "memory_total_bytes") == [1]
    assert instance_ids(reading, "memory_used_bytes") == [1]
    assert [i.profile for i in reading.mig_instances] == ["3g.20gb", "1g.5gb"]
    assert reading.cards[0].memory_used_bytes == 4 * GIB  # the card's own call still answers
    assert [p.pid for p in reading.processes] == [4242, 4343, 5555]
    assert all(c.healthy for c in reading.cards)


def test_without_the_privilege_to_list_instances_only_profile_and_start_are_missing(
    fake_nvml: FakeNvml, make_reader: MakeReader
) -> None:
    fault = FakeFault("nvmlDeviceGetGpuInstances", NO_PERMISSION)
    fake_nvml.write(mixed(faults=[fault]))
    reading = make_reader().read()
    assert {e.function for e in reading.errors} == {"nvmlDeviceGetGpuInstances"}
    assert [(i.gpu_instance_id, i.profile, i.placement_start) for i in reading.mig_instances] == [
        (1, "", None),
        (9, "", None),
    ]
    assert instance_ids(reading, "memory_used_bytes") == [1, 9]


def test_a_driver_before_r510_lists_mig_processes_with_v2(
    fake_nvml: FakeNvml, make_reader: MakeReader
) -> None:
    """MIG came with R450, `nvmlDeviceGetComputeRunningProcesses_v3` with R510."""
    fault = FakeFault("nvmlDeviceGetComputeRunningProcesses_v3", FUNCTION_NOT_FOUND)
    fake_nvml.write(mixed(cards=mixed().cards[:1], faults=[fault]))
    reader = make_reader()
    for _ in range(2):  # the second read asks v2 at once
        reading = reader.read()
        assert [(p.pid, p.gpu_instance_id) for p in reading.processes] == [(4242, 1), (4343, 9)]
        assert reading.errors == ()


def test_a_driver_without_mig_reads_cards_as_before(
    fake_nvml: FakeNvml, make_reader: MakeReader
) -> None:
    """Before R450 NVML has no nvmlDeviceGetMigMode: no MIG, and no failure to count."""
    fault = FakeFault("nvmlDeviceGetMigMode", FUNCTION_NOT_FOUND)
    fake_nvml.write(FakeState(cards=[FakeCard(T4, mem_used=GIB)], faults=[fault]))
    reading = make_reader().read()
    assert reading.errors == ()
    assert [(c.mig_mode, c.memory_used_bytes, c.healthy) for c in reading.cards] == [
        (None, GIB, True)
    ]


def test_a_card_lost_in_a_mig_call_is_unhealthy_and_the_other_is_read(
    fake_nvml: FakeNvml, make_reader: MakeReader
) -> None:
    fault = FakeFault("nvmlDeviceGetMigDeviceHandleByIndex", GPU_IS_LOST, card=0)
    fake_nvml.write(mixed(faults=[fault]))
    reading = make_reader().read()
    assert [(c.uuid, c.health_problems) for c in reading.cards] == [
        (A100, ("gpu lost",)),
        (T4, ()),
    ]
    assert reading.mig_instances == ()
    assert [p.pid for p in reading.processes] == [5555]


async def test_the_nvml_collector_fails_on_a_mig_call_as_on_any_other(
    fake_nvml: FakeNvml,
) -> None:
    fake_nvml.write(mixed(faults=[FakeFault("nvmlDeviceGetGpuInstanceId", NO_PERMISSION, mig=0)]))
    engine = Engine(node="n", reader=NvmlReader(), pods=None, resolver=None, freshness_s=0.0)
    try:
        collection = await engine.latest()
        got = samples((await collection.exposition(False, False)).decode())
    finally:
        await engine.close()
    assert got["xgpu_exporter_collector_success"] == [({"collector": "nvml"}, 0)]
    errors = {(ls["function"], ls["code"]): v for ls, v in got["xgpu_exporter_nvml_errors_total"]}
    assert errors == {("nvmlDeviceGetGpuInstanceId", "no_permission"): 1}
    # MIG device 0 cannot be labelled: its GPU instance is left out, the other is served
    assert [ls["GPU_I_ID"] for ls, _ in got["xgpu_mig_instance_memory_used_bytes"]] == ["9"]
    assert {ls["gpu_index"] for ls, _ in got["xgpu_card_memory_used_bytes"]} == {"0", "1"}
