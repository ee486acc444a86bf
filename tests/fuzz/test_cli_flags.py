"""Every flag of `xgpu-advisor` and `xgpu-exporter`, found by walking their argparse parsers,
given hostile values: NaN, inf, 1e30, beyond int64, "²", negative, empty, control
characters, paths that are directories, devices or missing.

`xgpu-advisor` runs in-process (`cli.main`) on a small scenario, a small trace or a stand-in
exporter, so a flag the parser accepts is also used: exit 0 or 2 (1 for report's
--fail-on), one error line, never a traceback. `xgpu-exporter` would serve once its flags
are good, so its flags go through what `main` runs before serving (`parse_args`,
`parse_listen`, `build`): a good set builds, a bad one is one line and exit 2.
"""

from __future__ import annotations

import argparse
import os
import stat
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import example, given
from hypothesis import strategies as st

from advisor import cli
from advisor.terminal import one_line
from exporter import cli as exporter_cli
from tests.fuzz.hostile import (
    ADVISOR_ERROR,
    EXPORTER_ERROR,
    Outcome,
    assert_clean_exit,
    hostile_texts,
    run_main,
)
from tests.fuzz.profiles import fuzz_settings
from tests.fuzz.test_scenario_loader import SMALL

pytestmark = [pytest.mark.fuzz, pytest.mark.realservices]  # a loopback stand-in exporter

# Paths every flag may get: relative, so that whatever a command writes lands in the test's
# directory (the suite may run as root: `--output-dir /` would write there, and an atomic
# `--output /dev/null` once renamed a file over the device). `devnull` is a link to
# /dev/null, `adir` a directory.
PATHS = [
    "",
    ".",
    "adir",
    "adir/",
    "devnull",
    "missing/x.yaml",
    "out.json",
    "\ufeff.yaml",
    "x" * 300,
]
# Paths only a flag that reads may get: devices, endless streams, what no one may read.
READ_PATHS = ["/", "/dev/zero", "/dev/null", "/proc/self/mem", "/nonexistent/x.yaml"]
READS = {"scenario", "nodes", "pods", "pods_from", "kubeconfig", "simulate", "procfs"}


def harmless(dest: str, text: str) -> bool:
    """No value takes a writer outside the test's directory."""
    if dest in READS:
        return True
    return not text.startswith(("/", "~")) and ".." not in text


def option_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [
        a for a in parser._actions if a.option_strings and not isinstance(a, argparse._HelpAction)
    ]


def advisor_flags() -> list[tuple[str, str, argparse.Action]]:
    parser = cli._parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return [
        (command, action.option_strings[-1], action)
        for command, subparser in sorted(sub.choices.items())
        for action in option_actions(subparser)
    ]


ADVISOR_FLAGS = advisor_flags()


