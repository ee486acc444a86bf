"""Start-up: what every `xgpu-advisor` run pays before it does any work (issue goal: at most
150 ms), as whole processes of the installed command.

Cases:
- `help`: `xgpu-advisor --help`, and `xgpu-advisor COMMAND --help` for each command: the
  parser alone (`advisor.commands.flags.commands`), none of the model or the sources.
- `refusal`: each command given an input file that is not there (`--scenario` for the
  commands that read one, `--pods` for replay): the command's own module loaded and stopped
  where it reads, refused before the model (the core, the scenario parser and reader, the
  trace replay, their libraries) loads.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from benchmarks.measure import Case, Outcome, Params, Timings, cli_command, run_child

MODULE = "benchmarks.startup_bench"
COMMANDS = ("diagnose", "plan", "report", "snapshot", "whatif", "replay", "serve")
GOAL_S = 0.15
# Each refusal case's flags; MISSING (and the rest of {tmp}) is not there, NODES is a node list.
REFUSALS = {
    "diagnose": ("--scenario", "MISSING"),
    "plan": ("--scenario", "MISSING"),
    "whatif": ("--scenario", "MISSING"),
    "report": ("--scenario", "MISSING", "--output-dir", "{tmp}/out"),
    "replay": ("--nodes", "NODES", "--pods", "MISSING"),
}


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
        *(
            Case(
                MODULE,
                "refusal",
                f"`xgpu-advisor {name} {_shown(flags)}`: refused at its input",
                params={"command": name},
                repeats=repeats,
                goal_phase="whole process",
                goal_seconds=GOAL_S,
            )
            for name, flags in REFUSALS.items()
        ),
    ]


def _shown(flags: tuple[str, ...]) -> str:
    return " ".join(flags).replace("{tmp}/", "")


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


def _refusal(params: Params, repeats: int) -> Outcome:
    name = str(params.get("command", "diagnose"))
    timings = Timings()
    peak = 0
    with tempfile.TemporaryDirectory(prefix="xgpu-bench-") as tmp:
        nodes = Path(tmp) / "nodes.csv"
        nodes.write_text("sn,gpu,model\nn1,2,V100\n")  # read, so that replay stops at --pods
        named = {"MISSING": str(Path(tmp) / "missing"), "NODES": str(nodes)}
        flags = [named.get(f, f).replace("{tmp}", tmp) for f in REFUSALS[name]]
        command = [*cli_command(), name, *flags]
        for _ in range(repeats):
            child = run_child(command, expect=2)  # a missing file: one line, exit 2
            timings.add("whole process", child.wall, child.cpu)
            peak = max(peak, child.peak_rss_kib)
    return Outcome(timings, {"peak_rss_kib": peak})


def run_case(name: str, params: Params, repeats: int) -> Outcome:
    if name == "help":
        return _help(params, repeats)
    if name == "refusal":
        return _refusal(params, repeats)
    raise ValueError(f"unknown case {name!r}")
