"""Card health through the whole exporter: `xgpu-exporter` over the fake libnvidia-ml.so.1,
with a critical Xid event, uncorrectable ECC errors or a failed row remapping injected on
one card while it runs. `xgpu_device_health` turns 1 for that card only, the exporter's log
says why, and the card turns healthy again as designed: after `--nvml.xid-hold` for an Xid,
once the driver's counters are clear (a card reset) for ECC and row remapping.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.exporter.fakenvml.state import FakeCard, FakeNvml, FakeState
from tests.realparts import Exporter

pytestmark = pytest.mark.realservices  # xgpu-exporter processes

UUID = {i: f"GPU-{i}{i}{i}{i}{i}{i}{i}{i}-health" for i in range(4)}
XID_HOLD_S = 1.0
Health = dict[str, float]


def healthy_state() -> FakeState:
    return FakeState(cards=[FakeCard(UUID[i], mem_used=(i + 1) * 2**30) for i in range(4)])


@pytest.fixture(scope="module")
def fake(fake_nvml_session: FakeNvml, tmp_path_factory: pytest.TempPathFactory) -> FakeNvml:
    return fake_nvml_session.with_own_state(tmp_path_factory.mktemp("state"), healthy_state())


@pytest.fixture(scope="module")
def exporter(start_exporter: Callable[..., Exporter], fake: FakeNvml) -> Exporter:
    args = [
        "--node", "gpu-node-1",
        "--no-collector.kubernetes",
        "--no-collector.attribution",
        "--collection.freshness", "0",
        f"--nvml.xid-hold={XID_HOLD_S * 1000:g}ms",
    ]  # fmt: skip
    return start_exporter(args, fake.env())


@pytest.fixture
def state(exporter: Exporter, fake: FakeNvml) -> Iterator[FakeState]:
    """A healthy state to change and `fake.write()`; afterwards every card is healthy again."""
    assert health(exporter.metrics_when(all_healthy)) == dict.fromkeys("0123", 0.0)
    yield healthy_state()
    fake.write(healthy_state())
    assert health(exporter.metrics_when(all_healthy)) == dict.fromkeys("0123", 0.0)


def health(text: str) -> Health:
    found: Health = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "xgpu_device_health":
                index = sample.labels["gpu_index"]
                assert sample.labels["gpu_uuid"] == UUID[int(index)], sample
                found[index] = sample.value
    return found


def nvml_success(text: str) -> float | None:
    return next(
        (
            s.value
            for f in text_string_to_metric_families(text)
            for s in f.samples
            if s.name == "xgpu_exporter_collector_success" and s.labels["collector"] == "nvml"
        ),
        None,
    )


def all_healthy(text: str) -> bool:
    return health(text) == dict.fromkeys("0123", 0.0)


def only_unhealthy(index: str) -> Callable[[str], bool]:
    return lambda text: health(text) == {i: float(i == index) for i in "0123"}


def log_lines(exporter: Exporter, message: str) -> list[str]:
    return [line for line in exporter.log().splitlines() if f'msg="{message}"' in line]


def test_a_critical_xid_holds_its_card_unhealthy_for_the_hold_only(
    exporter: Exporter, fake: FakeNvml, state: FakeState
) -> None:
    # Xid 13 is an application's fault, not the card's; 79: the card fell off the bus.
    state.xids = [(1, 13), (2, 79)]
    raised = time.monotonic()
    fake.write(state)
    text = exporter.metrics_when(only_unhealthy("2"))
    assert health(text) == {"0": 0, "1": 0, "2": 1, "3": 0}
    assert nvml_success(text) == 1  # an unhealthy card is a reading, not a failed one
    text = exporter.metrics_when(all_healthy)  # no new event: the hold runs out
    assert all_healthy(text)
    assert time.monotonic() - raised >= XID_HOLD_S  # not before the hold

    # each event counts once; a new one (double-bit ECC, on card 0) starts a new hold
    state.xids.append((0, 48))
    fake.write(state)
    assert only_unhealthy("0")(exporter.metrics_when(only_unhealthy("0")))
    assert all_healthy(exporter.metrics_when(all_healthy))
    unhealthy = log_lines(exporter, "card unhealthy")
    assert any(f"gpu_uuid={UUID[2]}" in line and "problems=" in line for line in unhealthy)
    assert any("gpu_index=2 " in line and '"xid 79"' in line for line in unhealthy)
    assert any("gpu_index=0 " in line and '"xid 48"' in line for line in unhealthy)
    assert not any("gpu_index=1 " in line for line in unhealthy)
    assert len(log_lines(exporter, "card healthy again")) >= 2


@pytest.mark.parametrize(
    ("index", "inject", "why"),
    [
        ("1", lambda card: setattr(card, "ecc_uncorrected", 2), "uncorrectable ECC errors: 2"),
        ("3", lambda card: setattr(card, "remap_failed", True), "row remapping failed"),
    ],
    ids=["uncorrectable-ecc", "row-remap-failure"],
)
def test_a_failing_card_is_unhealthy_until_its_counters_clear(
    exporter: Exporter,
    fake: FakeNvml,
    state: FakeState,
    index: str,
    inject: Callable[[FakeCard], None],
    why: str,
) -> None:
    inject(state.cards[int(index)])
    # what a healthy card may show: corrected errors, corrected rows, a remap pending reset
    for other in (c for i, c in enumerate(state.cards) if i != int(index)):
        other.ecc_corrected, other.remap_pending = 40, True
    fake.write(state)
    text = exporter.metrics_when(only_unhealthy(index))
    assert health(text) == {i: float(i == index) for i in "0123"}
    assert nvml_success(text) == 1
    assert f'xgpu_card_memory_used_bytes{{gpu_index="{index}"' in text  # still read
    logged = [line for line in log_lines(exporter, "card unhealthy") if why in line]
    assert any(f"gpu_index={index} " in line for line in logged)
    # The `state` fixture writes the healthy state back (the counters a card reset clears)
    # and waits for every card to read healthy again.