def values_for(action: argparse.Action) -> st.SearchStrategy[list[str]]:
    """The words after the flag: none for a switch (or a stray `=value`), else one value."""
    if action.nargs == 0:
        return st.sampled_from([[], [], ["=x"]])
    texts = hostile_texts().filter(lambda t: "\x00" not in t)  # no argv holds a NUL
    if action.choices is not None:
        texts = st.one_of(st.sampled_from(sorted(map(str, action.choices))), texts)
    if action.type is Path or action.dest in READS:
        paths = PATHS + (READ_PATHS if action.dest in READS else [])
        texts = st.one_of(st.sampled_from(paths), texts)
    return texts.filter(lambda t: harmless(action.dest, t)).map(lambda t: [t])


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Files the commands read, and the current directory for what they write (a hostile
    relative --output lands here, not in the repository)."""
    path = tmp_path_factory.mktemp("flags-fuzz")
    (path / "small.yaml").write_text(yaml.safe_dump(SMALL))
    (path / "nodes.csv").write_text("sn,cpu_milli,memory_mib,gpu,model\nn1,1000,1024,2,T4\n")
    (path / "pods.csv").write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time\np1,100,64,1,500,0\n"
    )
    (path / "adir").mkdir()
    (path / "devnull").symlink_to("/dev/null")
    before = Path.cwd()
    os.chdir(path)
    try:
        yield path
    finally:
        os.chdir(before)


def base_argv(command: str, workdir: Path, exporter_url: str) -> list[str]:
    scenario = ["--scenario", str(workdir / "small.yaml")]
    return {
        "diagnose": scenario,
        "plan": scenario,
        "whatif": scenario,
        "report": [*scenario, "--output-dir", str(workdir / "report"), "--time-budget", "5"],
        "snapshot": ["--exporters", exporter_url, "--output", str(workdir / "snap.yaml")],
        "replay": ["--nodes", str(workdir / "nodes.csv"), "--pods", str(workdir / "pods.csv")],
        "serve": ["--reports", str(workdir / "report")],
    }.get(command, [])


# Commands that serve until stopped once their flags are good: parsed here, not run.
SERVING = {"serve"}


def parse_only(argv: Sequence[str]) -> int:
    cli._parser().parse_args(argv)
    return 0


@st.composite
def advisor_argvs(draw: st.DrawFn) -> tuple[str, list[str]]:
    command, flag, action = draw(st.sampled_from(ADVISOR_FLAGS))
    words = draw(values_for(action))
    if words and words[0].startswith("="):
        return command, [flag + words[0]]
    return command, [flag, *words] if draw(st.booleans()) else [f"{flag}={w}" for w in words] or [
        flag
    ]


def test_every_advisor_command_has_flags_to_fuzz() -> None:
    commands = {command for command, _, _ in ADVISOR_FLAGS}
    assert commands >= {"diagnose", "plan", "report", "snapshot", "whatif", "replay"}
    assert len(ADVISOR_FLAGS) > 40  # each command's flags, not just --help


def test_the_base_runs_succeed(workdir: Path, exporter_url: str) -> None:
    """Each command's base arguments alone exit 0: a fuzzed flag is what makes it fail."""
    for command in ("diagnose", "plan", "whatif", "report", "snapshot", "replay"):
        argv = [command, *base_argv(command, workdir, exporter_url)]
        outcome = run_main(cli.main, argv)
        assert outcome.code == 0, (argv, outcome)


@given(advisor_argvs())
@fuzz_settings(200)
@example(("diagnose", ["--node-detail", "nan"]))
@example(("report", ["--source-timeout", "nan"]))
@example(("report", ["--time-budget", "inf"]))
@example(("report", ["--history-step", "0"]))
@example(("plan", ["--max-evictions-per-gpu", "nan"]))
@example(("snapshot", ["--stale-after", "1e30"]))
@example(("snapshot", ["--max-vgpus-per-card", "²"]))
@example(("report", ["--fail-threshold", "99999999999999999999999"]))
@example(("diagnose", ["--scenario", "/dev/zero"]))
@example(("replay", ["--nodes", "/dev/zero"]))
def test_advisor_flags_exit_0_or_2_in_one_line(
    workdir: Path, exporter_url: str, command_and_flag: tuple[str, list[str]]
) -> None:
    command, flag = command_and_flag
    argv = [command, *base_argv(command, workdir, exporter_url), *flag]
    outcome: Outcome = run_main(parse_only if command in SERVING else cli.main, argv)
    assert_clean_exit(outcome, argv, ADVISOR_ERROR, allowed=(0, 1, 2))
    if outcome.code == 1:
        assert command == "report", (argv, outcome)  # --fail-on findings, its documented 1


def test_a_pushgateway_url_with_a_space_is_one_line(workdir: Path, exporter_url: str) -> None:
    argv = ["report", *base_argv("report", workdir, exporter_url), "--pushgateway= "]
    assert_clean_exit(run_main(cli.main, argv), argv, ADVISOR_ERROR)


