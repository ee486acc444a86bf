"""`python -m conformance.fixtures`: the test suite's own scenarios through both sides
(docs/conformance.md, "The suite's scenarios").

    python -m conformance.fixtures [--record FOLDER] [--out out/conformance] FOLDER

`--record` first runs the suite (tests/, but the differential tests and the openb replay)
with the recorder on (tests/scenario_recorder.py), which writes every scenario the reader
accepts into FOLDER, one JSON file per distinct scenario. Then each scenario goes through
every comparison its profile fits, with its MIG where the harness models it
(conformance/files.py: kube-scheduler's and Volcano's session, under the none and mixed
strategies), and one
agreement line per comparison is printed; each scenario that disagrees is written to --out
with what differs. A scenario a harness cannot read (a key it has no upstream meaning for)
is counted apart, by the harness's error.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from conformance import (
    compare,
    harness,
    placements,
    preempt_compare,
    session_compare,
    session_preempt,
    volcano_compare,
)
from conformance.files import with_mig, without_mig
from conformance.session_compare import EXPLAINED

REPO = Path(__file__).resolve().parent.parent
RECORDER_ENV = "XGPU_RECORD_SCENARIOS"  # tests/scenario_recorder.py
# The whole suite records: every test that reads a scenario, in process (a CLI the test
# starts as a process records nothing; the files it reads are the examples' or written by
# the test, read in process too). Left out: tests/conformance (generated clusters, which
# `make conformance` compares, and its own nested recording) and the openb replay (`slow`:
# its clusters come from the trace, not the scenario reader).
TESTS = ("tests",)
IGNORED = ("tests/conformance",)
MARKERS = "not slow"


class Result(NamedTuple):
    """One scenario through one comparison: pods compared, agreeing, what differs (an
    explained line starts with EXPLAINED)."""

    pods: int
    agree: int
    diffs: list[str]


def _pods_in(diffs: list[str]) -> int:
    return len({d.split(":", 1)[0] for d in diffs if not d.startswith(EXPLAINED)})


def _kube(datas: list[dict[str, Any]]) -> list[Result]:
    return [Result(pods, agree, diffs) for pods, agree, _, diffs in compare.check(datas)]


def _cycle(datas: list[dict[str, Any]]) -> list[Result]:
    out = []
    for data in datas:  # placements.check sums its scenarios: one at a time
        steps, agree, _, refused, diffs = placements.check([data])
        out.append(Result(steps, agree - refused, diffs))
    return out


def _apart(why: str, lines: list[str]) -> list[str]:
    return [d if d.startswith(EXPLAINED) else f"{EXPLAINED}{why}: {d}" for d in lines]


def _percent(data: dict[str, Any], lines: list[str]) -> list[str]:
    """A pod asking `memory_percent`: Volcano's default device configuration names no
    memory-percentage resource (docs/conformance.md), so upstream never reads it."""
    asks = any("memory_percent" in (p.get("request") or {}) for p in data["pods"])
    return _apart("memory_percent", lines) if asks else lines


def _cards(datas: list[dict[str, Any]]) -> list[Result]:
    rows = volcano_compare.check(datas)
    out = []
    for data, (n, diffs) in zip(datas, rows, strict=True):
        diffs = _percent(data, diffs)
        out.append(Result(n, n - _pods_in(diffs), diffs))
    return out


def _unallocated(data: dict[str, Any], lines: list[str]) -> list[str]:
    """Actions without allocate: upstream moves no group out of Pending without enqueue or
    allocate and reaches no pod, the advisor's cycle allocates anyway and warns
    (docs/conformance.md): its group states and whether allocate reached a pod are
    explained."""
    actions = (data.get("scheduler") or {}).get("actions")
    if actions is None or "allocate" in actions:
        return lines
    groups = [d for d in lines if d.startswith(("group ", session_compare.REACHED))]
    return _apart("no allocate", groups) + [d for d in lines if d not in groups]


def _session(datas: list[dict[str, Any]]) -> list[Result]:
    out = []
    for data, row in zip(datas, session_compare.check(datas), strict=True):
        diffs = _percent(data, _apart("v1.14.1 kept cards", row.diffs) if row.apart else row.diffs)
        diffs = _unallocated(data, diffs)
        why = (session_compare.CAUSE, session_compare.REACHED)
        pods = [d for d in diffs if not d.startswith(("group ", *why, EXPLAINED))]
        out.append(Result(row.pods, row.pods - _pods_in(pods), diffs))
    return out


def _session_preempt(datas: list[dict[str, Any]]) -> list[Result]:
    out = []
    for row in session_preempt.check(datas):
        if row.allocate_differs:  # judged on different states: session_compare's line
            out.append(Result(0, 0, []))
        else:
            out.append(Result(row.compared, row.compared - _pods_in(row.diffs), row.diffs))
    return out


def _hami_preempt(datas: list[dict[str, Any]]) -> list[Result]:
    """A running pod without a start time: kube-scheduler counts it as started now at each
    comparison (`util.GetPodStartTime`), so which of equal victims goes is no one's to
    predict (docs/conformance.md): its victim lines are explained."""
    out = []
    for data, (pods, agree, _, diffs, _) in zip(datas, preempt_compare.check(datas), strict=True):
        if any("started" not in p for p in data["pods"] if "node" in p):
            victims = [d for d in diffs if ": advisor evicts " in d]
            diffs = _apart("no start time", victims) + [d for d in diffs if d not in victims]
            agree = pods - _pods_in(diffs)
        out.append(Result(pods, agree, diffs))
    return out


def _profile(data: dict[str, Any]) -> str:
    return str((data.get("scheduler") or {}).get("profile", "cce"))


# (name, which scenarios it fits, the comparison, how its harness reads a scenario's MIG).
# Volcano's harnesses read vGPU cards (deviceshare), so only volcano-vgpu scenarios go
# through them: the device code without MIG, the session with it (`files.with_mig`); HAMi's
# own card code cannot be built (docs/conformance.md), its DefaultPreemption runs through
# kube-scheduler, which reads MIG too.
Run = Callable[[list[dict[str, Any]]], list[Result]]
Read = Callable[[dict[str, Any]], dict[str, Any]]
COMPARISONS: tuple[tuple[str, Callable[[dict[str, Any]], bool], Run, Read], ...] = (
    ("kube-scheduler filters", lambda d: True, _kube, with_mig),
    ("the advisor's cycle, kube-scheduler filters", lambda d: True, _cycle, with_mig),
    (
        "Volcano v1.15.1's vGPU device code",
        lambda d: _profile(d) == "volcano-vgpu",
        _cards,
        without_mig,
    ),
    (
        "Volcano v1.14.1's session",
        lambda d: _profile(d) == "volcano-vgpu",
        _session,
        with_mig,
    ),
    (
        "Volcano v1.14.1's preempt and reclaim",
        lambda d: _profile(d) == "volcano-vgpu",
        _session_preempt,
        with_mig,
    ),
    (
        "kube-scheduler's DefaultPreemption",
        lambda d: _profile(d) == "hami",
        _hami_preempt,
        with_mig,
    ),
)


def run_each(run: Run, datas: list[dict[str, Any]]) -> list[Result | str]:
    """`run` on the scenarios at once; where one of them fails a side, on each half again,
    down to the scenario alone, which gives the reason (the harness's error, the
    advisor's): k failing among n cost about k·log n runs, not n."""
    if not datas:
        return []
    try:
        return list(run(datas))
    except Exception as e:  # halved below; alone, counted by its reason, never hidden
        if len(datas) == 1:
            first = str(e).splitlines()[0] if str(e) else ""
            first = re.sub(r"\S*cluster-\d+\.json:? ?", "", first)  # run_scenarios' file
            return [f"{type(e).__name__}: {first}"]
    half = len(datas) // 2
    return run_each(run, datas[:half]) + run_each(run, datas[half:])


def load(folder: Path) -> list[tuple[str, dict[str, Any]]]:
    """The recorded scenarios, by file name, as recorded (each comparison reads their MIG
    its own way: `COMPARISONS`)."""
    out = []
    for path in sorted(folder.glob("*.json")):
        data = json.loads(path.read_text())
        data.setdefault("pods", [])  # optional; the comparisons read it
        out.append((path.stem, data))
    return out


def as_read(
    named: list[tuple[str, dict[str, Any]]], read: Read
) -> list[tuple[str, dict[str, Any]]]:
    """The scenarios as a harness reads them (`read`); those left with no node are left out
    (a scenario has nodes)."""
    out = [(name, read(data)) for name, data in named]
    return [(name, data) for name, data in out if data.get("nodes")]


def record(
    folder: Path, tests: tuple[str, ...] = TESTS, workers: int = 2, markers: str = MARKERS
) -> None:
    """Runs the suite's tests (`tests`, paths or patterns, but IGNORED; those `markers`
    select; on `workers` processes, 0: in one) with the recorder writing into `folder`."""
    env = {**os.environ, RECORDER_ENV: str(folder.resolve()), "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", markers]
    paths = [str(p.relative_to(REPO)) for pattern in tests for p in sorted(REPO.glob(pattern))]
    cmd += ["--quick-properties", *paths, *(f"--ignore={path}" for path in IGNORED)]
    cmd += ["-n", str(workers)] if workers else []
    subprocess.run(cmd, cwd=REPO, env=env, check=False, stdout=subprocess.DEVNULL)


def report(named: list[tuple[str, dict[str, Any]]], out: Path | None) -> list[str]:
    """One agreement line per comparison, then what it could not read and what differs."""
    lines = []
    for i, (title, fits, run, read) in enumerate(COMPARISONS):
        chosen = [(name, data) for name, data in as_read(named, read) if fits(data)]
        results = run_each(run, [data for _, data in chosen]) if chosen else []
        unread = Counter(r for r in results if isinstance(r, str))
        done = [
            (name, r) for (name, _), r in zip(chosen, results, strict=True) if isinstance(r, Result)
        ]
        pods = sum(r.pods for _, r in done)
        agree = sum(r.agree for _, r in done)
        explained = sum(1 for _, r in done for d in r.diffs if d.startswith(EXPLAINED))
        lines.append(
            f"agreement: {agree}/{pods} pods on {len(done)} scenarios (fixtures, {title})"
            + (f"; {explained} explained lines" if explained else "")
        )
        for why, count in sorted(unread.items()):
            lines.append(f"  not read, {count} scenarios: {why}")
        for name, r in done:
            if any(not d.startswith(EXPLAINED) for d in r.diffs):
                lines += [f"  {name}: {d}" for d in r.diffs[:5]]
                if out is not None:
                    out.mkdir(parents=True, exist_ok=True)
                    data = dict(chosen)[name]
                    text = json.dumps({"comparison": title, "differs": r.diffs, "scenario": data})
                    (out / f"fixture-{i}-{name}.json").write_text(text + "\n")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m conformance.fixtures", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("folder", type=Path, help="the recorded scenarios (JSON)")
    parser.add_argument("--record", action="store_true", help="record them first")
    parser.add_argument("--out", type=Path, default=Path("out/conformance"))
    args = parser.parse_args(argv)
    missing = harness.go_missing()
    if missing is not None:
        print(f"conformance: {missing}", file=sys.stderr)
        return 2
    if args.record:
        record(args.folder)
    named = load(args.folder)
    recorded = len(list(args.folder.glob("*.json")))
    print(
        f"{recorded} scenarios recorded from the suite ({', '.join(TESTS)}; "
        f"not {', '.join(IGNORED)}, -m {MARKERS!r}), "
        f"{len(as_read(named, without_mig))} with a node left without MIG"
    )
    print("\n".join(report(named, args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
