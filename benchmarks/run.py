"""`python -m benchmarks.run [--quick] [--json OUT] [--only TEXT]`: every advisor benchmark,
each in a fresh subprocess, reported as Markdown tables ready for the README.

Benchmark modules are found by name (MODULES); one that is not there yet is skipped. A module
that offers `cases()` and `run_case()` (see `benchmarks.measure`) joins the tables; one that
only has a command line of its own (`python -m benchmarks.NAME`) is run as it is, in full
runs only, and its output is reported verbatim. The exit code is 1 when a cross-check
between the core and the reference scheduler disagrees or a standalone benchmark fails (a
missed speed goal is reported, not failed: timings depend on the machine).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from importlib import import_module
from importlib.util import find_spec
from pathlib import Path
from types import ModuleType

from benchmarks.measure import REPO, Case, Result, child_env, run_isolated
from benchmarks.report import Standalone, as_json, machine, markdown

MODULES = (
    "benchmarks.replay_bench",
    "benchmarks.diagnose_bench",
    "benchmarks.jobs_bench",
    "benchmarks.mig_bench",
    "benchmarks.plan_bench",
    "benchmarks.exporter_bench",
    "benchmarks.report_bench",
    "benchmarks.prometheus_answer_bench",
    "benchmarks.startup_bench",
)
STANDALONE_TIMEOUT_S = 900


def discover() -> tuple[list[ModuleType], list[str]]:
    """Modules with the case protocol, and names of modules that only run standalone."""
    with_cases: list[ModuleType] = []
    standalone: list[str] = []
    for name in MODULES:
        if find_spec(name) is None:
            continue
        module = import_module(name)
        if hasattr(module, "cases") and hasattr(module, "run_case"):
            with_cases.append(module)
        else:
            standalone.append(name)
    return with_cases, standalone


def collect(modules: Sequence[ModuleType], quick: bool, only: str | None) -> list[Case]:
    found: list[Case] = [case for module in modules for case in module.cases(quick)]
    if only:
        found = [c for c in found if only in f"{c.module}:{c.name}:{c.label}"]
    return found


def run_all(cases: Sequence[Case]) -> list[Result]:
    """Each case in its own process; a case identical to one already run is reused."""
    done: dict[tuple[str, str, str, int], Result] = {}
    results = []
    for number, case in enumerate(cases, 1):
        key = (case.module, case.name, json.dumps(dict(case.params), sort_keys=True), case.repeats)
        if key not in done:
            print(f"[{number}/{len(cases)}] {case.label} ...", file=sys.stderr, flush=True)
            done[key] = run_isolated(case)
        r = done[key]
        results.append(Result(case, r.wall, r.cpu, r.peak_rss_kib, r.facts))
    return results


def run_standalone(name: str) -> Standalone:
    """`python -m NAME` in its own process, with what it printed."""
    print(f"[standalone] {name} ...", file=sys.stderr, flush=True)
    command = [sys.executable, "-m", name]
    try:
        done = subprocess.run(
            command,
            cwd=REPO,
            env=child_env(),
            capture_output=True,
            text=True,
            check=False,
            timeout=STANDALONE_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return Standalone(name, False, f"timed out after {STANDALONE_TIMEOUT_S} s")
    ok = done.returncode == 0
    return Standalone(name, ok, (done.stdout if ok else done.stdout + done.stderr).strip())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="one run each, fewer sizes (< 1 min)")
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write every figure here")
    parser.add_argument("--only", metavar="TEXT", help="only cases whose module:name:label has it")
    args = parser.parse_args(argv)
    modules, standalone_names = discover()
    load_before = os.getloadavg()[0]
    results = run_all(collect(modules, args.quick, args.only))
    standalone = [
        run_standalone(name)
        for name in standalone_names
        if not args.quick and (not args.only or args.only in name)
    ]
    load_after = os.getloadavg()[0]
    tables = {k: v for m in modules for k, v in getattr(m, "TABLES", {}).items()}
    header = (
        f"Machine: {machine()}; 1-minute load average {load_before:.2f} before the run, "
        f"{load_after:.2f} after." + (" Quick mode (one run each)." if args.quick else "")
    )
    sys.stdout.write(markdown(results, standalone, tables, header))
    if args.json is not None:
        extra = {"quick": args.quick, "load_average": [load_before, load_after]}
        data = as_json(results, standalone, extra)
        args.json.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    failed = [r.case.label for r in results if r.facts.get("crosscheck_ok") is False]
    failed += [s.name for s in standalone if not s.ok]
    for label in failed:
        print(f"benchmarks: FAILED: {label}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
