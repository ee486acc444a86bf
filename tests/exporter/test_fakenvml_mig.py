"""The fake libnvidia-ml.so.1's MIG, through the real nvidia-ml-py bindings: each card's GPU
instance profiles and placements against NVIDIA's published listings, and MIG devices.

Sources of the expected values (written here by hand, not read from the fake):
- profile names, instance counts and slices: NVIDIA's MIG user guide, "Supported MIG Profiles"
  (https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html);
- profile IDs and memory (`nvidia-smi mig -lgip`, GiB shown there, MiB here) and placements
  (`nvidia-smi mig -lgipp`: `{starts}:memory slices`), the same on A100, H100 and H200: the
  guide's "Getting Started with MIG" listings and published `-lgip` listings of each card.
  H200's 1g.35gb, 3g.71gb and 4g.71gb memory sizes were not found in a listing: the fake
  infers them (fake_nvml_mig.c says how), and this test holds it to that inference.
"""

from __future__ import annotations

import ctypes
from typing import Any

import pynvml
import pytest

from tests.exporter.fakenvml.state import (
    MIG_TABLES,
    FakeCard,
    FakeComputeInstance,
    FakeGpuInstance,
    FakeNvml,
    FakeProcess,
    FakeState,
)

MIB = 2**20
# name, profile ID, instances, GPU slices, memory MiB, placement starts, memory slices taken
Row = tuple[str, int, int, int, int, tuple[int, ...], int]
ONE, TWO, THREE, WHOLE = (0, 1, 2, 3, 4, 5, 6), (0, 2, 4, 6), (0, 4), (0,)
GUIDE: dict[str, list[Row]] = {
    "A100-SXM4-40GB": [
        ("1g.5gb", 19, 7, 1, 4864, ONE, 1),
        ("1g.5gb+me", 20, 1, 1, 4864, ONE, 1),
        ("1g.10gb", 15, 4, 1, 9856, TWO, 2),
        ("2g.10gb", 14, 3, 2, 9856, (0, 2, 4), 2),
        ("3g.20gb", 9, 2, 3, 19968, THREE, 4),
        ("4g.20gb", 5, 1, 4, 19968, WHOLE, 4),
        ("7g.40gb", 0, 1, 7, 40192, WHOLE, 8),
    ],
    "A100-SXM4-80GB": [
        ("1g.10gb", 19, 7, 1, 9728, ONE, 1),
        ("1g.10gb+me", 20, 1, 1, 9728, ONE, 1),
        ("1g.20gb", 15, 4, 1, 19968, TWO, 2),
        ("2g.20gb", 14, 3, 2, 19968, (0, 2, 4), 2),
        ("3g.40gb", 9, 2, 3, 40192, THREE, 4),
        ("4g.40gb", 5, 1, 4, 40192, WHOLE, 4),
        ("7g.80gb", 0, 1, 7, 81152, WHOLE, 8),
    ],
    "H100-SXM5-80GB": [
        ("1g.10gb", 19, 7, 1, 9984, ONE, 1),
        ("1g.10gb+me", 20, 1, 1, 9984, ONE, 1),
        ("1g.20gb", 15, 4, 1, 20096, TWO, 2),
        ("2g.20gb", 14, 3, 2, 20096, (0, 2, 4), 2),
        ("3g.40gb", 9, 2, 3, 40448, THREE, 4),
        ("4g.40gb", 5, 1, 4, 40448, WHOLE, 4),
        ("7g.80gb", 0, 1, 7, 81152, WHOLE, 8),
    ],
    "H200-SXM5-141GB": [
        ("1g.18gb", 19, 7, 1, 16384, ONE, 1),
        ("1g.18gb+me", 20, 1, 1, 16384, ONE, 1),
        ("1g.35gb", 15, 4, 1, 33280, TWO, 2),
        ("2g.35gb", 14, 3, 2, 33280, (0, 2, 4), 2),
        ("3g.71gb", 9, 2, 3, 66816, THREE, 4),
        ("4g.71gb", 5, 1, 4, 66816, WHOLE, 4),
        ("7g.141gb", 0, 1, 7, 143360, WHOLE, 8),
    ],
}


@pytest.fixture
def nvml(fake_nvml: FakeNvml) -> Any:
    pynvml.nvmlInit()
    yield pynvml
    pynvml.nvmlShutdown()


def a100(*instances: FakeGpuInstance, **state: Any) -> FakeState:
    return FakeState(
        cards=[
            FakeCard("GPU-a100", "NVIDIA A100-SXM4-40GB", mig_profiles="A100-SXM4-40GB", mig=True)
        ],
        gpu_instances=list(instances),
        **state,
    )


def profiles(handle: Any) -> list[Row]:
    found: list[Row] = []
    for profile in range(pynvml.NVML_GPU_INSTANCE_PROFILE_COUNT):
        try:
            info = pynvml.nvmlDeviceGetGpuInstanceProfileInfo(handle, profile)
        except pynvml.NVMLError_NotSupported:
            continue  # a profile the card lacks
        count = ctypes.c_uint(0)
        pynvml.nvmlDeviceGetGpuInstancePossiblePlacements(
            handle, info.id, None, ctypes.byref(count)
        )
        placements = (pynvml.c_nvmlGpuInstancePlacement_t * count.value)()
        pynvml.nvmlDeviceGetGpuInstancePossiblePlacements(
            handle, info.id, placements, ctypes.byref(count)
        )
        (size,) = {p.size for p in placements}
        name = info.name.removeprefix("MIG ")  # pynvml decodes it
        starts = tuple(p.start for p in placements)
        memory = int(info.memorySizeMB)
        found.append((name, info.id, info.instanceCount, info.sliceCount, memory, starts, size))
    return found


