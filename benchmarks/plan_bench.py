"""`python -m benchmarks.plan_bench [--json OUT] [--only binpack|spread] [--caps default|goal]
[--budget S]`: rebalancing plans (docs/design.md §8) on the openb end states, verified
independently.

For each node policy (card binpack both): replay openb_pod_list_default onto the node
list, save the end state as a scenario (what `xgpu-advisor replay --write-scenario`
writes), run the whole `xgpu-advisor plan --format json` process on it (timed: the figure
the ≤ 60 s goal is about), then re-simulate every plan it printed with a straightforward
implementation of the §8 semantics on `diagnose` — evicted pods re-added as Pending at the
end of their priority class, one scheduling cycle, every rescued and evicted pod must land
where the plan says, plans applied in order — and check the caps. Only verified plans
count in the figures.

Two sets of caps (`CAPS`): the defaults a team gets (at most 4 evictions per plan, 3 per
rescued card in all), and the goal's (at most 3 evictions per rescued GPU of memory, any
plan size up to the search's 32), under which the issue's ceilings were computed.

Beside the figures, the bounds: the ceiling of ANY sequence of §8 plans within the caps'
eviction budget, queue order counted (`benchmarks.plan_queue_ceiling`: two queue lemmas
and an exact integer program per case), computed here; whether the goal is below it at
all; the same ceiling with the queue order ignored, cited (`CITED_CEILING`) from the issue
that set the goals; card weights (`OPENB_CARD_WEIGHTS`, read off the dual of the
cutting-stock LP of the binpack end state) that `packing_bound` checks to be dual feasible
for the pod sizes present cap what ANY rearrangement places, plans of every kind included
(binpack: 37.25 of 132.44 Pending GPUs, 28.1%); and the full-repack optimum (unlimited
evictions, queue order ignored), computed by the exact integer program of
`benchmarks.plan_ceiling`.

Also offers `cases()` / `run_case()` for `benchmarks.run` (see `benchmarks.measure`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from collections.abc import Mapping, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from advisor.core.diagnose import diagnose
from advisor.core.model import Cluster, Placement
from advisor.core.plan import DEFAULT_BUDGET
from advisor.core.plan.ideal import WeightSteps, packing_bound
from advisor.core.plan.limits import EvictionBudget
from advisor.scenario import load_scenario, save_scenario
from benchmarks.measure import Case, Outcome, Params, Timings, run_child
from benchmarks.openb_states import NODES_CSV, end_state, openb_dir
from benchmarks.plan_ceiling import full_repack_optimum
from benchmarks.plan_queue_ceiling import queue_ceiling

MODULE = "benchmarks.plan_bench"
GOAL_SHARE = {"binpack": 0.185, "spread": 0.78}  # of the Pending GPU demand, verified
GOAL_EVICTIONS_PER_GPU = 3.0
GOAL_SECONDS = 60.0
# The plan flags of each set of caps: the CLI's defaults, and the goal's.
CAPS: dict[str, list[str]] = {
    "default": [],
    "goal": ["--max-plan-evictions", "32", "--max-evictions", "3/gpu"],
}
# The eviction budget each set of caps holds the whole advice to, for its ceiling.
CEILING_BUDGET = {"default": DEFAULT_BUDGET, "goal": EvictionBudget(3.0, "gpu")}
# The reachable ceiling with <= 3 evictions per rescued GPU with the queue order ignored,
# from the exact integer program of the issue that set the goals. Not recomputed here: the
# ceiling with the queue order counted is (`plan_queue_ceiling`), as is the full-repack
# optimum (`plan_ceiling`, which matches that 28.0% / 80.3%).
CITED_CEILING = {"binpack": 0.187, "spread": 0.803}
# Weight of a pod per card by its share of the card: 0.81 and 1.0 weigh 1, 0.55-0.65 weigh
# 2/3, 0.46-0.48 1/2, 0.32-0.44 1/3, 0.23-0.29 1/4, 0.22 1/12, 0.16 and below nothing.
OPENB_CARD_WEIGHTS: WeightSteps = (
    (Fraction(220, 1000), Fraction(1, 12)),
    (Fraction(230, 1000), Fraction(1, 4)),
    (Fraction(300, 1000), Fraction(1, 3)),
    (Fraction(450, 1000), Fraction(1, 2)),
    (Fraction(501, 1000), Fraction(2, 3)),
    (Fraction(700, 1000), Fraction(1)),
)
TABLES = {"plan": ("Rebalancing plans on the openb end states (verified)", "end state")}


def _protected(annotations: Mapping[str, str], name: str) -> bool:
    disrupt = annotations.get("xgpu.io/do-not-disrupt", "").strip().lower() == "true"
    return name.startswith("kube-system/") or disrupt


def verify(cluster: Cluster, data: Mapping[str, Any]) -> tuple[list[int], list[str]]:
    """Indices of the plans that hold (in order; checking stops at the first that does
    not) and what was wrong, the caps the JSON names included."""
    cap = int(data["limits"]["max_plan_evictions"])
    over = [i + 1 for i, p in enumerate(data["plans"]) if len(p["evict"]) > cap]
    if over:
        return [], [f"plan {over[0]}: {len(data['plans'][over[0] - 1]['evict'])} evictions > {cap}"]
    first = diagnose(cluster, node_detail_limit=0)
    bound = {d.pod.name: d.placement for d in first.pods if d.placement is not None}
    pods = [
        dataclasses.replace(p, placement=bound[p.name]) if p.name in bound else p
        for p in cluster.pods
    ]
    good: list[int] = []
    for number, plan in enumerate(data["plans"]):
        by_name = {p.name: p for p in pods}
        evict = list(plan["evict"])
        wanted = [*plan["rescues"], *evict]
        problem = None
        if any(by_name[n].placement is None for n in evict):
            problem = "evicts a pod that is not running"
        elif any(_protected(by_name[n].annotations, n) for n in evict):
            problem = "evicts a protected pod"
        elif any(by_name[n].placement is not None for n in plan["rescues"]):
            problem = "rescues a pod that is running"
        if problem is None:
            trial = [p for p in pods if p.name not in set(evict)]
            trial += [dataclasses.replace(by_name[n], placement=None) for n in evict]
            cycle = diagnose(dataclasses.replace(cluster, pods=tuple(trial)), node_detail_limit=0)
            landed = {d.pod.name: d.placement for d in cycle.pods if d.placement is not None}
            claimed = {
                n: Placement(w["node"], tuple(w["cards"])) for n, w in plan["placements"].items()
            }
            if any(landed.get(n) != claimed.get(n) for n in wanted):
                problem = "a rescued or evicted pod does not land where the plan says"
            else:
                pods = [
                    dataclasses.replace(p, placement=landed.get(p.name, p.placement)) for p in trial
                ]
        if problem is not None:
            return good, [f"plan {number + 1}: {problem}"]
        good.append(number)
    return good, []


def measure(node_policy: str, budget: float, timings: Timings, caps: str) -> dict[str, Any]:
    cluster = timings.time("replay", lambda: end_state(node_policy))
    with tempfile.TemporaryDirectory() as tmp:
        scenario = Path(tmp) / f"openb-{node_policy}.json"
        save_scenario(scenario, cluster)
        cluster = load_scenario(scenario)  # exactly what the command reads
        command = [sys.executable, "-m", "advisor.cli", "plan", "--scenario", str(scenario)]
        command += ["--format", "json", "--time-budget", str(budget), *CAPS[caps]]
        child = run_child(command)
    timings.add("plan (CLI)", child.wall, child.cpu)
    data = json.loads(child.stdout)
    good, problems = timings.time("verify", lambda: verify(cluster, data))
    bound = packing_bound(cluster, OPENB_CARD_WEIGHTS)
    requests = {p.name: p.request for p in cluster.pods}
    summary = data["summary"]
    reference = summary["reference_card_mib"]
    plans = [data["plans"][i] for i in good]
    rescued = [n for p in plans for n in p["rescues"]]
    rescued_gpus = sum(requests[n].memory_mib for n in rescued) / reference
    rescued_cards = sum(requests[n].gpus for n in rescued)
    pending_gpus = summary["pending_gpus"]
    evictions = sum(len(p["evict"]) for p in plans)
    share = rescued_gpus / pending_gpus if pending_gpus else 0.0
    per_gpu = evictions / rescued_gpus if rescued_gpus else None
    per_card = evictions / rescued_cards if rescued_cards else None
    goal = GOAL_SHARE[node_policy]
    met = (
        share >= goal
        and per_gpu is not None
        and per_gpu <= GOAL_EVICTIONS_PER_GPU
        and child.wall <= GOAL_SECONDS
        and not problems
    )
    cited = CITED_CEILING[node_policy]
    optimum = timings.time("optimum", lambda: full_repack_optimum(cluster))
    ceiling = timings.time("ceiling", lambda: queue_ceiling(cluster, CEILING_BUDGET[caps]))
    return {
        "end_state": f"node {node_policy}, card binpack",
        "caps": caps,
        "flags": " ".join(CAPS[caps]) or "(defaults)",
        "pending_pods": summary["pending"],
        "pending_gpus": pending_gpus,
        "plans": len(data["plans"]),
        "verified_plans": len(plans),
        "held_back": len(data["held_back"]),
        "rescued_pods": len(rescued),
        "rescued_gpus": round(rescued_gpus, 2),
        "rescued_share": round(share, 4),
        "goal_share": goal,
        "evictions": evictions,
        "evictions_per_gpu": round(per_gpu, 2) if per_gpu is not None else None,
        "evictions_per_card": round(per_card, 2) if per_card is not None else None,
        "cost": summary["cost"],
        "ideal_repack_share": data["ideal"]["repack_share"],
        "ideal_upper_share": data["ideal"]["upper_bound_share"],
        "packing_bound_share": round(bound.share, 4) if bound else None,
        "ceiling_share": round(ceiling.share, 4),
        "ceiling_exact": ceiling.exact,
        "ceiling_budget": CEILING_BUDGET[caps].text,
        "goal_reachable": goal <= ceiling.share,
        "cited_ceiling_share": cited,
        "optimum_share": round(optimum.share, 4),
        "optimum_status": optimum.status,
        "plan_wall_seconds": round(child.wall, 2),
        "plan_cpu_seconds": round(child.cpu, 2),
        "work": summary["work"],
        "simulations": summary["simulations"],
        "stopped_by": summary["stopped_by"],
        "peak_rss_mib": round(child.peak_rss_kib / 1024, 1),
        "peak_rss_kib": child.peak_rss_kib,  # the CLI's, for benchmarks.run
        "problems": problems,
        "goals_met": met,
        "note": (
            f"{caps} caps: {len(rescued)} pods, {rescued_gpus:.2f}/{pending_gpus:.2f} GPUs "
            f"({share:.1%}, goal {goal:.1%}, ceiling {ceiling.share:.2%}); {evictions} evictions "
            f"({per_gpu or 0:.2f}/GPU); {len(plans)}/{len(data['plans'])} plans verified"
        ),
    }


# -- benchmarks.run protocol -----------------------------------------------------------


def cases(quick: bool) -> list[Case]:
    if not (openb_dir() / NODES_CSV).is_file():
        print(f"benchmarks: no openb trace in {openb_dir()}; plans skipped", file=sys.stderr)
        return []
    return [
        Case(
            MODULE,
            "openb",
            f"plan, openb end state, node {node}, card binpack, {caps} caps",
            table="plan",
            params={"node": node, "budget": 300, "caps": caps},
            repeats=1,
            goal_phase="plan (CLI)",
            goal_seconds=GOAL_SECONDS,
        )
        for node in ("binpack", "spread")
        for caps in CAPS
    ]


def run_case(name: str, params: Params, repeats: int) -> Outcome:
    if name != "openb":
        raise ValueError(f"unknown case {name!r}")
    timings = Timings()
    facts: dict[str, Any] = {}
    for _ in range(repeats):
        caps = str(params.get("caps", "default"))
        facts = measure(str(params["node"]), float(params["budget"]), timings, caps)
    return Outcome(timings, facts)


# -- standalone ------------------------------------------------------------------------


def table(rows: Sequence[Mapping[str, Any]]) -> str:
    header = (
        "| end state | caps | Pending pods / GPUs | rescued (verified) | goal "
        "| ceiling: queue counted / queue ignored (cited) / full repack "
        "| evictions (per GPU, per card) | plans (held back) | ideal repack "
        "| packing bound | plan time (CLI) | met |"
    )
    lines = [header, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(
            f"| {r['end_state']} | {r['caps']} | {r['pending_pods']} / {r['pending_gpus']:.2f} "
            f"| {r['rescued_pods']} pods, {r['rescued_gpus']:.2f} GPUs ({r['rescued_share']:.1%}) "
            f"| ≥ {r['goal_share']:.1%}{'' if r['goal_reachable'] else ' (unreachable)'} "
            f"| {r['ceiling_share']:.2%} ({r['ceiling_budget']}) / "
            f"{r['cited_ceiling_share']:.1%} / {r['optimum_share']:.1%} "
            f"| {r['evictions']} ({r['evictions_per_gpu']}, {r['evictions_per_card']}) "
            f"| {r['verified_plans']}/{r['plans']} ({r['held_back']}) "
            f"| {r['ideal_repack_share']:.1%} | {_share(r['packing_bound_share'])} "
            f"| {r['plan_wall_seconds']:.1f} s | {'yes' if r['goals_met'] else 'no'} |"
        )
    return "\n".join(lines)


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"≤ {value:.1%}"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.plan_bench")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--only", choices=("binpack", "spread"))
    parser.add_argument("--caps", choices=tuple(CAPS), help="one set of caps (default: both)")
    parser.add_argument(
        "--budget", type=float, default=300.0, help="plan --time-budget (a safety stop)"
    )
    args = parser.parse_args(argv)
    if not (openb_dir() / NODES_CSV).is_file():
        print(f"no openb trace in {openb_dir()} (set XGPU_OPENB_DIR)", file=sys.stderr)
        return 2
    rows = []
    for node in [args.only] if args.only else ["binpack", "spread"]:
        print(f"plan on the openb end state, node {node} ...", file=sys.stderr, flush=True)
        for caps in [args.caps] if args.caps else list(CAPS):
            rows.append(measure(node, args.budget, Timings(), caps))
    print(table(rows))
    for r in rows:
        for problem in r["problems"]:
            print(f"VERIFY FAILED ({r['end_state']}): {problem}", file=sys.stderr)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 1 if any(r["problems"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
