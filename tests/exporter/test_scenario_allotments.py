"""Allotments from a scenario under each profile: a share or a whole card is reported with the
card's memory, as HAMi and Volcano vGPU account it.

HAMi v2.10.0 `Fit` (pkg/device/nvidia/device.go): memreq = Totalmem * pct / 100 in int32;
Volcano v1.15.0 (pkg/scheduler/api/devices/nvidia/vgpu/utils.go):
memreqForCard = uint(float64(Memory) * pct / 100.0); both round down. Whole card: 100 %.
"""

from __future__ import annotations

from typing import Any

import pytest

from advisor.scenario import scenario_from_data
from exporter.scenario_pods import MIB, allotments_from_cluster


def cluster(profile: str, *pods: dict[str, Any]) -> Any:
    data = {
        "scheduler": {"profile": profile},
        "nodes": [
            {
                "name": "n1",
                "cards": [{"index": 0, "memory_mib": 15109}, {"index": 1, "memory_mib": 24576}],
            }
        ],
        "pods": list(pods),
    }
    return scenario_from_data(data, "test")


def allotted(profile: str, *pods: dict[str, Any]) -> list[tuple[str, str, int, int | None]]:
    return [
        (a.pod, a.card, a.memory_bytes // MIB, a.core_percent)
        for a in allotments_from_cluster(cluster(profile, *pods), "n1")
    ]


SHARE = {
    "name": "ml/share",
    "node": "n1",
    "cards": [0],
    "request": {"gpus": 1, "memory_percent": 33},
}
WHOLE = {
    "name": "ml/whole",
    "node": "n1",
    "cards": [0, 1],
    "request": {"gpus": 2, "core_percent": 200},
}
MIB_POD = {"name": "ml/mib", "node": "n1", "cards": [1], "request": {"gpus": 1, "memory_mib": 1000}}


@pytest.mark.parametrize("profile", ["hami", "volcano-vgpu"])
def test_a_share_is_the_card_memory_times_the_share_rounded_down(profile: str) -> None:
    # 15109 * 33 / 100 = 4985.97 -> 4985 MiB
    assert allotted(profile, SHARE) == [("share", "0", 4985, None)]


@pytest.mark.parametrize("profile", ["hami", "volcano-vgpu"])
def test_a_whole_card_is_all_of_each_card(profile: str) -> None:
    assert allotted(profile, WHOLE) == [("whole", "0", 15109, 100), ("whole", "1", 24576, 100)]


@pytest.mark.parametrize("profile", ["cce", "hami", "volcano-vgpu"])
def test_memory_in_mib_is_as_asked(profile: str) -> None:
    pod = dict(MIB_POD, request={"gpus": 1, "memory_mib": 1024})  # a CCE-sized request
    assert allotted(profile, pod) == [("mib", "1", 1024, None)]


def test_hami_absolute_memory_beside_the_pods_of_other_forms() -> None:
    assert allotted("hami", SHARE, MIB_POD) == [
        ("share", "0", 4985, None),
        ("mib", "1", 1000, None),
    ]