def test_a_textfile_that_is_a_pipe_stays_a_pipe(workdir: Path, exporter_url: str) -> None:
    fifo = workdir / "textfile-pipe"
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    argv = ["report", *base_argv("report", workdir, exporter_url), "--textfile", str(fifo)]
    outcome = run_main(cli.main, argv)
    replaced = not stat.S_ISFIFO(fifo.lstat().st_mode)
    if replaced:
        fifo.unlink()
    else:
        reader.join(timeout=30)
    assert outcome.code == 0, outcome
    assert not replaced
    assert b"xgpu_advisor" in b"".join(received)


@pytest.mark.parametrize("flag", ["--exporters", "--prometheus"])
def test_a_url_with_a_bracket_is_one_line(workdir: Path, flag: str) -> None:
    argv = ["snapshot", flag, "http://[", "--output", str(workdir / "snap.yaml")]
    assert_clean_exit(run_main(cli.main, argv), argv, ADVISOR_ERROR)


@pytest.mark.parametrize("flag", ["--exporters", "--prometheus"])
def test_a_host_name_label_over_63_characters_is_one_line(workdir: Path, flag: str) -> None:
    argv = ["snapshot", flag, "http://" + "x" * 64, "--output", str(workdir / "snap.yaml")]
    assert_clean_exit(run_main(cli.main, argv), argv, ADVISOR_ERROR)


# -- xgpu-exporter -----------------------------------------------------------------------


def exporter_actions() -> list[tuple[str, argparse.Action]]:
    """The exporter's parser is built inside `parse_args`: catch it there."""
    built: list[argparse.ArgumentParser] = []
    original = exporter_cli._Parser.parse_args

    def keep(self: exporter_cli._Parser, *args: Any, **kwargs: Any) -> Any:
        built.append(self)
        return original(self, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(exporter_cli._Parser, "parse_args", keep)
        exporter_cli.parse_args(["--node", "n"])
    return [
        (a.option_strings[0], a)
        for a in option_actions(built[0])
        if not isinstance(a, argparse._VersionAction)
    ]


EXPORTER_ACTIONS = exporter_actions()
EXPORTER_BASE = ["--node", "n1", "--no-collector.nvml", "--no-collector.kubernetes"]


def exporter_outcome(argv: list[str]) -> Outcome:
    """What `exporter.cli.main` does before it serves: the exit code and stderr it gives."""

    def until_serving(words: Sequence[str]) -> int:
        args = exporter_cli.parse_args(words)
        try:
            exporter_cli.parse_listen(args.listen)
            exporter_cli.build(args)
        except exporter_cli.ConfigError as exc:
            print(f"xgpu-exporter: {one_line(exc)}", file=sys.stderr)
            return 2
        return 0

    return run_main(until_serving, argv)


@st.composite
def exporter_argvs(draw: st.DrawFn) -> list[str]:
    flag, action = draw(st.sampled_from(EXPORTER_ACTIONS))
    words = draw(values_for(action))
    if words and words[0].startswith("="):
        return [flag + words[0]]
    return [flag, *words]


def test_the_exporter_base_builds(workdir: Path) -> None:
    assert len(EXPORTER_ACTIONS) > 15
    outcome = exporter_outcome(EXPORTER_BASE)
    assert outcome.code == 0, outcome


@given(exporter_argvs())
@fuzz_settings(150)
@example(["--web.read-header-timeout", "nan"])
@example(["--web.max-connections", "99999999999999999999"])
@example(["--simulate", "/dev/zero"])
@example(["--web.listen-address", ":99999999999999999999"])
@example(["--simulate.seed", "99999999999999999999999"])
def test_exporter_flags_build_or_exit_2_in_one_line(workdir: Path, flag: list[str]) -> None:
    argv = [*EXPORTER_BASE, *flag]
    outcome = exporter_outcome(argv)
    assert_clean_exit(outcome, argv, EXPORTER_ERROR)


def test_a_superscript_port_is_one_line() -> None:
    argv = [*EXPORTER_BASE, "--web.listen-address", ":²"]
    assert_clean_exit(exporter_outcome(argv), argv, EXPORTER_ERROR)