@pytest.mark.parametrize("table", MIG_TABLES)
def test_profiles_and_placements_are_the_guide_s(
    table: str, fake_nvml: FakeNvml, nvml: Any
) -> None:
    fake_nvml.write(FakeState(cards=[FakeCard("GPU-x", mig_profiles=table)]))
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    assert sorted(profiles(handle)) == sorted(GUIDE[table])


def remaining(handle: Any, profile_id: int) -> int:
    fn = pynvml._nvmlGetFunctionPointer("nvmlDeviceGetGpuInstanceRemainingCapacity")
    count = ctypes.c_uint(99)
    pynvml._nvmlCheckReturn(fn(handle, ctypes.c_uint(profile_id), ctypes.byref(count)))
    return count.value


def test_four_1g_slices_leave_a_3g_only_its_placement_at_4(fake_nvml: FakeNvml, nvml: Any) -> None:
    fake_nvml.write(a100(*(FakeGpuInstance(0, 9 + k, "1g.5gb", k) for k in range(4))))
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    # 1g.5gb 19, 2g.10gb 14, 3g.20gb 9, 4g.20gb 5, 7g.40gb 0
    assert {p: remaining(handle, p) for p in (19, 14, 9, 5, 0)} == {
        19: 3,  # slices 4, 5 and 6
        14: 1,  # only at 4: 6 is no 2g start
        9: 1,  # only at 4
        5: 0,
        0: 0,
    }


def test_two_1g_slices_in_the_wrong_places_leave_no_3g(fake_nvml: FakeNvml, nvml: Any) -> None:
    """Three of seven compute slices used, yet neither 3g placement (0-3, 4-7) is free."""
    fake_nvml.write(a100(FakeGpuInstance(0, 9, "1g.5gb", 1), FakeGpuInstance(0, 10, "1g.5gb", 5)))
    handle = nvml.nvmlDeviceGetHandleByIndex(0)
    assert remaining(handle, 9) == 0
    assert remaining(handle, 19) == 5


def test_mig_mode_and_a_card_without_mig(fake_nvml: FakeNvml, nvml: Any) -> None:
    fake_nvml.write(
        FakeState(
            cards=[
                FakeCard("GPU-t4"),
                FakeCard("GPU-h200", mig_profiles="H200-SXM5-141GB", mig=False, mig_pending=True),
            ]
        )
    )
    t4, h200 = (nvml.nvmlDeviceGetHandleByIndex(i) for i in range(2))
    with pytest.raises(pynvml.NVMLError_NotSupported):
        nvml.nvmlDeviceGetMigMode(t4)
    assert nvml.nvmlDeviceGetMigMode(h200) == [0, 1]  # off now, on after a reset


def test_mig_devices(fake_nvml: FakeNvml, nvml: Any) -> None:
    fake_nvml.write(
        a100(
            FakeGpuInstance(0, 2, "3g.20gb", 0, mem_used=3 * 2**30),
            FakeGpuInstance(0, 1, "3g.20gb", 4, mem_used=2**30, mem_total=20224 * MIB),
            compute_instances=[
                FakeComputeInstance(0, gi=2, id=0, uuid="MIG-2"),
                FakeComputeInstance(0, gi=1, id=0, uuid="MIG-1"),
            ],
            processes=[FakeProcess(0, 10, 2**30, gi=1), FakeProcess(0, 20, 2**29, gi=2)],
        )
    )
    card = nvml.nvmlDeviceGetHandleByIndex(0)
    assert nvml.nvmlDeviceGetMaxMigDeviceCount(card) == 7
    first, second = (nvml.nvmlDeviceGetMigDeviceHandleByIndex(card, k) for k in range(2))
    with pytest.raises(pynvml.NVMLError_NotFound):  # an empty slot
        nvml.nvmlDeviceGetMigDeviceHandleByIndex(card, 2)
    assert nvml.nvmlDeviceIsMigDeviceHandle(first).value == 1
    assert nvml.nvmlDeviceIsMigDeviceHandle(card).value == 0
    assert [nvml.nvmlDeviceGetUUID(d) for d in (first, second)] == ["MIG-2", "MIG-1"]
    assert [nvml.nvmlDeviceGetGpuInstanceId(d) for d in (first, second)] == [2, 1]
    assert nvml.nvmlDeviceGetComputeInstanceId(second) == 0
    memory = [nvml.nvmlDeviceGetMemoryInfo(d, nvml.nvmlMemory_v2) for d in (first, second)]
    assert [(m.total, m.used) for m in memory] == [
        (19968 * MIB, 3 * 2**30),  # the profile's size
        (20224 * MIB, 2**30),
    ]
    assert [p.pid for p in nvml.nvmlDeviceGetComputeRunningProcesses_v3(second)] == [10]
    everything = nvml.nvmlDeviceGetComputeRunningProcesses_v3(card)  # a privileged caller's view
    assert [(p.pid, p.gpuInstanceId) for p in everything] == [(10, 1), (20, 2)]
    (listed,) = [
        nvml.nvmlGpuInstanceGetInfo(instance)
        for instance in _instances(card, profile_id=9, most=2)
        if nvml.nvmlGpuInstanceGetInfo(instance).id == 1
    ]
    assert (listed.profileId, listed.placement.start, listed.placement.size) == (9, 4, 4)


def _instances(card: Any, profile_id: int, most: int) -> list[Any]:
    found = (pynvml.c_nvmlGpuInstance_t * most)()
    count = ctypes.c_uint(0)
    pynvml.nvmlDeviceGetGpuInstances(card, profile_id, found, ctypes.byref(count))
    return [found[i] for i in range(count.value)]
