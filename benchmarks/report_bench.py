"""`python -m benchmarks.report_bench [--quick] [--nodes N ...] [--json OUT] [--budget S]`: the
whole cron run, `xgpu-advisor report`, on the synthetic cluster of `benchmarks.synthetic` at
three sizes (or the sizes `--nodes` names, such as the fleet's 20,000), and
(`make bench` only, case `training`) on the 5,000-node training cluster of
`benchmarks.training`, its pods in 500 gangs in 20 queues under Volcano's session.

The question it answers for a platform team: does the 5-minute CronJob keep up (it gives up
after `activeDeadlineSeconds: 270`, with a 1 GiB memory limit: deploy/base/advisor-cronjob.yaml),
and where does the time go. For each size the cluster is written as a scenario file (what
`--scenario` reads), the command runs in a child process with `--time-budget 60` (the
CronJob's), and the figures are its wall and CPU time, its peak RSS, the sizes of the three
reports, and the per-phase seconds the run records in `report.json` (`run.phases`). What no
phase covers — interpreter start, imports, reading the scenario, writing the files — is
given as `other`. Gathering from Prometheus and Kubernetes is not part of it.

Also offers `cases()` / `run_case()` for `benchmarks.run` (see `benchmarks.measure`).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from advisor.commands.report import REPORT_FILES
from advisor.scenario import save_scenario
from benchmarks.measure import Case, Outcome, Params, Timings, cli_command, run_child
from benchmarks.synthetic import SyntheticSpec, synthetic_cluster
from benchmarks.training import training_cluster

MODULE = "benchmarks.report_bench"
PENDING_PER_NODE = 0.4  # 2,000 Pending on 5,000 nodes, as diagnose_bench's full size
SIZES = (500, 2_000, 5_000)
FLEET = 20_000  # the largest clusters the tool is for (issue #25): `--nodes 20000`
TIME_BUDGET_S = 60  # the CronJob's --time-budget
DEADLINE_S = 270  # the CronJob's activeDeadlineSeconds
MEMORY_LIMIT_MIB = 1024  # the CronJob's memory limit
TRAINING_GANGS = 500
PHASE = "xgpu-advisor report (CLI)"
TABLES = {
    "report": (
        "The cron run, `xgpu-advisor report --time-budget 60`, on the synthetic cluster "
        "(8 cards and 6 running pods per node, 0.4 Pending per node)",
        "nodes",
    ),
    "training": (
        "The cron run on the training cluster (the same nodes and pods in 500 gangs of 8–64 "
        "in 20 queues, cce)",
        "nodes",
    ),
}


def params(nodes: int, budget: float = TIME_BUDGET_S, gangs: int = 0) -> dict[str, int | str]:
    pending = round(nodes * PENDING_PER_NODE)
    return {"nodes": nodes, "pending": pending, "budget": str(budget), "gangs": gangs}


def cases(quick: bool) -> list[Case]:
    def case(name: str, nodes: int, gangs: int = 0) -> Case:
        return Case(
            MODULE,
            name,
            f"{nodes:,}",
            name,
            params(nodes, gangs=gangs),
            repeats=1,  # the plan search fills its budget: one run is what the cron sees
            goal_phase=PHASE,
            goal_seconds=DEADLINE_S,
            goal_rss_mib=MEMORY_LIMIT_MIB,
        )

    sized = [case("report", nodes) for nodes in (SIZES[:1] if quick else SIZES)]
    return sized if quick else [*sized, case("training", SIZES[-1], TRAINING_GANGS)]


def run_case(name: str, params: Params, repeats: int) -> Outcome:
    if name not in TABLES:
        raise ValueError(f"unknown case {name!r}")
    timings = Timings()
    facts: dict[str, Any] = {}
    gangs = int(params.get("gangs", 0))
    for _ in range(repeats):
        facts = measure(
            int(params["nodes"]), int(params["pending"]), float(params["budget"]), gangs
        )
        timings.add(PHASE, facts["wall_seconds"], facts["cpu_seconds"])
    return Outcome(timings, facts)


def measure(nodes: int, pending: int, budget: float, gangs: int = 0) -> dict[str, Any]:
    """One `report` run on a fresh scenario file; every figure the tables show. With
    `gangs`, the training cluster of that many gangs instead of the synthetic one."""
    if gangs:
        cluster = training_cluster(nodes, pending, gangs)
    else:
        cluster = synthetic_cluster(SyntheticSpec.scaled(nodes, pending))
    running = len(cluster.running)
    with tempfile.TemporaryDirectory(prefix="xgpu-bench-") as tmp:
        scenario, out = Path(tmp) / "synthetic.json", Path(tmp) / "out"
        save_scenario(scenario, cluster)
        del cluster  # this process stays small; the child's RSS is measured anyway
        command = [*cli_command(), "report", "--scenario", str(scenario)]
        command += ["--output-dir", str(out), "--time-budget", f"{budget:g}"]
        child = run_child(command)
        data = json.loads((out / "report.json").read_text(encoding="utf-8"))
        sizes = {name: (out / name).stat().st_size for name in REPORT_FILES}
        scenario_bytes = scenario.stat().st_size
    phases: dict[str, float] = dict(data["run"]["phases"])
    phases["other"] = round(max(child.wall - sum(phases.values()), 0.0), 3)
    summary, plan = data["diagnosis"]["summary"], data["plan"]
    wall = round(child.wall, 2)
    keeps_up = wall <= DEADLINE_S and child.peak_rss_kib / 1024 <= MEMORY_LIMIT_MIB
    return {
        "nodes": nodes,
        "running": running,
        "pending": pending,
        "time_budget_s": budget,
        "wall_seconds": child.wall,
        "cpu_seconds": child.cpu,
        "peak_rss_kib": child.peak_rss_kib,  # the CLI's, for benchmarks.run
        "peak_rss_mib": round(child.peak_rss_kib / 1024, 1),
        "duration_seconds": data["run"]["duration_seconds"],
        "phases": phases,
        "output_bytes": sizes,
        "scenario_bytes": scenario_bytes,
        "pending_by_cause": {k: v for k, v in summary.items() if k != "pending"},
        "plans": plan["summary"]["plans"],
        "rescued_pods": plan["summary"]["rescued_pods"],
        "budget_exhausted": plan["summary"].get("budget_exhausted"),
        "scale_up_nodes": sum(s["nodes"] for s in plan["scale_up"]),
        "scale_down_nodes": len(plan["scale_down"]),
        "keeps_up": keeps_up,
        "note": _note(phases, sizes, keeps_up),
    }


def _note(phases: Mapping[str, float], sizes: Mapping[str, int], keeps_up: bool) -> str:
    spent = " · ".join(f"{name} {seconds:.2f}" for name, seconds in phases.items())
    written = ", ".join(f"{name.split('.')[-1]} {_size(n)}" for name, n in sizes.items())
    fits = "yes" if keeps_up else "**no**"
    limits = f"≤ {DEADLINE_S} s, ≤ {MEMORY_LIMIT_MIB} MiB"
    return f"phases (s): {spent}; reports: {written}; fits the CronJob ({limits}): {fits}"


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n / 1024:.0f} KiB"


# -- standalone ------------------------------------------------------------------------


def table(rows: Sequence[Mapping[str, Any]]) -> str:
    phases = list(dict.fromkeys(p for r in rows for p in r["phases"]))
    head = ["nodes / running / Pending", "wall (s)", "CPU (s)", "peak RSS (MiB)"]
    head += [f"{p} (s)" for p in phases] + ["reports (JSON, MD, HTML)", "plans", "keeps up"]
    lines = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 2) + "---|"]
    for r in rows:
        sizes = ", ".join(_size(n) for n in r["output_bytes"].values())
        cells = [
            f"{r['nodes']:,} / {r['running']:,} / {r['pending']:,}",
            f"{r['wall_seconds']:.1f}",
            f"{r['cpu_seconds']:.1f}",
            f"{r['peak_rss_mib']:.0f}",
            *(f"{r['phases'].get(p, 0.0):.2f}" for p in phases),
            sizes,
            f"{r['plans']} ({r['rescued_pods']} pods)",
            "yes" if r["keeps_up"] else "**no**",
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def sizes(quick: bool, nodes: Sequence[int] | None) -> tuple[int, ...]:
    """The sizes a standalone run measures: those asked for, else the table's."""
    return tuple(nodes) if nodes else SIZES[:1] if quick else SIZES


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.report_bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help=f"{SIZES[0]:,} nodes only")
    parser.add_argument(
        "--nodes",
        type=int,
        nargs="+",
        metavar="N",
        help=f"these sizes instead (e.g. {FLEET}, the fleet's row)",
    )
    parser.add_argument("--json", type=Path, metavar="OUT", help="also write the figures here")
    parser.add_argument("--budget", type=float, default=TIME_BUDGET_S, help="--time-budget")
    args = parser.parse_args(argv)
    if args.nodes and (args.quick or min(args.nodes) < 1):
        parser.error("--nodes takes sizes of at least 1, without --quick")
    rows = []
    for nodes in sizes(args.quick, args.nodes):
        print(f"xgpu-advisor report on {nodes:,} nodes ...", file=sys.stderr, flush=True)
        p = params(nodes, args.budget)
        rows.append(measure(nodes, int(p["pending"]), args.budget))
    print(table(rows))
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
