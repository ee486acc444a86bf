"""Critical Xids (exporter.nvml_events) over the fake libnvidia-ml.so.1: in an NvmlReader and
through a running `xgpu-exporter`. An event names its device by a handle that may differ from
the one the card was registered with; the card is found by its UUID, and an event whose card
cannot be told holds every card unhealthy."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from exporter.nvml import CardReading, NvmlError, NvmlReader, NvmlReading
from exporter.nvml_events import UNKNOWN_DEVICE
from tests.exporter.fakenvml.state import (
    NO_PERMISSION,
    OTHER_DEVICE_UUID,
    FakeCard,
    FakeFault,
    FakeNvml,
    FakeState,
    FakeXid,
)
from tests.realparts import Exporter, start_exporter

MakeReader = Callable[..., NvmlReader]
UUIDS = ("GPU-0000", "GPU-1111", "GPU-2222")
HOLD_S = 300.0


def three_cards() -> FakeState:
    return FakeState(cards=[FakeCard(uuid) for uuid in UUIDS])


def problems(reading: NvmlReading) -> list[tuple[str, ...]]:
    return [c.health_problems for c in sorted(reading.cards, key=lambda c: c.index)]


def card(index: int, reading: NvmlReading) -> CardReading:
    (found,) = [c for c in reading.cards if c.index == index]
    return found


@pytest.fixture
def now() -> list[float]:
    return [1000.0]


@pytest.fixture
def reader(fake_nvml: FakeNvml, make_reader: MakeReader, now: list[float]) -> NvmlReader:
    """A reader that has read three healthy cards once (and so registered them)."""
    fake_nvml.write(three_cards())
    made = make_reader(xid_hold_s=HOLD_S, clock=lambda: now[0])
    assert problems(made.read()) == [(), (), ()]
    return made


def test_critical_xid_holds_the_card_unhealthy(
    fake_nvml: FakeNvml, reader: NvmlReader, now: list[float]
) -> None:
    state = three_cards()
    state.xids = [(1, 13), (0, 79)]  # 13 is an application's fault, not the card's
    fake_nvml.write(state)
    reading = reader.read()
    assert problems(reading) == [("xid 79",), (), ()]
    assert reading.errors == ()

    now[0] += HOLD_S - 1  # the event was delivered once; the hold keeps the card unhealthy
    assert not card(0, reader.read()).healthy
    now[0] += 2
    assert card(0, reader.read()).healthy


def test_an_event_naming_its_card_by_another_handle_finds_it_by_uuid(
    fake_nvml: FakeNvml, reader: NvmlReader
) -> None:
    state = three_cards()
    state.xids = [FakeXid(2, 48, handle="alias")]  # another pointer to card 2, same UUID
    fake_nvml.write(state)

    reading = reader.read()

    assert problems(reading) == [(), (), ("xid 48",)]
    assert reading.errors == ()


def test_an_event_whose_uuid_nvml_cannot_tell_holds_every_card(
    fake_nvml: FakeNvml, reader: NvmlReader, now: list[float]
) -> None:
    state = three_cards()
    state.xids = [FakeXid(1, 13, handle="invalid"), FakeXid(1, 79, handle="invalid")]
    fake_nvml.write(state)

    reading = reader.read()

    # Xid 13 is no card's fault: not even looked up; 79 could be any card's
    assert problems(reading) == [("xid 79",)] * 3
    assert reading.errors == (NvmlError("nvmlDeviceGetUUID", "invalid_argument"),)
    now[0] += HOLD_S  # the hold runs out for every card alike
    assert problems(reader.read()) == [(), (), ()]


def test_an_event_from_a_device_that_is_no_known_card_holds_every_card(
    fake_nvml: FakeNvml, reader: NvmlReader
) -> None:
    assert OTHER_DEVICE_UUID not in UUIDS
    state = three_cards()
    state.xids = [FakeXid(0, 94, handle="other")]
    fake_nvml.write(state)

    reading = reader.read()

    assert problems(reading) == [("xid 94",)] * 3
    assert reading.errors == (UNKNOWN_DEVICE,)


def test_a_failed_uuid_lookup_on_the_registered_handle_holds_that_card_only(
    fake_nvml: FakeNvml, reader: NvmlReader
) -> None:
    state = three_cards()
    state.faults = [FakeFault("nvmlDeviceGetUUID", NO_PERMISSION, card=0)]
    state.xids = [(0, 79)]  # the very pointer card 0 was registered with
    fake_nvml.write(state)

    reading = reader.read()

    assert problems(reading) == [("xid 79",), (), ()]
    assert card(0, reading).uuid == UUIDS[0]  # as last read
    refused = NvmlError("nvmlDeviceGetUUID", "no_permission")
    assert reading.errors == (refused, refused)  # reading card 0, then the event's device


def test_a_new_critical_xid_on_another_card_holds_both(
    fake_nvml: FakeNvml, reader: NvmlReader
) -> None:
    state = three_cards()
    state.xids = [FakeXid(0, 48, handle="alias")]
    fake_nvml.write(state)
    assert problems(reader.read()) == [("xid 48",), (), ()]

    state.xids.append(FakeXid(2, 119, handle="alias"))
    fake_nvml.write(state)
    assert problems(reader.read()) == [("xid 48",), (), ("xid 119",)]


# --- through the exporter process ---

PROCESS_HOLD_S = 1.0


@pytest.fixture(scope="module")
def fake(fake_nvml_session: FakeNvml, tmp_path_factory: pytest.TempPathFactory) -> FakeNvml:
    return fake_nvml_session.with_own_state(tmp_path_factory.mktemp("state"), three_cards())


@pytest.fixture(scope="module")
def exporter(fake: FakeNvml, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Exporter]:
    args = [
        "--node", "gpu-node-1",
        "--no-collector.kubernetes",
        "--no-collector.attribution",
        "--collection.freshness", "0",
        f"--nvml.xid-hold={PROCESS_HOLD_S * 1000:g}ms",
    ]  # fmt: skip
    log = tmp_path_factory.mktemp("exporter") / "exporter.log"
    started = start_exporter(args, log, env=fake.env())
    yield started
    started.stop()


def exposed(text: str, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {
        tuple(sorted(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name
    }


def health(text: str) -> list[float]:
    by_index = {dict(k)["gpu_index"]: v for k, v in exposed(text, "xgpu_device_health").items()}
    return [by_index.get(str(i), -1.0) for i in range(len(UUIDS))]


def wait_health(exporter: Exporter, wanted: list[float]) -> str:
    return exporter.metrics_when(lambda text: health(text) == wanted)


@pytest.mark.realservices  # an xgpu-exporter process
def test_the_exporter_finds_the_card_by_uuid_or_holds_every_card(
    exporter: Exporter, fake: FakeNvml
) -> None:
    assert health(wait_health(exporter, [0, 0, 0])) == [0, 0, 0]
    state = three_cards()
    state.xids = [FakeXid(1, 79, handle="alias")]
    fake.write(state)
    assert health(wait_health(exporter, [0, 1, 0])) == [0, 1, 0]
    assert health(wait_health(exporter, [0, 0, 0])) == [0, 0, 0]  # the hold ran out

    state.xids.append(FakeXid(1, 79, handle="invalid"))
    fake.write(state)
    text = wait_health(exporter, [1, 1, 1])
    assert health(text) == [1, 1, 1]
    errors = exposed(text, "xgpu_exporter_nvml_errors_total")
    assert errors[(("code", "invalid_argument"), ("function", "nvmlDeviceGetUUID"))] >= 1
    assert health(wait_health(exporter, [0, 0, 0])) == [0, 0, 0]
