"""How every benchmark is run: one fresh subprocess per case, so peak memory is that case's.

A benchmark module (`benchmarks/<name>_bench.py`) offers two functions, and optionally
`TABLES = {table: (title, first column heading)}` for the tables its cases go in:

    def cases(quick: bool) -> list[Case]
    def run_case(name: str, params: Params, repeats: int) -> Outcome

`run.py` collects the cases of every module it finds and, for each, starts
`python -m benchmarks.measure MODULE NAME PARAMS_JSON REPEATS`; that worker calls
`run_case` and prints one JSON line: the wall and CPU seconds of each timed phase per run,
the facts the case reports (figures, cross-check results; a `note` is shown in the table),
and the worker's peak RSS from `resource.getrusage` (unless the case measured a child
process and put that one's `peak_rss_kib` in the facts).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import import_module
from pathlib import Path
from typing import Any, TypeVar

REPO = Path(__file__).resolve().parent.parent
Params = Mapping[str, int | str]
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Case:
    module: str  # e.g. "benchmarks.replay_bench"
    name: str  # the key run_case understands
    label: str  # what a reader sees in the table's first column
    table: str = "main"  # which table of run.py's report the case belongs to
    params: Params = field(default_factory=dict)
    repeats: int = 3
    goal_phase: str | None = None  # the phase the goals below apply to
    goal_seconds: float | None = None
    goal_rss_mib: float | None = None


class Timings:
    """Wall and CPU seconds of each phase, one entry per run, phases in first-seen order.

    CPU time is shown next to wall time because this machine is shared: when other work
    takes the cores, wall time grows and CPU time (single-threaded code) barely moves.
    """

    def __init__(self) -> None:
        self.wall: dict[str, list[float]] = {}
        self.cpu: dict[str, list[float]] = {}

    def add(self, phase: str, wall: float, cpu: float) -> None:
        self.wall.setdefault(phase, []).append(wall)
        self.cpu.setdefault(phase, []).append(cpu)

    def time(self, phase: str, action: Callable[[], T]) -> T:
        """`action()`'s value; its wall and CPU time are added to `phase`."""
        wall, cpu = time.perf_counter(), time.process_time()
        value = action()
        self.add(phase, time.perf_counter() - wall, time.process_time() - cpu)
        return value


@dataclass(frozen=True, slots=True)
class Outcome:
    timings: Timings
    facts: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Result:
    case: Case
    wall: dict[str, list[float]]  # phase -> seconds of each run, in run order
    cpu: dict[str, list[float]]
    peak_rss_kib: int
    facts: dict[str, Any]

    @property
    def phases(self) -> list[str]:
        return list(self.wall)

    def median(self, phase: str) -> float:
        return statistics.median(self.wall[phase])

    def cpu_median(self, phase: str) -> float:
        return statistics.median(self.cpu[phase])

    @property
    def peak_rss_mib(self) -> float:
        return self.peak_rss_kib / 1024

    def goal_met(self) -> bool | None:
        c = self.case
        if c.goal_phase is None or c.goal_phase not in self.wall:
            return None
        fast = c.goal_seconds is None or self.median(c.goal_phase) <= c.goal_seconds
        small = c.goal_rss_mib is None or self.peak_rss_mib <= c.goal_rss_mib
        return fast and small

    def to_json(self) -> dict[str, Any]:
        return {
            "module": self.case.module,
            "case": self.case.name,
            "label": self.case.label,
            "table": self.case.table,
            "params": dict(self.case.params),
            "wall_seconds": self.wall,
            "cpu_seconds": self.cpu,
            "median_wall_seconds": {p: self.median(p) for p in self.phases},
            "median_cpu_seconds": {p: self.cpu_median(p) for p in self.phases},
            "peak_rss_mib": round(self.peak_rss_mib, 1),
            "goal": {
                "phase": self.case.goal_phase,
                "seconds": self.case.goal_seconds,
                "rss_mib": self.case.goal_rss_mib,
                "met": self.goal_met(),
            },
            "facts": self.facts,
        }


@dataclass(frozen=True, slots=True)
class ChildRun:
    wall: float
    cpu: float  # user + system seconds of the child alone
    peak_rss_kib: int
    stdout: str


def run_child(command: Sequence[str], expect: int = 0) -> ChildRun:
    """Run a command to the end and measure it alone. CalledProcessError when its exit
    status is not `expect` (a benchmark of a refusal expects 2)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=out, stderr=err)
        # wait4 rather than Popen.wait: it also returns this one child's resource usage.
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if child.returncode != expect:
        raise subprocess.CalledProcessError(child.returncode, list(command), stdout, stderr)
    return ChildRun(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, stdout.decode())


def cli_command() -> list[str]:
    """The installed `xgpu-advisor` beside this interpreter, else on PATH, else the module."""
    script = Path(sys.executable).parent / "xgpu-advisor"
    if script.is_file():
        return [str(script)]
    found = shutil.which("xgpu-advisor")
    return [found] if found else [sys.executable, "-m", "advisor.cli"]


def child_env() -> dict[str, str]:
    """This environment, with the repository importable (`benchmarks` is not installed)."""
    path = [str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(path)}


def run_isolated(case: Case) -> Result:
    """Run one case in a fresh interpreter and read back what it measured."""
    env = child_env()
    command = [
        sys.executable,
        "-m",
        "benchmarks.measure",
        case.module,
        case.name,
        json.dumps(dict(case.params)),
        str(case.repeats),
    ]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{case.module} {case.name} failed:\n{done.stderr.strip()}")
    data = json.loads(done.stdout.strip().splitlines()[-1])
    return Result(case, data["wall"], data["cpu"], int(data["peak_rss_kib"]), data["facts"])


def _worker(argv: Sequence[str]) -> None:
    module_name, name, params_json, repeats = argv
    module = import_module(module_name)
    outcome: Outcome = module.run_case(name, json.loads(params_json), int(repeats))
    facts = dict(outcome.facts)
    peak = facts.pop("peak_rss_kib", None)
    if peak is None:
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    timings = outcome.timings
    print(
        json.dumps({"wall": timings.wall, "cpu": timings.cpu, "facts": facts, "peak_rss_kib": peak})
    )


if __name__ == "__main__":
    _worker(sys.argv[1:])
