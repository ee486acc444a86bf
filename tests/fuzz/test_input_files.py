"""Scenario files that are not scenarios, given to every command that reads one: a folder, a
FIFO no one writes to (open() of it would wait for a writer for ever), /dev/zero, a YAML
alias bomb, a `!!python` tag, nesting 100,000 deep, bytes that are not UTF-8, a byte-order
mark alone, an empty file. Each is one line naming the file, exit 2, nothing written, no
hang; the same for `xgpu-exporter --simulate` and `--scenario`, and for replay's CSV files.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest

from advisor import cli
from tests.fuzz.hostile import ADVISOR_ERROR, EXPORTER_ERROR, assert_clean_exit, run_main
from tests.fuzz.test_cli_flags import EXPORTER_BASE, exporter_outcome

pytestmark = [pytest.mark.fuzz, pytest.mark.realservices]  # a loopback stand-in exporter

# 10**9 values from a few hundred bytes: nine levels of ten aliases each
BOMB = (
    "a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n"
    + "".join(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]\n" for i in range(1, 10))
    + "nodes: *a9\n"
)


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _text(text: str) -> Callable[[Path], Path]:
    def make(path: Path) -> Path:
        path.write_bytes(text.encode("utf-8"))
        return path

    return make


def _bytes(raw: bytes) -> Callable[[Path], Path]:
    def make(path: Path) -> Path:
        path.write_bytes(raw)
        return path

    return make


def _folder(path: Path) -> Path:
    path.mkdir()
    return path


# kind -> (how to make it at a path, what its one line says after "PATH: ")
FILES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "folder": (_folder, "(file): a directory, not a file"),
    "fifo": (_fifo, "(file): empty"),
    "dev-zero": (
        lambda _: Path("/dev/zero"),
        "(file): more than the 67,108,864 bytes a scenario may have (--scenario.max-bytes)",
    ),
    "alias-bomb": (_text(BOMB), "more than 16,777,216 values (with YAML aliases expanded)"),
    "python-tag": (
        _text('nodes: !!python/object/apply:os.system ["touch PWNED"]\n'),
        "could not determine a constructor for the tag "
        "'tag:yaml.org,2002:python/object/apply:os.system'",
    ),
    "deep": (_text("nodes: " + "[" * 100_000 + "]" * 100_000), "nested deeper than 64 levels"),
    "not-utf8": (_bytes(b"nodes: [\xff\xfe]\n"), "(file): not UTF-8 text (byte 8)"),
    "bom-only": (_bytes(b"\xef\xbb\xbf"), "(file): empty"),
    "empty": (_bytes(b""), "(file): empty"),
}


def hostile_file(tmp_path: Path, kind: str) -> tuple[Path, str]:
    make, problem = FILES[kind]
    return make(tmp_path / f"{kind}.yaml"), problem


def advisor_argvs(path: Path, out: Path, exporter: str) -> dict[str, list[str]]:
    """Every command and flag that reads a scenario file, given `path`."""
    return {
        "diagnose": ["diagnose", "--scenario", str(path)],
        "plan": ["plan", "--scenario", str(path)],
        "whatif": ["whatif", "--scenario", str(path)],
        "report": ["report", "--scenario", str(path), "--output-dir", str(out)],
        "report --pods-from": [
            "report", "--exporters", exporter, "--pods-from", str(path), "--output-dir", str(out),
        ],
        "snapshot --pods-from": [
            "snapshot", "--exporters", exporter, "--pods-from", str(path),
            "--output", str(out / "s.yaml"),
        ],
    }  # fmt: skip


COMMANDS = list(advisor_argvs(Path(), Path(), ""))


@pytest.mark.timeout(60)  # a FIFO read with open() would hang here
@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("kind", sorted(FILES))
def test_every_advisor_command_refuses_in_one_line(
    tmp_path: Path, exporter_url: str, monkeypatch: pytest.MonkeyPatch, kind: str, command: str
) -> None:
    monkeypatch.chdir(tmp_path)  # where a `touch PWNED` would land
    path, problem = hostile_file(tmp_path, kind)
    out = tmp_path / "out"
    argv = advisor_argvs(path, out, exporter_url)[command]
    outcome = run_main(cli.main, argv)
    assert outcome.code == 2, (argv, outcome)
    assert_clean_exit(outcome, argv, ADVISOR_ERROR)
    line = outcome.stderr.splitlines()[-1]
    assert line.startswith(f"xgpu-advisor: error: {path}: "), line
    assert problem in line, line
    assert not out.exists()  # nothing written
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.timeout(60)
@pytest.mark.parametrize("flag", ["--simulate", "--scenario"])
@pytest.mark.parametrize("kind", sorted(FILES))
def test_the_exporter_refuses_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, flag: str
) -> None:
    monkeypatch.chdir(tmp_path)
    path, problem = hostile_file(tmp_path, kind)
    argv = [*EXPORTER_BASE, flag, str(path)]
    outcome = exporter_outcome(argv)
    assert_clean_exit(outcome, argv, EXPORTER_ERROR, allowed=(2,))
    assert outcome.stderr.startswith(f"xgpu-exporter: {path}: "), outcome.stderr
    assert problem in outcome.stderr, outcome.stderr
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.timeout(60)
@pytest.mark.parametrize(("kind", "problem"), [("folder", "a directory"), ("fifo", "missing")])
def test_replay_reads_no_folder_and_waits_on_no_fifo(
    tmp_path: Path, kind: str, problem: str
) -> None:
    path, _ = hostile_file(tmp_path, kind)
    argv = ["replay", "--nodes", str(path), "--pods", str(path)]
    outcome = run_main(cli.main, argv)
    assert_clean_exit(outcome, argv, ADVISOR_ERROR, allowed=(2,))
    assert outcome.stderr.startswith(f"xgpu-advisor: error: {path}: "), outcome.stderr
    assert problem in outcome.stderr
