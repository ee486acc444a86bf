"""Start-up: what every `xgpu-advisor` run pays before it does any work (issue goal: at most
150 ms), as whole processes of the installed command.

Cases:
- `help`: `xgpu-advisor --help`, and `xgpu-advisor COMMAND --help` for each command: the
  parser alone (`advisor.commands.flags.commands`), none of the model or the sources.
- `refusal`: `xgpu-advisor diagnose` with a scenario file that is not there: the command's
  own module loaded and stopped where it reads, refused before the model (the core, the
  scenario parser and reader, their libraries) loads.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from benchmarks.measure import Case, Outcome, Params, Timings, cli_command, run_child

MODULE = "benchmarks.startup_bench"
COMMANDS = ("diagnose", "plan", "report", "snapshot", "whatif", "replay", "serve")
GOAL_S = 0.15


def cases(quick: bool) -> list[Case]:
    repeats = 3 if quick else 10
    return [
        Case(
            MODULE,
            "help",
            "`xgpu-advisor --help`, whole process",
            params={"command": ""},
            repeats=repeats,
            goal_phase="whole process",
            goal_seconds=GOAL_S,
        ),
        *(
            Case(
                MODULE,
                "help",
                f"`xgpu-advisor {name} --help`, whole process",
                params={"command": name},
                repeats=repeats,
                goal_phase="whole process",
                goal_seconds=GOAL_S,
            )
            for name in COMMANDS
        ),
        Case(
            MODULE,
            "refusal",
            "`xgpu-advisor diagnose --scenario MISSING`: the command loaded, stopped at its input",
            repeats=repeats,
            goal_phase="whole process",
            goal_seconds=GOAL_S,
        ),
    ]


def _help(params: Params, repeats: int) -> Outcome:
    name = str(params.get("command", ""))
    command = [*cli_command(), *([name] if name else []), "--help"]
    timings = Timings()
    peak = 0
    for _ in range(repeats):
        child = run_child(command)
        timings.add("whole process", child.wall, child.cpu)
        peak = max(peak, child.peak_rss_kib)
    return Outcome(timings, {"peak_rss_kib": peak})


def _refusal(repeats: int) -> Outcome:
    timings = Timings()
    peak = 0
    with tempfile.TemporaryDirectory(prefix="xgpu-bench-") as tmp:
        command = [*cli_command(), "diagnose", "--scenario", str(Path(tmp) / "missing.yaml")]
        for _ in range(repeats):
            child = run_child(command, expect=2)  # a missing file: one line, exit 2
            timings.add("whole process", child.wall, child.cpu)
            peak = max(peak, child.peak_rss_kib)
    return Outcome(timings, {"peak_rss_kib": peak})


def run_case(name: str, params: Params, repeats: int) -> Outcome:
    if name == "help":
        return _help(params, repeats)
    if name == "refusal":
        return _refusal(repeats)
    raise ValueError(f"unknown case {name!r}")
