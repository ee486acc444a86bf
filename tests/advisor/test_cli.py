"""`xgpu-advisor`'s parser: a mistyped flag or command is one line naming it and the nearest
real one, exit 2; flags are read as written, never as an abbreviation of another."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.cli import main
from advisor.commands import diagnose as diagnose_command
from advisor.errors import InputError, InternalError, SourceError, exit_code, known
from advisor.flagparse import nearest
from advisor.kubeconfig import KubeConfigError
from advisor.scenario_reader import ScenarioError
from advisor.trace_rows import TraceError
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


def test_every_error_that_ends_a_run_has_one_root_and_one_exit_code() -> None:
    """errors.exit_code is the one map from an error to an exit status: input and source
    errors (the scenario's, the trace's, the kubeconfig's among them) exit 2, an internal one
    70, anything else (an exception nobody meant) 70 as well."""
    assert issubclass(ScenarioError, InputError)
    assert issubclass(TraceError, InputError)
    assert issubclass(KubeConfigError, SourceError)
    assert [exit_code(e) for e in (ScenarioError("f: x: bad"), TraceError("f: line 1: bad"))] == [
        2,
        2,
    ]
    assert exit_code(KubeConfigError("no config")) == 2
    assert exit_code(InternalError("broken")) == 70
    assert exit_code(ValueError("unmeant")) == 70


def test_an_internal_error_is_one_line_and_exit_70(monkeypatch: pytest.MonkeyPatch) -> None:
    """A broken invariant (where an assert would stand) ends the CLI in one line naming it."""

    def broken(args: object) -> int:
        return known(None, "the placement of running pod ml/a")

    monkeypatch.setattr(diagnose_command, "run", broken)
    outcome = run_main(main, ["diagnose", "--scenario", str(DEMO)])
    assert (outcome.code, outcome.stdout) == (70, "")
    assert outcome.stderr == (
        "xgpu-advisor: error: internal error: the placement of running pod ml/a is not set "
        "(a bug: please report it)\n"
    )
