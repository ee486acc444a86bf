"""The one duration grammar of both programs: Prometheus's, plus the forms the CLIs took
before (a decimal in a term; plain seconds where the caller allows them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.cli import _parser as advisor_parser
from advisor.cli import main as advisor_main
from advisor.durations import parse_duration
from exporter.cli import parse_args as exporter_args


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0", 0.0),
        ("500ms", 0.5),
        ("90s", 90.0),
        ("15m", 900.0),
        ("1h30m", 5400.0),  # 3600 + 30 * 60
        ("1h0m5s", 3605.0),
        ("1d12h", 129_600.0),  # 86400 + 12 * 3600
        ("2w", 1_209_600.0),  # 2 * 7 * 86400
        ("1y", 31_536_000.0),  # 365 * 86400, as Prometheus counts a year
        ("1y1w1d1h1m1s1ms", 32_230_861.001),  # 31536000 + 604800 + 86400 + 3600 + 60 + 1 + 0.001
        ("1.5h", 5400.0),  # a decimal, as both CLIs took before
        (" 5m ", 300.0),
    ],
)
def test_prometheus_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)
    assert parse_duration(text, plain_seconds=True) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("text", "seconds"), [("2", 2.0), ("0.5", 0.5), (".25", 0.25), ("1.", 1.0)]
)
def test_plain_seconds_only_where_allowed(text: str, seconds: float) -> None:
    assert parse_duration(text, plain_seconds=True) == seconds
    with pytest.raises(ValueError, match=r"^expected a duration like "):
        parse_duration(text)


@pytest.mark.parametrize(
    "text",
    ["", "soon", "-1", "-1s", "nan", "inf", "5x", "5 m", "h", "1h30", "m5", "1e3s", "²s"],
)
def test_what_is_no_duration(text: str) -> None:
    message = f"expected seconds or a duration like 500ms, 90s, 1h30m or 7d, got {text!r}"
    with pytest.raises(ValueError, match=r"^expected ") as failed:
        parse_duration(text, plain_seconds=True)
    assert str(failed.value) == message


@pytest.mark.parametrize("text", ["30m1h", "1m1m", "5s1ms1s"])
def test_units_go_from_the_largest_to_the_smallest_each_once(text: str) -> None:
    with pytest.raises(ValueError, match=r"^expected units from the largest to the smallest"):
        parse_duration(text)


@pytest.mark.parametrize("text", ["1" + "0" * 400, "9" * 400 + "y"])
def test_too_large_is_said_not_turned_into_infinity(text: str) -> None:
    with pytest.raises(ValueError, match=r"is too large$"):
        parse_duration(text, plain_seconds=True)


def test_both_programs_read_their_duration_flags_with_it(tmp_path: Path) -> None:
    advisor = advisor_parser().parse_args(
        ["report", "--output-dir", str(tmp_path), "--history", "1d12h", "--history-step", "90s"]
    )
    assert (advisor.history, advisor.history_step) == (129_600.0, 90.0)  # 86400 + 12 * 3600
    exporter = exporter_args(["--node", "n", "--nvml.xid-hold", "1h30m"])
    assert exporter.xid_hold == 5400.0


def test_a_bad_duration_flag_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        advisor_main(["report", "--output-dir", "out", "--history", "30m1h"])
    assert exited.value.code == 2
    said = capsys.readouterr().err.splitlines()[-1]
    assert said == (
        "xgpu-advisor report: error: argument --history: expected units from the largest to "
        "the smallest, each once (as in 1h30m), got '30m1h'"
    )
