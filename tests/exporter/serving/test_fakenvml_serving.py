"""`xgpu-exporter` over the fake libnvidia-ml.so.1, a scenario's allotments and a fake /proc.

The state file is rewritten while the exporter runs: a card lost, a hung driver, the driver
gone and back. The exporter keeps serving the allotment series throughout.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path

import aiohttp
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.exporter.fakenvml.state import (
    FakeCard,
    FakeHang,
    FakeNvml,
    FakeProcess,
    FakeSample,
    FakeState,
    write_procfs,
)
from tests.realparts import Exporter, Prometheus, Sample

pytestmark = pytest.mark.realservices  # xgpu-exporter processes and Prometheus

DATA = Path(__file__).resolve().parents[1] / "data"
GIB, MIB = 1024**3, 1024**2
UUID = {
    i: f"GPU-{str(i) * 8}-{str(i) * 4}-{str(i) * 4}-{str(i) * 4}-{str(i) * 12}" for i in range(4)
}
INFER_UID = "0f0e0d0c-0b0a-0908-0706-050403020100"  # team-a/infer-0's annotation
TRAIN_CID = "4b1e2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f9"  # team-b/train-1

CGROUPS = {
    # infer-0 on card 0: cgroup v2, systemd driver, containerd
    4242: "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
    f"{INFER_UID.replace('-', '_')}.slice/cri-containerd-{'e' * 64}.scope\n",
    # infer-0 on card 1: cgroup v1, cgroupfs driver
    4444: f"12:memory:/kubepods/burstable/pod{INFER_UID}/{'e' * 64}\n11:pids:/kubepods\n",
    # train-1 on card 0, known by container id (cri-o)
    5555: f"0::/kubepods.slice/kubepods-besteffort.slice/crio-{TRAIN_CID}.scope\n",
    # a host process on card 0 (pid 6666 on card 2 has no /proc entry at all)
    4343: "0::/system.slice/render-farm.service\n",
}


def healthy_state() -> FakeState:
    return FakeState(
        driver="550.54.15",
        cards=[
            FakeCard(UUID[i], mem_used=(i + 1) * GIB, util=10 * (i + 1), mem_reserved=0)
            for i in range(4)
        ],
        processes=[
            FakeProcess(0, 4242, GIB),
            FakeProcess(1, 4444, 512 * MIB),
            FakeProcess(0, 5555, 768 * MIB),
            FakeProcess(0, 4343, 256 * MIB),
            FakeProcess(2, 6666, 128 * MIB),
        ],
        samples=[FakeSample(0, 4242, 12), FakeSample(1, 4444, 7), FakeSample(0, 5555, 20)],
    )


@pytest.fixture(scope="module")
def fake(fake_nvml_session: FakeNvml, tmp_path_factory: pytest.TempPathFactory) -> FakeNvml:
    return fake_nvml_session.with_own_state(tmp_path_factory.mktemp("state"), healthy_state())


@pytest.fixture(scope="module")
def procfs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_procfs(tmp_path_factory.mktemp("proc"), CGROUPS)


@pytest.fixture(scope="module")
def exporter(start_exporter: Callable[..., Exporter], fake: FakeNvml, procfs: Path) -> Exporter:
    args = [
        "--scenario", str(DATA / "exporter-node.yaml"),
        "--node", "gpu-node-1",
        "--path.procfs", str(procfs),
        "--collection.freshness", "0",
        "--collection.timeout", "0.5",
        "--nvml.call-timeout", "2",
    ]  # fmt: skip
    return start_exporter(args, fake.env())


@pytest.fixture
def state(fake: FakeNvml) -> Iterator[FakeState]:
    """A healthy state to modify and `fake.write()`; restored after the test."""
    yield healthy_state()
    fake.write(healthy_state())


def samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(text: str, name: str, **labels: str) -> float | None:
    found = [
        v
        for (n, ls), v in samples(text).items()
        if n == name and all((k, x) in ls for k, x in labels.items())
    ]
    assert len(found) <= 1, (name, labels, found)
    return found[0] if found else None


def by(result: list[Sample], *keys: str) -> dict[tuple[str, ...], float]:
    return {tuple(s["metric"].get(k, "") for k in keys): float(s["value"][1]) for s in result}


def test_prometheus_sees_usage_attributed_to_containers(
    exporter: Exporter, start_prometheus: Callable[..., Prometheus]
) -> None:
    prometheus = start_prometheus({exporter.url: "gpu-node-1"})
    used = prometheus.wait_for("xgpu_memory_used", lambda r: len(r) == 3)
    assert by(used, "pod", "container", "gpu_index", "gpu_uuid") == {
        ("infer-0", "server", "0", UUID[0]): GIB,
        ("infer-0", "server", "1", UUID[1]): 512 * MIB,
        ("train-1", "train-1", "0", UUID[0]): 768 * MIB,
    }
    core = by(prometheus.query("xgpu_core_percentage_used"), "pod", "gpu_index")
    assert core == {("infer-0", "0"): 12, ("infer-0", "1"): 7, ("train-1", "0"): 20}
    unattributed = by(prometheus.query("xgpu_card_unattributed_memory_bytes"), "gpu_index")
    assert unattributed == {("0",): 256 * MIB, ("1",): 0, ("2",): 128 * MIB, ("3",): 0}
    info = by(
        prometheus.query("xgpu_card_info"), "gpu_index", "gpu_uuid", "model", "driver_version"
    )
    assert info == {(str(i), UUID[i], "Tesla T4", "550.54.15"): 1 for i in range(4)}
    assert by(prometheus.query("xgpu_card_memory_used_bytes"), "gpu_index")[("2",)] == 3 * GIB
    assert by(prometheus.query("xgpu_card_utilization_ratio"), "gpu_index")[("1",)] == 0.2
    assert by(prometheus.query("xgpu_device_health"), "gpu_index") == {
        (str(i),): 0 for i in range(4)
    }
    success = by(prometheus.query("xgpu_exporter_collector_success"), "collector")
    assert success == {("nvml",): 1, ("scenario",): 1, ("attribution",): 1}


def test_a_lost_card_turns_unhealthy_while_the_rest_is_served(
    exporter: Exporter, fake: FakeNvml, state: FakeState
) -> None:
    state.cards[1].lost = True
    fake.write(state)
    text = exporter.metrics_when(lambda t: value(t, "xgpu_device_health", gpu_index="1") == 1)
    assert value(text, "xgpu_device_health", gpu_index="1") == 1
    assert value(text, "xgpu_device_health", gpu_index="0") == 0
    assert value(text, "xgpu_exporter_collector_success", collector="nvml") == 0
    errors = value(text, "xgpu_exporter_nvml_errors_total", code="gpu_is_lost")
    assert errors is not None
    assert errors >= 1
    # the allotment on the lost card keeps its labels and value
    assert (
        value(text, "xgpu_memory_total", pod="infer-0", gpu_index="1", gpu_uuid=UUID[1]) == 4 * GIB
    )
    assert value(text, "xgpu_memory_used", pod="infer-0", gpu_index="0") == GIB
    fake.write(healthy_state())
    text = exporter.metrics_when(lambda t: value(t, "xgpu_device_health", gpu_index="1") == 0)
    assert value(text, "xgpu_exporter_collector_success", collector="nvml") == 1


def test_a_hung_driver_does_not_hold_up_metrics(
    exporter: Exporter, fake: FakeNvml, state: FakeState
) -> None:
    state.hangs.append(FakeHang("nvmlDeviceGetUtilizationRates", 4000))
    fake.write(state)
    for _ in range(2):  # the first scrape starts the stuck read, the second joins it
        started = time.monotonic()
        text = exporter.metrics()
        elapsed = time.monotonic() - started
        assert elapsed < 2.5, elapsed  # the collection deadline (0.5 s), not the 4 s hang
        assert value(text, "xgpu_exporter_collector_success", collector="nvml") == 0
        assert value(text, "xgpu_memory_total", pod="train-1", gpu_index="0") == 2 * GIB
        assert value(text, "xgpu_exporter_collector_success", collector="scenario") == 1
    fake.write(healthy_state())
    text = exporter.metrics_when(
        lambda t: value(t, "xgpu_exporter_collector_success", collector="nvml") == 1
    )
    assert value(text, "xgpu_exporter_collector_success", collector="nvml") == 1
    timeouts = value(
        text,
        "xgpu_exporter_nvml_errors_total",
        function="nvmlDeviceGetUtilizationRates",
        code="timeout",
    )
    assert timeouts is not None
    assert timeouts >= 1


def test_driver_gone_then_back(exporter: Exporter, fake: FakeNvml, state: FakeState) -> None:
    fake.remove()
    text = exporter.metrics_when(lambda t: value(t, "xgpu_card_info", gpu_index="0") is None)
    assert value(text, "xgpu_exporter_collector_success", collector="nvml") == 0
    assert value(text, "xgpu_device_health", gpu_index="0") is None  # unknown, not healthy
    # allotments keep the card identities NVML last reported
    assert (
        value(text, "xgpu_memory_total", pod="infer-0", gpu_index="1", gpu_uuid=UUID[1]) == 4 * GIB
    )
    assert value(text, "xgpu_memory_used", pod="infer-0", gpu_index="1") is None
    fake.write(state)
    text = exporter.metrics_when(lambda t: value(t, "xgpu_card_info", gpu_index="0") == 1)
    assert value(text, "xgpu_exporter_collector_success", collector="nvml") == 1
    assert value(text, "xgpu_memory_used", pod="infer-0", gpu_index="1") == 512 * MIB


async def test_concurrent_scrapes_share_a_slow_collection(
    exporter: Exporter, fake: FakeNvml, state: FakeState
) -> None:
    state.hangs.append(FakeHang("nvmlDeviceGetCount_v2", 300))  # each collection >= 0.3 s
    fake.write(state)
    async with aiohttp.ClientSession() as http:

        async def scrape() -> str:
            async with http.get(exporter.url + "/metrics") as response:
                await response.read()
                return response.headers["X-Xgpu-Collection"]

        await scrape()
        sequences = await asyncio.gather(*(scrape() for _ in range(40)))
    # freshness 0: only single-flight shares; the burst lands in one (or, at an edge, two)
    assert len(set(sequences)) <= 2, sorted(set(sequences))


def test_sigterm_while_the_driver_hangs(
    start_exporter: Callable[..., Exporter],
    fake_nvml_session: FakeNvml,
    tmp_path: Path,
    procfs: Path,
) -> None:
    stuck = replace(fake_nvml_session, state_path=tmp_path / "state")
    state = healthy_state()
    state.hangs.append(FakeHang("nvmlDeviceGetCount_v2", 60_000))
    stuck.write(state)
    args = [
        "--scenario", str(DATA / "exporter-node.yaml"),
        "--node", "gpu-node-1",
        "--path.procfs", str(procfs),
        "--collection.timeout", "0.3",
    ]  # fmt: skip
    exporter = start_exporter(args, stuck.env())  # ready: its first collection gave up
    assert value(exporter.metrics(), "xgpu_exporter_collector_success", collector="nvml") == 0
    started = time.monotonic()
    assert exporter.stop() == 0  # a call stuck in the driver does not hold the exit
    assert time.monotonic() - started < 8
