"""The benchmark report: Markdown tables ready for the README, and the same figures as JSON."""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.measure import Case, Result

# table -> (title, heading of its first column); modules add theirs through TABLES.
MAIN_TABLE = {"main": ("Benchmarks", "benchmark")}


@dataclass(frozen=True, slots=True)
class Standalone:
    """A module that runs only as `python -m NAME`: its output, reported verbatim."""

    name: str
    ok: bool
    output: str


def machine() -> str:
    return (
        f"{os.cpu_count()} CPUs, {platform.system()} {platform.machine()}, "
        f"Python {platform.python_version()}, numpy {np.__version__}"
    )


def _seconds(value: float) -> str:
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def _goal(case: Case) -> str:
    parts = []
    if case.goal_seconds is not None:
        parts.append(f"≤ {case.goal_seconds:g} s")
    if case.goal_rss_mib is not None:
        parts.append(f"≤ {case.goal_rss_mib / 1024:g} GiB")
    return ", ".join(parts)


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def main_table(results: Sequence[Result]) -> list[str]:
    """One row per timed phase; the case's label, memory and note on its first row."""
    head = ["benchmark", "phase", "wall median (s)", "CPU median (s)", "runs"]
    head += ["peak RSS (MiB)", "goal", "met", "notes"]
    lines = [_row(head), "|---|---|---:|---:|---:|---:|---|---|---|"]
    for r in results:
        for i, phase in enumerate(r.phases):
            first, is_goal = i == 0, phase == r.case.goal_phase
            met = r.goal_met() if is_goal else None
            cells = [
                r.case.label if first else "",
                phase,
                _seconds(r.median(phase)),
                _seconds(r.cpu_median(phase)),
                str(len(r.wall[phase])),
                f"{r.peak_rss_mib:.0f}" if first else "",
                _goal(r.case) if is_goal else "",
                "" if met is None else ("yes" if met else "**no**"),
                str(r.facts.get("note", "")) if first else "",
            ]
            lines.append(_row(cells))
    return lines


def scaling_table(results: Sequence[Result], first_column: str) -> list[str]:
    """One row per case (one size), a wall and CPU column per phase."""
    phases = list(dict.fromkeys(p for r in results for p in r.phases))
    head = [first_column]
    for p in phases:
        head += [f"{p} wall median (s)", f"{p} CPU median (s)"]
    head += ["runs", "peak RSS (MiB)", "notes"]
    lines = [_row(head), "|" + "---:|" * (len(head) - 1) + "---|"]
    for r in results:
        cells = [r.case.label]
        for p in phases:
            cells += [_seconds(r.median(p)), _seconds(r.cpu_median(p))] if p in r.wall else ["", ""]
        cells += [str(max(len(v) for v in r.wall.values())), f"{r.peak_rss_mib:.0f}"]
        cells.append(str(r.facts.get("note", "")))
        lines.append(_row(cells))
    return lines


def markdown(
    results: Sequence[Result],
    standalone: Sequence[Standalone],
    tables: Mapping[str, tuple[str, str]],
    header: str,
) -> str:
    lines = [header]
    titles = {**MAIN_TABLE, **tables}
    for table in dict.fromkeys(r.case.table for r in results):
        title, first_column = titles.get(table, (table, "benchmark"))
        rows = [r for r in results if r.case.table == table]
        lines += ["", f"### {title}", ""]
        lines += main_table(rows) if table == "main" else scaling_table(rows, first_column)
    for s in standalone:
        lines += ["", f"### {s.name}" + ("" if s.ok else " (FAILED)"), "", "```", s.output, "```"]
    return "\n".join(lines) + "\n"


def as_json(
    results: Sequence[Result], standalone: Sequence[Standalone], extra: Mapping[str, Any]
) -> dict[str, Any]:
    return {
        "schema": "xgpu-insight/benchmarks/v1",
        **extra,
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "platform": platform.platform(),
        },
        "results": [r.to_json() for r in results],
        "standalone": {s.name: {"ok": s.ok, "output": s.output} for s in standalone},
    }
