"""Every request form of HAMi and Volcano vGPU, read as their schedulers read it.

HAMi v2.10.0: `GenerateResourceRequests` in pkg/device/nvidia/device.go (memory, else the
share, else whole cards; a share above 100 clamped, 0 ignored). Volcano v1.15.0:
`ExtractResourceRequest` in pkg/scheduler/api/devices/util.go (a memory alone is one card;
the share taken as given). Per-card values times N are the totals; the share stays per card.
"""

from __future__ import annotations

from typing import Any

import pytest

from advisor.core.model import Request
from advisor.core.profiles import profile_for
from advisor.podspec import PodGpu, parse_pod

Limits = dict[str, Any]


def pod(*limits: Limits, requests: Limits | None = None) -> dict[str, Any]:
    containers: list[dict[str, Any]] = [
        {"name": f"c{i}", "resources": {"limits": dict(one)}} for i, one in enumerate(limits)
    ]
    if requests is not None:
        containers[0]["resources"]["requests"] = dict(requests)
    return {
        "metadata": {"name": "p", "namespace": "ml", "uid": "u"},
        "spec": {"containers": containers},
        "status": {"phase": "Pending"},
    }


def parsed(obj: dict[str, Any]) -> PodGpu:
    result = parse_pod(obj)
    assert result is not None
    return result


GPU, MEM, PCT, CORES = (
    "nvidia.com/gpu",
    "nvidia.com/gpumem",
    "nvidia.com/gpumem-percentage",
    "nvidia.com/gpucores",
)
V_NUM, V_MEM, V_PCT, V_CORES = (
    "volcano.sh/vgpu-number",
    "volcano.sh/vgpu-memory",
    "volcano.sh/vgpu-memory-percentage",
    "volcano.sh/vgpu-cores",
)


@pytest.mark.parametrize(
    ("limits", "expected"),
    [
        # A count alone: whole cards (HAMi's memory falls to 100 %).
        ({GPU: 1}, Request(gpus=1, memory_mib=0)),
        ({GPU: "2"}, Request(gpus=2, memory_mib=0)),
        # Memory 0 is "not given" in GenerateResourceRequests: whole cards again.
        ({GPU: 1, MEM: 0}, Request(gpus=1, memory_mib=0)),
        # Per card times N: 2 x 3000 MiB, 2 x 30 %.
        ({GPU: 2, MEM: 3000, CORES: 30}, Request(gpus=2, memory_mib=6000, core_percent=60)),
        # The share stays per card.
        ({GPU: 2, PCT: 50}, Request(gpus=2, memory_mib=0, memory_percent=50)),
        # Above 100 clamped to 100; 0 ignored (not positive), leaving whole cards.
        ({GPU: 1, PCT: 150}, Request(gpus=1, memory_mib=0, memory_percent=100)),
        ({GPU: 1, PCT: 0}, Request(gpus=1, memory_mib=0)),
        # Both kept: Fit reads the MiB, ComputeScore the share (the profile decides).
        (
            {GPU: 2, MEM: 1024, PCT: 30},
            Request(gpus=2, memory_mib=2048, memory_percent=30),
        ),
        # Whole cards with cores: 3 x 30 %.
        ({GPU: 3, CORES: 30}, Request(gpus=3, memory_mib=0, core_percent=90)),
        # No count: the webhook's DefaultGPUNum, 1.
        ({PCT: 25}, Request(gpus=1, memory_mib=0, memory_percent=25)),
        ({MEM: "2Ki"}, Request(gpus=1, memory_mib=2048)),
    ],
)
def test_hami_request_forms(limits: Limits, expected: Request) -> None:
    result = parsed(pod(limits))
    assert result.dialect == "hami"
    assert result.problems == ()
    assert result.request == expected
    assert profile_for("hami").request_problem(expected) is None


@pytest.mark.parametrize(
    ("limits", "expected"),
    [
        ({V_NUM: 2}, Request(gpus=2, memory_mib=0)),
        # Memory without a count: one card.
        ({V_MEM: 1024}, Request(gpus=1, memory_mib=1024)),
        ({V_MEM: 1024, V_CORES: 20}, Request(gpus=1, memory_mib=1024, core_percent=20)),
        # 2 cards x 25 % of each, 2 x 10 % cores.
        (
            {V_NUM: 2, V_PCT: 25, V_CORES: 10},
            Request(gpus=2, memory_mib=0, core_percent=20, memory_percent=25),
        ),
        # Both kept: Volcano's share wins over the MiB (the profile decides).
        ({V_NUM: 1, V_MEM: 2048, V_PCT: 50}, Request(gpus=1, memory_mib=2048, memory_percent=50)),
        ({V_NUM: 2, V_PCT: 100}, Request(gpus=2, memory_mib=0, memory_percent=100)),
    ],
)
def test_volcano_vgpu_request_forms(limits: Limits, expected: Request) -> None:
    result = parsed(pod(limits))
    assert result.dialect == "volcano-vgpu"
    assert result.problems == ()
    assert result.request == expected
    assert profile_for("volcano-vgpu").request_problem(expected) is None


def test_requests_count_when_limits_lack_the_key() -> None:
    result = parsed(pod({GPU: 2}, requests={PCT: 40}))
    assert result.request == Request(gpus=2, memory_mib=0, memory_percent=40)


def test_cce_dialect_is_unchanged() -> None:
    obj = pod({"volcano.sh/gpu-mem.128Mi": 8, "volcano.sh/gpu-core.percentage": 10})
    obj["metadata"]["labels"] = {"volcano.sh/gpu-num": "2"}
    result = parsed(obj)
    assert result.dialect == "cce"
    assert result.request == Request(gpus=2, memory_mib=8 * 128, core_percent=10)


def test_whole_cards_break_cce_rules_only() -> None:
    whole = parsed(pod({GPU: 1})).request
    assert whole is not None
    assert whole.whole_card
    assert profile_for("cce").request_problem(whole) is not None
    assert profile_for("hami").request_problem(whole) is None


@pytest.mark.parametrize(
    ("containers", "expected"),
    [
        # Shares of the same cards add up: 30 % + 40 % of each of 2 cards, cores 2x10 + 2x5.
        (
            ({GPU: 2, PCT: 30, CORES: 10}, {GPU: 2, PCT: 40, CORES: 5}),
            Request(gpus=2, memory_mib=0, core_percent=30, memory_percent=70),
        ),
        (
            ({V_NUM: 1, V_MEM: 1000}, {V_MEM: 500}),
            Request(gpus=1, memory_mib=1500),
        ),
    ],
)
def test_containers_in_one_form_add_up(containers: tuple[Limits, ...], expected: Request) -> None:
    result = parsed(pod(*containers))
    assert result.problems == ()
    assert result.request == expected


@pytest.mark.parametrize(
    ("containers", "problem"),
    [
        (
            ({GPU: 1, PCT: 30}, {GPU: 1, MEM: 1024}),
            "2 GPU containers asking whole cards, or memory in different forms "
            "(MiB, a share of the card), are not modelled",
        ),
        (
            ({GPU: 1}, {GPU: 1}),
            "2 GPU containers asking whole cards, or memory in different forms "
            "(MiB, a share of the card), are not modelled",
        ),
        (({GPU: 1, PCT: 60}, {GPU: 1, PCT: 50}), "2 GPU containers ask 110% of each card together"),
    ],
)
def test_containers_the_model_cannot_join(containers: tuple[Limits, ...], problem: str) -> None:
    result = parsed(pod(*containers))
    assert result.request is None
    assert result.problems == (problem,)
    assert all(c.request is not None for c in result.containers)
