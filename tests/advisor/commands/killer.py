"""Run `xgpu-advisor ARGS` again and again, each time SIGKILLed at the next step that changes
a file: `python killer.py PRISTINE RESULTS ARGS...` (run by test_report_killed.py).

A step is what Python's audit hooks see a writer do (open for writing, mkdir, mkstemp,
mkdtemp, chmod, rename, replace, remove, rmdir, rmtree); the hook runs before the step, so
kill N stops the run just before its Nth step. Each run starts from a copy of PRISTINE as
its working directory (ARGS name paths relative to it) and is moved to RESULTS/N when it
has died; RESULTS/0 is the run left alone, and RESULTS/status.json says how each ended.
The advisor is imported once and each run forked from it: a real process, killed for real,
without paying the imports each time.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
from pathlib import Path

from advisor.cli import main

STEPS = {
    "os.mkdir",
    "os.chmod",
    "os.rename",
    "os.replace",
    "os.remove",
    "os.rmdir",
    "os.truncate",
    "shutil.rmtree",
    "tempfile.mkstemp",
    "tempfile.mkdtemp",
}
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def _writes(args: tuple[object, ...]) -> bool:
    mode, flags = args[1], args[2]
    if isinstance(mode, str):
        return any(c in mode for c in "wax+")
    return isinstance(flags, int) and bool(flags & WRITE_FLAGS)


def child(kill_at: int, argv: list[str], count: Path) -> None:
    steps = 0

    def hook(event: str, args: tuple[object, ...]) -> None:
        nonlocal steps
        if event in STEPS or (event == "open" and _writes(args)):
            steps += 1
            if steps == kill_at:
                os.kill(os.getpid(), signal.SIGKILL)

    sys.addaudithook(hook)
    code = main(argv)
    count.write_text(str(steps))  # after the hook: a read-only open is not a step
    os._exit(code)


def run(kill_at: int, pristine: Path, work: Path, argv: list[str]) -> int | str:
    shutil.copytree(pristine, work, symlinks=True)
    count = work.parent / "steps"
    pid = os.fork()
    if pid == 0:
        os.chdir(work)
        child(kill_at, argv, count)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return signal.Signals(os.WTERMSIG(status)).name
    return os.WEXITSTATUS(status)


def main_() -> None:
    pristine, results, argv = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
    results.mkdir()
    work = results.parent / "work"
    ended: dict[int, int | str] = {0: run(0, pristine, work, argv)}
    work.rename(results / "0")
    total = int((results.parent / "steps").read_text())
    for kill_at in range(1, total + 1):
        ended[kill_at] = run(kill_at, pristine, work, argv)
        work.rename(results / str(kill_at))
    (results / "status.json").write_text(json.dumps(ended))


if __name__ == "__main__":
    main_()
