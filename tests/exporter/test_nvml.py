"""exporter.nvml against the real nvidia-ml-py bindings over the fake libnvidia-ml.so.1."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from exporter.nvml import (
    CardReading,
    NvmlError,
    NvmlReader,
    NvmlReading,
    NvmlUnavailable,
    ProcessReading,
)
from tests.exporter.fakenvml.state import (
    DRIVER_NOT_LOADED,
    FUNCTION_NOT_FOUND,
    GPU_IS_LOST,
    NO_PERMISSION,
    UNINITIALIZED,
    UNKNOWN,
    FakeCard,
    FakeFault,
    FakeHang,
    FakeNvml,
    FakeProcess,
    FakeSample,
    FakeSampleRace,
    FakeState,
)
from tests.wait import wait_until

GIB = 2**30
MakeReader = Callable[..., NvmlReader]


def two_cards() -> FakeState:
    return FakeState(
        driver="550.54.15",
        cards=[
            FakeCard("GPU-0000", mem_total=16 * GIB, mem_used=5 * GIB, util=37),
            FakeCard("GPU-1111", name="NVIDIA A100-SXM4-80GB", mem_total=80 * GIB, util=0),
        ],
        processes=[
            FakeProcess(card=0, pid=1234, mem=3 * GIB),
            FakeProcess(card=0, pid=1235, mem=None),
            FakeProcess(card=1, pid=4321, mem=GIB),
        ],
        samples=[FakeSample(card=0, pid=1234, sm=20), FakeSample(card=1, pid=4321, sm=250)],
    )


def card(index: int, reading: NvmlReading) -> CardReading:
    (found,) = [c for c in reading.cards if c.index == index]
    return found


def test_reads_cards_and_processes(fake_nvml: FakeNvml, make_reader: MakeReader) -> None:
    fake_nvml.write(two_cards())

    reading = make_reader().read()

    assert reading == NvmlReading(
        driver_version="550.54.15",
        cards=(
            CardReading(0, "GPU-0000", "Tesla T4", 16 * GIB, 5 * GIB, 0.37, True, ()),
            CardReading(1, "GPU-1111", "NVIDIA A100-SXM4-80GB", 80 * GIB, 0, 0.0, True, ()),
        ),
        processes=(  # pid, card, memory, SM share (250 % from NVML is clamped to 1)
            ProcessReading(1234, 0, 3 * GIB, 0.2),
            ProcessReading(1235, 0, None, 0.0),  # memory not available; no sample: idle
            ProcessReading(4321, 1, GIB, 1.0),
        ),
        errors=(),
    )


def test_sees_the_state_change_between_reads(fake_nvml: FakeNvml, make_reader: MakeReader) -> None:
    state = two_cards()
    fake_nvml.write(state)
    reader = make_reader()
    assert card(0, reader.read()).memory_used_bytes == 5 * GIB

    state.cards[0].mem_used, state.cards[0].util = 9 * GIB, 90
    state.cards.append(FakeCard("GPU-2222"))
    state.processes = [FakeProcess(card=2, pid=77, mem=GIB)]
    fake_nvml.write(state)
    reading = reader.read()

    assert (card(0, reading).memory_used_bytes, card(0, reading).utilization_ratio) == (
        9 * GIB,
        0.9,
    )
    assert [c.uuid for c in reading.cards] == ["GPU-0000", "GPU-1111", "GPU-2222"]
    assert [(p.pid, p.gpu_index) for p in reading.processes] == [(77, 2)]


def test_memory_v2_leaves_out_reserved_and_v1_is_the_fallback(
    fake_nvml: FakeNvml, make_reader: MakeReader
) -> None:
    state = FakeState(cards=[FakeCard("GPU-0000", mem_used=4 * GIB, mem_reserved=GIB)])
    fake_nvml.write(state)
    reader = make_reader()
    assert card(0, reader.read()).memory_used_bytes == 4 * GIB

    # a driver without nvmlDeviceGetMemoryInfo_v2 (older than R510)
    state.faults = [FakeFault("nvmlDeviceGetMemoryInfo_v2", FUNCTION_NOT_FOUND)]
    fake_nvml.write(state)
    reading = reader.read()
    assert card(0, reading).memory_used_bytes == 5 * GIB
    assert reading.errors == ()


def test_processes_come_from_v2_on_a_driver_without_v3(
    fake_nvml: FakeNvml, make_reader: MakeReader
) -> None:
    state = two_cards()
    # drivers before R510 have no nvmlDeviceGetComputeRunningProcesses_v3
    state.faults = [FakeFault("nvmlDeviceGetComputeRunningProcesses_v3", FUNCTION_NOT_FOUND)]
    fake_nvml.write(state)
    reader = make_reader()

    for _ in range(2):  # the fallback sticks: no error on later reads either
        reading = reader.read()
        assert reading.errors == ()
        assert [(p.pid, p.gpu_index, p.memory_used_bytes) for p in reading.processes] == [
            (1234, 0, 3 * GIB),
            (1235, 0, None),
            (4321, 1, GIB),
        ]
    # other failures of _v3 are no reason to switch: they are reported as before
    state.faults = [FakeFault("nvmlDeviceGetComputeRunningProcesses_v3", UNKNOWN, card=1)]
    fake_nvml.write(state)
    fresh = make_reader().read()
    assert fresh.errors == (NvmlError("nvmlDeviceGetComputeRunningProcesses_v3", "unknown"),)
    assert [p.pid for p in fresh.processes] == [1234, 1235]
    assert not card(1, fresh).healthy


def test_lost_gpu_is_unhealthy_and_the_other_card_is_still_read(
    fake_nvml: FakeNvml, make_reader: MakeReader
) -> None:
    state = two_cards()
    fake_nvml.write(state)
    reader = make_reader()
    reader.read()

    state.cards[1].lost = True
    fake_nvml.write(state)
    reading = reader.read()

    lost = card(1, reading)
    assert (lost.uuid, lost.healthy, lost.health_problems) == ("GPU-1111", False, ("gpu lost",))
    assert (lost.memory_total_bytes, lost.utilization_ratio) == (None, None)
    assert card(0, reading).healthy
    assert card(0, reading).memory_used_bytes == 5 * GIB
    assert reading.errors == (NvmlError("nvmlDeviceGetHandleByIndex_v2", "gpu_is_lost"),)
    assert {p.gpu_index for p in reading.processes} == {0}


def test_gpu_lost_in_the_middle_of_a_card_stops_reading_that_card(
    fake_nvml: FakeNvml, make_reader: MakeReader
) -> None:
    state = two_cards()
    state.faults = [FakeFault("nvmlDeviceGetMemoryInfo_v2", GPU_IS_LOST, card=0)]
    fake_nvml.write(state)

    reading = make_reader().read()

    assert card(0, reading).health_problems == ("gpu lost",)
    assert card(0, reading).uuid == "GPU-0000"
    assert card(0, reading).utilization_ratio is None  # not asked after the loss
    assert reading.errors == (NvmlError("nvmlDeviceGetMemoryInfo_v2", "gpu_is_lost"),)
    assert card(1, reading).healthy


def test_unknown_error_marks_the_card_and_keeps_reading_it(
    fake_nvml: FakeNvml, make_reader: MakeReader
) -> None:
    state = two_cards()
    state.faults = [FakeFault("nvmlDeviceGetUtilizationRates", UNKNOWN, card=0)]
    fake_nvml.write(state)

    reading = make_reader().read()

    first = card(0, reading)
    assert first.utilization_ratio is None
    assert first.memory_used_bytes == 5 * GIB
    assert first.health_problems == ("unknown error in nvmlDeviceGetUtilizationRates",)
    assert reading.errors == (NvmlError("nvmlDeviceGetUtilizationRates", "unknown"),)
    assert card(1, reading).healthy


def test_not_supported_fields_are_absent_without_errors(
    fake_nvml: FakeNvml, make_reader: MakeReader
) -> None:
    state = two_cards()
    state.cards[0].ecc_uncorrected = 5  # not visible: ECC reads are unsupported on card 0
    state.unsupported = [
        (0, name)
        for name in (
            "nvmlDeviceGetUtilizationRates",
            "nvmlDeviceGetTotalEccErrors",
            "nvmlDeviceGetRemappedRows",
            "nvmlDeviceGetProcessUtilization",
            "nvmlDeviceGetSupportedEventTypes",
        )
    ]
    fake_nvml.write(state)

    reading = make_reader().read()

    assert reading.errors == ()
    assert card(0, reading).utilization_ratio is None
    assert card(0, reading).healthy
    assert [(p.pid, p.sm_utilization_ratio) for p in reading.processes] == [
        (1234, None),
        (1235, None),
        (4321, 1.0),
    ]


def test_other_failures_carry_function_and_code(
    fake_nvml: FakeNvml, make_reader: MakeReader
) -> None:
    state = two_cards()
    state.faults = [
        FakeFault("nvmlSystemGetDriverVersion", NO_PERMISSION),
        FakeFault("nvmlDeviceGetComputeRunningProcesses_v3", NO_PERMISSION, card=1),
    ]
    fake_nvml.write(state)

    reading = make_reader().read()

    assert reading.driver_version is None
    assert reading.errors == (
        NvmlError("nvmlSystemGetDriverVersion", "no_permission"),
        NvmlError("nvmlDeviceGetComputeRunningProcesses_v3", "no_permission"),
    )
    assert all(c.healthy for c in reading.cards)  # a refused query says nothing about health
    assert {p.gpu_index for p in reading.processes} == {0}


def test_driver_not_loaded_raises_and_the_reader_recovers(
    fake_nvml: FakeNvml, make_reader: MakeReader
) -> None:
    reader = make_reader()
    fake_nvml.remove()
    with pytest.raises(NvmlUnavailable) as refused:
        reader.read()
    assert refused.value.error == NvmlError("nvmlInitWithFlags", "driver_not_loaded")

    fake_nvml.write(two_cards())
    assert len(reader.read().cards) == 2


@pytest.mark.parametrize(
    ("code", "name"),
    [(DRIVER_NOT_LOADED, "driver_not_loaded"), (UNINITIALIZED, "uninitialized")],
)
def test_driver_level_failure_mid_session_reinitialises_on_the_next_read(
    fake_nvml: FakeNvml, make_reader: MakeReader, code: int, name: str
) -> None:
    state = two_cards()
    fake_nvml.write(state)
    reader = make_reader()
    reader.read()

    state.faults = [FakeFault("nvmlDeviceGetCount_v2", code)]
    fake_nvml.write(state)
    with pytest.raises(NvmlUnavailable) as gone:
        reader.read()
    assert gone.value.error == NvmlError("nvmlDeviceGetCount_v2", name)

    # the next read initialises NVML again: an init that fails now shows it is called
    state.faults = [FakeFault("nvmlInitWithFlags", DRIVER_NOT_LOADED)]
    fake_nvml.write(state)
    with pytest.raises(NvmlUnavailable) as refused:
        reader.read()
    assert refused.value.error == NvmlError("nvmlInitWithFlags", "driver_not_loaded")

    state.faults = []
    fake_nvml.write(state)
    reading = reader.read()
    assert (len(reading.cards), reading.errors) == (2, ())


@pytest.mark.parametrize(
    "function",
    [
        "nvmlDeviceGetMemoryInfo_v2",
        "nvmlDeviceGetComputeRunningProcesses_v3",
        "nvmlDeviceGetProcessUtilization",
        "nvmlDeviceRegisterEvents",
        "nvmlEventSetWait_v2",
    ],
)
def test_the_driver_going_away_in_any_call_ends_the_reading(
    fake_nvml: FakeNvml, make_reader: MakeReader, function: str
) -> None:
    # calls with a fallback or an expected failure must not take it for a card's problem
    state = two_cards()
    state.faults = [FakeFault(function, DRIVER_NOT_LOADED)]
    fake_nvml.write(state)
    with pytest.raises(NvmlUnavailable) as gone:
        make_reader().read()
    assert gone.value.error == NvmlError(function, "driver_not_loaded")


def test_a_hung_call_times_out_and_later_reads_do_not_wait_for_it(
    fake_nvml: FakeNvml, make_reader: MakeReader
) -> None:
    state = two_cards()
    state.hangs = [FakeHang("nvmlDeviceGetUtilizationRates", ms=2000, card=1)]
    fake_nvml.write(state)
    reader = make_reader(call_timeout_s=0.2)
    stuck = (NvmlError("nvmlDeviceGetUtilizationRates", "timeout"),)

    started = time.monotonic()
    first = reader.read()
    first_took = time.monotonic() - started
    second = reader.read()  # the call is still stuck in the library
    both_took = time.monotonic() - started

    assert (first.cards, first.processes, first.errors) == ((), (), stuck)
    assert (second.cards, second.errors) == ((), stuck)
    assert first_took < 1.2  # the hang lasts 2 s: the read gave up after ~0.2 s
    assert both_took < 1.2  # the second read did not queue behind the hung call

    state.hangs = []
    fake_nvml.write(state)

    def settled() -> NvmlReading | None:
        reading = reader.read()
        return None if reading.errors else reading

    reading = wait_until(settled, timeout_s=10, what="the hung call came back")
    assert (len(reading.cards), reading.errors) == (2, ())


def test_ecc_and_row_remapping_failures_make_a_card_unhealthy(
    fake_nvml: FakeNvml, make_reader: MakeReader
) -> None:
    state = two_cards()
    state.cards[0].ecc_uncorrected = 3
    state.cards[1].remap_failed = True
    state.cards.append(FakeCard("GPU-2222", ecc_corrected=40, remap_pending=True))
    fake_nvml.write(state)

    reading = make_reader().read()

    assert card(0, reading).health_problems == ("uncorrectable ECC errors: 3",)
    assert card(1, reading).health_problems == ("row remapping failed",)
    assert card(2, reading).healthy  # corrected errors and a pending remap are no failure


def test_process_sm_share_comes_from_samples_newer_than_the_last_read(
    fake_nvml: FakeNvml, make_reader: MakeReader
) -> None:
    state = FakeState(
        cards=[FakeCard("GPU-0000")],
        processes=[FakeProcess(card=0, pid=10, mem=GIB), FakeProcess(card=0, pid=11, mem=GIB)],
        samples=[
            FakeSample(card=0, pid=10, sm=10, ts=1_000),
            FakeSample(card=0, pid=10, sm=40, ts=2_000),
            FakeSample(card=0, pid=11, sm=5, ts=1_500),
        ],
    )
    fake_nvml.write(state)
    reader = make_reader()

    shares = {p.pid: p.sm_utilization_ratio for p in reader.read().processes}
    assert shares == {10: 0.4, 11: 0.05}

    state.samples.append(FakeSample(card=0, pid=11, sm=60, ts=3_000))
    fake_nvml.write(state)
    shares = {p.pid: p.sm_utilization_ratio for p in reader.read().processes}
    assert shares == {10: 0.0, 11: 0.6}  # pid 10 has no sample since the last read


@pytest.mark.parametrize(
    ("races", "errors", "shares"),
    [  # pid 1235 has no sample: idle (0.0) when the samples were read, else unknown
        (1, (), {1234: 0.2, 1235: 0.0, 4321: 1.0}),
        (
            2,
            (NvmlError("nvmlDeviceGetProcessUtilization", "insufficient_size"),),
            {1234: None, 1235: None, 4321: 1.0},
        ),
    ],
    ids=["once-retried", "twice-reported"],
)
def test_samples_arriving_between_pynvmls_two_calls_get_one_retry(
    fake_nvml: FakeNvml,
    make_reader: MakeReader,
    races: int,
    errors: tuple[NvmlError, ...],
    shares: dict[int, float | None],
) -> None:
    state = two_cards()
    state.sample_races = [FakeSampleRace(card=0, times=races)]  # a sample after the sizing
    fake_nvml.write(state)
    reader = make_reader()

    reading = reader.read()
    assert reading.errors == errors
    assert {p.pid: p.sm_utilization_ratio for p in reading.processes} == shares
    assert all(c.healthy for c in reading.cards)  # a race is no fault of the card

    later = reader.read()  # the race is over: that line struck `races` times
    assert (later.errors, later.processes[0].sm_utilization_ratio) == ((), 0.2)


def test_a_closed_reader_refuses_to_read(fake_nvml: FakeNvml) -> None:
    reader = NvmlReader()
    reader.read()
    reader.close()
    with pytest.raises(RuntimeError):
        reader.read()
