"""Every command block of README.md and docs/*.md runs as written, so the docs cannot go stale.

The convention the docs follow:

- Every fenced block names its language: `text` for pictures and plain text, `yaml`, `json`,
  `mermaid`, `sh`... A fence without one fails, so no command hides in an untagged block.
- `sh`, `bash`, `shell` and `console` blocks are run, in the order of their document, in one
  working copy of the repository per document: what one block writes (`snapshot.yaml`,
  `out/`) the next can read. They run after the two set-up commands (the `.venv` that
  `make demo` or `make test` creates) with `.venv/bin` first on PATH, the README's rule.
- A `sh`, `bash` or `shell` block runs as one `bash -euo pipefail` script and must exit 0.
- In a `console` block a line starting with `$ ` is a command (a trailing backslash continues
  it); the lines under it are its output as shown. Each shown line must appear in what the
  command printed (stdout and stderr), in order, `…` standing for any text within a line:
  shown output may be abridged, not stale. Each command must exit 0.
- An HTML comment on the line above a block directs the test (the reader sees it in the
  Markdown source, not on the rendered page):
  - `<!-- doc-test: skip: REASON -->`: not run, for the reason given (a cluster, a container
    engine, a registry). A skip without a reason fails.
  - `<!-- doc-test: exit N -->`: each command of the block exits N, not 0.
  - `<!-- doc-test: needs openb -->`: run only where the openb trace is found (`make openb`),
    in a working copy of its own; the test that runs it skips, saying where it looked.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from benchmarks.trace_dir import find_openb

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".venv"
DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
RUN_LANGUAGES = frozenset({"sh", "bash", "shell", "console"})
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
DIRECTIVE = re.compile(r"^\s*<!--\s*doc-test:\s*(?P<text>.*?)\s*-->\s*$")
WILDCARD = "…"
# The demo with a real Prometheus is the slowest block: about 20 s on an idle machine.
BLOCK_TIMEOUT_S = 300.0
# Not copied into the working copy: git's and tools' state, the venv (linked instead), what
# earlier runs wrote, and the trace (linked when found).
NOT_COPIED_AT_TOP = frozenset({".git", ".venv", "out", "data", "reports", "build"})
NOT_COPIED = frozenset(
    {
        "__pycache__",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".hypothesis",
        ".import_linter_cache",
    }
)


class DocError(ValueError):
    """A block or directive that breaks the convention."""


@dataclass(frozen=True, slots=True)
class Directive:
    skip: str | None = None  # the reason
    exit_code: int = 0
    needs_openb: bool = False


@dataclass(frozen=True, slots=True)
class Block:
    where: str  # "README.md:38", the opening fence
    language: str
    body: str
    directive: str | None  # the text of the doc-test comment above it
    lines: tuple[int, int] = (0, 0)  # the opening and closing fences' indexes (0-based)

    @property
    def runs(self) -> bool:
        return self.language in RUN_LANGUAGES


@dataclass(frozen=True, slots=True)
class Command:
    text: str  # continuation lines joined with their backslashes, as bash reads them
    shown: tuple[str, ...]  # the output shown under it, blank lines left out


def parse_blocks(text: str, name: str) -> list[Block]:
    """The fenced blocks of a Markdown text, with the directive on the line above each."""
    lines = text.splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opening = FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        fence = opening["fence"]
        closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        end = next((j for j in range(i + 1, len(lines)) if closing.match(lines[j])), None)
        if end is None:
            raise DocError(f"{name}:{i + 1}: the fence is never closed")
        indent = len(opening["indent"])
        body = "\n".join(_dedent(line, indent) for line in lines[i + 1 : end])
        above = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        directive = DIRECTIVE.match(above)
        info = opening["info"].split()
        blocks.append(
            Block(
                where=f"{name}:{i + 1}",
                language=info[0] if info else "",
                body=body,
                directive=directive["text"] if directive else None,
                lines=(i, end),
            )
        )
        i = end + 1
    return blocks


def _dedent(line: str, indent: int) -> str:
    """A fence indented by N spaces takes up to N spaces off each of its lines (CommonMark)."""
    stripped = line.lstrip(" ")
    return line[min(indent, len(line) - len(stripped)) :]


def parse_directive(block: Block) -> Directive:
    text = block.directive
    if text is None:
        return Directive()
    if not block.runs:
        raise DocError(f"{block.where}: a doc-test directive on a {block.language!r} block")
    if text == "skip" or text.startswith("skip:"):
        reason = text.removeprefix("skip").removeprefix(":").strip()
        if not reason:
            raise DocError(f"{block.where}: `doc-test: skip` gives no reason")
        return Directive(skip=reason)
    if (code := re.fullmatch(r"exit (\d{1,3})", text)) is not None:
        return Directive(exit_code=int(code[1]))
    if text == "needs openb":
        return Directive(needs_openb=True)
    raise DocError(f"{block.where}: unknown doc-test directive {text!r}")


def problems(blocks: Sequence[Block]) -> list[str]:
    """What breaks the convention, one line each."""
    found = []
    for block in blocks:
        if not block.language:
            found.append(f"{block.where}: the block names no language (text, sh, console...)")
        try:
            parse_directive(block)
            if block.language == "console":
                console_commands(block)
        except DocError as error:
            found.append(str(error))
    return found


def console_commands(block: Block) -> list[Command]:
    commands: list[tuple[list[str], list[str]]] = []
    continuing = False
    for line in block.body.splitlines():
        if continuing:
            commands[-1][0].append(line)
        elif line.startswith("$ "):
            commands.append(([line.removeprefix("$ ")], []))
        elif not commands:
            raise DocError(f"{block.where}: output before the first `$ ` command")
        elif line.strip():
            commands[-1][1].append(line)
        continuing = (continuing or line.startswith("$ ")) and line.endswith("\\")
    if not commands:
        raise DocError(f"{block.where}: a console block without a `$ ` command")
    return [Command("\n".join(text), tuple(shown)) for text, shown in commands]


def shown_pattern(shown: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in shown.strip().split(WILDCARD)))


def missing_output(shown: Sequence[str], printed: str) -> str | None:
    """The first shown line that is not in what was printed, in order; None when all are."""
    actual = [line.strip() for line in printed.splitlines()]
    position = 0
    for line in shown:
        pattern = shown_pattern(line)
        found = next(
            (k for k in range(position, len(actual)) if pattern.fullmatch(actual[k])), None
        )
        if found is None:
            return line
        position = found + 1
    return None


# --- running ---------------------------------------------------------------------------


def _not_copied(directory: str, names: list[str]) -> set[str]:
    top = Path(directory).resolve() == REPO
    return {
        name
        for name in names
        if name in NOT_COPIED
        or name.endswith((".egg-info", ".pyc"))
        or (top and name in NOT_COPIED_AT_TOP)
    }


def working_copy(dest: Path) -> Path:
    """The repository as a reader's checkout holds it, with the venv and the trace linked."""
    shutil.copytree(REPO, dest, ignore=_not_copied, symlinks=True)
    (dest / ".venv").symlink_to(VENV)
    trace = find_openb()
    if trace is not None:
        (dest / "data").mkdir()
        (dest / "data" / "openb").symlink_to(trace)
    return dest


