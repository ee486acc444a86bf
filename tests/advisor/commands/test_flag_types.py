"""Every number a flag takes is finite and in range (advisor/commands/flags/values.py): a bad
one is one line and exit 2 from every command, before any source is read."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.cli import main

DEMO = str(Path(__file__).resolve().parents[3] / "advisor" / "examples" / "demo.yaml")
LIVE = ["--exporters", "http://127.0.0.1:9/metrics"]  # never reached: the flag fails first

CASES = [
    (["diagnose", "--scenario", DEMO, "--node-detail", "-2"], "--node-detail: must be -1 (all)"),
    (["diagnose", "--scenario", DEMO, "--node-detail", "nan"], "--node-detail: must be -1 (all)"),
    (["snapshot", *LIVE, "--output", "x.yaml", "--source-timeout", "nan"], "--source-timeout"),
    (["snapshot", *LIVE, "--output", "x.yaml", "--source-timeout", "0"], "--source-timeout"),
    (["snapshot", *LIVE, "--output", "x.yaml", "--stale-after", "inf"], "--stale-after"),
    (["snapshot", *LIVE, "--output", "x.yaml", "--stale-after", "-5"], "--stale-after"),
    (["snapshot", *LIVE, "--output", "x.yaml", "--max-vgpus-per-card", "0"], "must be at least 1"),
    (["report", "--scenario", DEMO, "--history-step", "0"], "--history-step: must be above 0"),
    (["report", "--scenario", DEMO, "--time-budget", "nan"], "--time-budget: must be a finite"),
    (["plan", "--scenario", DEMO, "--pictures", "99999999999"], "--pictures: must be at least 0"),
]


@pytest.mark.parametrize(("argv", "message"), CASES, ids=[" ".join(c[0][-2:]) for c in CASES])
def test_a_bad_number_is_one_line_and_exit_2(
    argv: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the working folder is where `--output x.yaml` (and any default output) would land
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1, captured.err
    assert captured.err.startswith(f"xgpu-advisor {argv[0]}: error: argument ")
    assert message in captured.err
    assert list(tmp_path.iterdir()) == []  # refused before anything is written


def test_in_range_values_are_taken(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diagnose", "--scenario", DEMO, "--node-detail", "-1", "--format", "json"]) == 0
    assert main(["diagnose", "--scenario", DEMO, "--node-detail", "0", "--format", "json"]) == 0
    assert '"schema": "xgpu-advisor/diagnosis/v1"' in capsys.readouterr().out


def test_help_still_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["plan", "--help"])
    assert stop.value.code == 0
    assert "--plan-work" in capsys.readouterr().out
