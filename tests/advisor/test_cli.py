"""`xgpu-advisor`'s parser: a mistyped flag or command is one line naming it and the nearest
real one, exit 2; flags are read as written, never as an abbreviation of another."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.cli import main
from advisor.flagparse import nearest
from tests.fuzz.hostile import run_main
from tests.realparts import DEMO


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["diagnose", "--senario", "x"],
            "xgpu-advisor diagnose: error: unknown flag --senario; did you mean --scenario?",
        ),
        (
            ["plan", "--senario=x.yaml"],  # the name, not its value
            "xgpu-advisor plan: error: unknown flag --senario; did you mean --scenario?",
        ),
        (
            ["report", "--kube"],
            "xgpu-advisor report: error: unknown flag --kube; "
            "did you mean --kubernetes or --kubeconfig?",
        ),
        (  # the --prometheus.* family counts once, as its head
            ["whatif", "--prom", "http://p"],
            "xgpu-advisor whatif: error: unknown flag --prom; did you mean --prometheus?",
        ),
        (
            ["diagnose", "--bogus"],
            "xgpu-advisor diagnose: error: unknown flag --bogus; "
            "xgpu-advisor diagnose --help lists them",
        ),
        (
            ["diagnos", "--scenario", "x"],
            "xgpu-advisor: error: unknown command diagnos; did you mean diagnose?",
        ),
        (
            ["shrink"],
            "xgpu-advisor: error: unknown command shrink; the commands are diagnose, plan, "
            "report, snapshot, whatif, replay, serve",
        ),
        (
            ["--verbose", "diagnose"],
            "xgpu-advisor: error: unknown flag --verbose; xgpu-advisor --help lists them",
        ),
        (
            ["diagnose", "--scenario", str(DEMO), "extra"],
            "xgpu-advisor diagnose: error: unexpected argument extra",
        ),
    ],
)
def test_a_mistyped_flag_or_command_names_itself_and_the_nearest(
    argv: list[str], line: str
) -> None:
    outcome = run_main(main, argv)
    assert (outcome.code, outcome.stderr, outcome.stdout) == (2, line + "\n", "")


def test_a_mistyped_flag_is_named_before_the_flag_it_stood_for_is_missed() -> None:
    """snapshot requires --prometheus or --exporters: argparse alone said that, not why."""
    outcome = run_main(main, ["snapshot", "--promethues", "http://p", "--output", "s.yaml"])
    assert outcome.code == 2
    assert outcome.stderr == (
        "xgpu-advisor snapshot: error: unknown flag --promethues; did you mean --prometheus?\n"
    )


def test_a_prefix_is_not_taken_for_another_flag(tmp_path: Path) -> None:
    """`--output` is no flag of report: it is not silently `--output-dir`."""
    out = tmp_path / "out"
    outcome = run_main(main, ["report", "--scenario", str(DEMO), "--output", str(out)])
    assert outcome.code == 2
    assert outcome.stderr == (
        "xgpu-advisor report: error: unknown flag --output; did you mean --output-dir?\n"
    )
    assert not out.exists()


def test_flags_written_whole_still_read_with_or_without_equals(tmp_path: Path) -> None:
    out = tmp_path / "d.json"
    argv = ["diagnose", f"--scenario={DEMO}", "--format", "json", f"--output={out}"]
    assert run_main(main, argv).code == 0
    assert out.read_text().startswith("{")


def test_nearest_ignores_the_dashes_every_flag_shares() -> None:
    # "--foo" and "--format" share "--fo" and would pass difflib's 0.6; "foo" and "format" not
    assert nearest("--foo", ["--format", "--output"]) == ()
    assert nearest("--fromat", ["--format", "--output"]) == ("--format",)