def environment(work: Path) -> dict[str, str]:
    """The README's rule: `export PATH="$PWD/.venv/bin:$PATH"` in the checkout."""
    path = f"{work / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
    return {**os.environ, "PATH": path, "VIRTUAL_ENV": str(VENV)}


def _end_group(group: int) -> None:
    """Stop whatever a block left running in the background (its own session)."""
    for sig, wait_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(group, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            try:
                os.killpg(group, 0)
            except ProcessLookupError:
                return
            time.sleep(0.05)


def run_bash(script: str, work: Path, env: dict[str, str], log: Path) -> tuple[int | None, str]:
    """Exit status (None on timeout) and what the script printed, stdout and stderr as one.
    The output goes to a file: a background process left behind would hold a pipe open."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            ["bash", "-euo", "pipefail", "-c", script],
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            code: int | None = proc.wait(timeout=BLOCK_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            code = None
        finally:
            _end_group(proc.pid)
            proc.wait()
    return code, log.read_text(errors="replace")


def _tail(printed: str, lines: int = 15) -> str:
    return "\n".join("    " + line for line in printed.splitlines()[-lines:])


def _status(code: int | None) -> str:
    return f"ran past {BLOCK_TIMEOUT_S:.0f} s" if code is None else f"exited {code}"


def run_block(block: Block, work: Path, env: dict[str, str], log: Path) -> list[str]:
    """Failures of one block, each naming where it is; none when it runs as written."""
    expected = parse_directive(block).exit_code
    if block.language != "console":
        code, printed = run_bash(block.body, work, env, log)
        if code == expected:
            return []
        first = block.body.strip().splitlines()[0]
        return [f"{block.where}: `{first}` ... {_status(code)}, not {expected}:\n{_tail(printed)}"]
    failures = []
    for command in console_commands(block):
        code, printed = run_bash(command.text, work, env, log)
        if code != expected:
            failures.append(
                f"{block.where}: `{command.text}` {_status(code)}, not {expected}:\n"
                f"{_tail(printed)}"
            )
        elif (line := missing_output(command.shown, printed)) is not None:
            failures.append(
                f"{block.where}: `{command.text}` did not print {line.strip()!r} "
                f"(after the lines shown above it); it printed:\n{_tail(printed, 40)}"
            )
    return failures


def blocks_of(path: Path) -> list[Block]:
    return parse_blocks(path.read_text(), path.relative_to(REPO).as_posix())


def run_blocks(blocks: Sequence[Block], work: Path) -> list[str]:
    if not (VENV / "bin" / "xgpu-advisor").exists():
        pytest.fail(f"{VENV} has no xgpu-advisor: run `make test` (or `make demo`) first")
    env = environment(work)
    failures: list[str] = []
    for number, block in enumerate(blocks):
        failures += run_block(block, work, env, work.parent / f"block-{number}.log")
    return failures


def _runnable(path: Path, *, needs_openb: bool) -> list[Block]:
    chosen = []
    for block in blocks_of(path):
        if not block.runs:
            continue
        directive = parse_directive(block)
        if directive.skip is None and directive.needs_openb == needs_openb:
            chosen.append(block)
    return chosen


# --- the convention ----------------------------------------------------------------------


@pytest.mark.parametrize("path", DOCUMENTS, ids=lambda p: p.name)
def test_every_block_names_its_language_and_every_directive_is_valid(path: Path) -> None:
    assert problems(blocks_of(path)) == []


def test_the_convention_refuses_untagged_blocks_and_skips_without_reason() -> None:
    text = (
        "```\nxgpu-advisor diagnose --scenario x.yaml\n```\n\n"
        "<!-- doc-test: skip -->\n```sh\nkubectl apply -k deploy/base\n```\n"
        "<!-- doc-test: skip:   -->\n\n```sh\nhelm install\n```\n"
        "<!-- doc-test: skip: needs a cluster -->\n```text\npicture\n```\n"
        "<!-- doc-test: exit one -->\n```sh\nfalse\n```\n"
        "```console\nprinted before any command\n$ true\n```\n"
        "<!-- doc-test: skip: needs a cluster -->\n```sh\nkubectl get pods\n```\n"
    )
    assert problems(parse_blocks(text, "x.md")) == [
        "x.md:1: the block names no language (text, sh, console...)",
        "x.md:6: `doc-test: skip` gives no reason",
        "x.md:11: `doc-test: skip` gives no reason",  # the blank line between is no matter
        "x.md:15: a doc-test directive on a 'text' block",
        "x.md:19: unknown doc-test directive 'exit one'",
        "x.md:22: output before the first `$ ` command",
    ]  # the last block, a skip with its reason, is fine


def test_blocks_keep_their_directive_language_and_indented_body() -> None:
    text = (
        "- an item:\n\n  <!-- doc-test: exit 1 -->\n  ```sh title\n  xgpu-advisor \\\n"
        "    --version\n  ```\n\n~~~~console\n$ echo a \\\n  b\na b\n\n$ true\n~~~~\n"
    )
    first, second = parse_blocks(text, "x.md")
    assert (first.where, first.language, first.directive) == ("x.md:4", "sh", "exit 1")
    assert first.body == "xgpu-advisor \\\n  --version"
    assert parse_directive(first) == Directive(exit_code=1)
    assert (second.where, second.language, second.directive) == ("x.md:9", "console", None)
    assert console_commands(second) == [
        Command("echo a \\\n  b", ("a b",)),
        Command("true", ()),
    ]


def test_stale_output_is_caught_and_abridged_output_is_not() -> None:
    printed = (
        "xgpu-demo: 5 simulated exporters up; reading Prometheus http://127.0.0.1:44193\n"
        "source: prometheus http://127.0.0.1:44193\n"
        "9 Pending GPU pods: 4 schedulable, 1 node-resources, 1 fragmentation\n"
        "1 plan rescuing 1 pod with 1 eviction\n"
    )
    abridged = [
        "xgpu-demo: 5 simulated exporters up; reading Prometheus http://127.0.0.1:…",
        "9 Pending GPU pods: 4 schedulable, …",
        "1 plan rescuing 1 pod with 1 eviction",
    ]
    assert missing_output(abridged, printed) is None
    # The stale line docs/deployment.md once showed, and a count that changed.
    assert missing_output(["1 plans rescue 1 pods"], printed) == "1 plans rescue 1 pods"
    assert missing_output(["8 Pending GPU pods: …"], printed) == "8 Pending GPU pods: …"
    # Order matters: a line shown after another must be printed after it.
    swapped = [abridged[2], abridged[0]]
    assert missing_output(swapped, printed) == abridged[0]
    # `…` spans text within a line only, and a shown line is the whole printed line.
    assert missing_output(["9 Pending GPU pods"], printed) == "9 Pending GPU pods"


# --- the blocks, run -----------------------------------------------------------------------


RUN_DOCUMENTS = [p for p in DOCUMENTS if _runnable(p, needs_openb=False)]
TRACE_DOCUMENTS = [p for p in DOCUMENTS if _runnable(p, needs_openb=True)]


@pytest.mark.realservices
@pytest.mark.timeout(900)  # README: about 100 s with two cores busy (the demo's Prometheus, 30)
@pytest.mark.parametrize("path", RUN_DOCUMENTS, ids=lambda p: p.name)
def test_command_blocks_run_as_written(path: Path, tmp_path: Path) -> None:
    work = working_copy(tmp_path / "checkout")
    failures = run_blocks(_runnable(path, needs_openb=False), work)
    assert not failures, "\n\n".join(failures)


@pytest.mark.realservices
@pytest.mark.timeout(600)  # two whole replays of the trace
@pytest.mark.parametrize("path", TRACE_DOCUMENTS, ids=lambda p: p.name)
def test_command_blocks_on_the_openb_trace_run_as_written(
    path: Path, tmp_path: Path, openb_dir: Path
) -> None:
    work = working_copy(tmp_path / "checkout")
    assert (work / "data" / "openb").resolve() == openb_dir.resolve()
    failures = run_blocks(_runnable(path, needs_openb=True), work)
    assert not failures, "\n\n".join(failures)


@pytest.mark.realservices
def test_a_failing_block_is_reported_with_where_and_what_it_printed(tmp_path: Path) -> None:
    work = tmp_path / "checkout"
    work.mkdir()
    text = (
        "```sh\necho starting\nfalse\necho never\n```\n"
        "<!-- doc-test: exit 1 -->\n```console\n$ echo '1 plan rescuing 1 pod'; exit 1\n"
        "1 plans rescue 1 pods\n```\n"
        "```sh\nsleep 600 &\necho left running\n```\n"
    )
    failures = run_blocks(parse_blocks(text, "x.md"), work)
    assert failures[0] == "x.md:1: `echo starting` ... exited 1, not 0:\n    starting"
    assert failures[1].startswith(
        "x.md:7: `echo '1 plan rescuing 1 pod'; exit 1` did not print '1 plans rescue 1 pods'"
    )
    assert len(failures) == 2  # the background sleep neither fails the block nor holds it
