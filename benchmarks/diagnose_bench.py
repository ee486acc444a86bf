"""`diagnose` on the synthetic cluster of `benchmarks.synthetic`, and how it scales.

Cases:
- `diagnose`: build the cluster once (untimed but for a fact), then time
  `diagnose(cluster)` with the default node detail; `whole_node` 1 adds allocatable,
  labels, taints, cordons, requests, selectors and tolerations to every node and pod.
- `autoscalers`: the same cluster with `autoscalers` HPAs, each over one running pod's
  Deployment and up to 10 replicas more; times the judged cycle and then the reachable
  replicas (docs/design.md §12.2) on its diagnosis. Goal: 30 % of diagnose's 5 s. Templates
  alike share one run (`core.autoscalers.kind_of`); `distinct` 1 makes each its own kind,
  the cost where none is shared.
- `cli`: write the cluster as a JSON scenario and time the whole
  `xgpu-advisor diagnose --format json` process (its peak RSS is the CLI's own), with the
  CLI's stages also timed in-process (load, diagnose, the plan search its advice weighs,
  JSON) to show where the time goes.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from dataclasses import replace
from functools import partial
from pathlib import Path

from advisor.core.autoscalers import kind_of, one_pod_cycle, reachable, templates
from advisor.core.diagnose import diagnose
from advisor.core.diagnosis import Diagnosis
from advisor.core.gang import judge
from advisor.core.hpa import Autoscaler
from advisor.core.occupancy import build_state
from advisor.core.plan import PlanOptions, plan
from advisor.core.state import CardState
from advisor.output import diagnosis_json
from advisor.scenario import load_scenario, save_scenario
from advisor.scenario.profile import retarget
from benchmarks.measure import Case, Outcome, Params, Timings, cli_command, run_child
from benchmarks.synthetic import SyntheticSpec, synthetic_cluster

MODULE = "benchmarks.diagnose_bench"
FULL_NODES, FULL_PENDING = 5_000, 2_000
NODE_STEPS = (500, 1_000, 2_000, 5_000)
PENDING_STEPS = (250, 500, 1_000, 2_000)
SYNTHETIC = "synthetic 5,000 nodes × 8 cards, 30,000 running, 2,000 Pending"
WHOLE_NODE = "the same with allocatable, labels, taints, requests, selectors, tolerations"
TABLES = {
    "nodes": ("Diagnose time vs nodes (8 cards, 6 running pods per node; 2,000 Pending)", "nodes"),
    "pending": ("Diagnose time vs Pending pods (5,000 nodes, 30,000 running)", "Pending pods"),
}


def _params(nodes: int, pending: int) -> dict[str, int | str]:
    return {"nodes": nodes, "pending": pending}


def cases(quick: bool) -> list[Case]:
    repeats = 1 if quick else 5
    full = _params(FULL_NODES, FULL_PENDING)
    found = [
        Case(
            MODULE,
            "diagnose",
            f"diagnose(), {SYNTHETIC}",
            params=full,
            repeats=repeats,
            goal_phase="diagnose",
            goal_seconds=5.0,
        ),
        Case(
            MODULE,
            "diagnose",
            f"diagnose(), {WHOLE_NODE}",
            params=full | {"whole_node": 1},
            repeats=repeats,
            goal_phase="diagnose",
            goal_seconds=2.5,
            goal_rss_mib=1024.0,
        ),
        *(
            Case(
                MODULE,
                "diagnose",
                f"diagnose() --scheduler {profile}, {WHOLE_NODE}",
                params=full | {"whole_node": 1, "scheduler": profile},
                repeats=repeats,
                goal_phase="diagnose",
                goal_seconds=2.5,
                goal_rss_mib=1024.0,
            )
            for profile in ("hami", "volcano-vgpu")
        ),
        Case(
            MODULE,
            "autoscalers",
            f"reachable replicas of 200 autoscalers after judge(), {SYNTHETIC}",
            params=full | {"autoscalers": 200},
            repeats=1 if quick else 3,
            goal_phase="autoscalers",
            goal_seconds=1.5,  # the goal: at most 30 % added to diagnose's 5 s
        ),
        Case(
            MODULE,
            "autoscalers",
            "the same, each template a kind of its own (no run shared)",
            params=full | {"autoscalers": 200, "distinct": 1},
            repeats=1 if quick else 3,
        ),
        Case(
            MODULE,
            "cli",
            f"xgpu-advisor diagnose --format json, {SYNTHETIC}",
            params=full,
            repeats=1 if quick else 3,
        ),
    ]
    node_steps = (500, 2_000, 5_000) if quick else NODE_STEPS
    pending_steps = (250, 1_000, 2_000) if quick else PENDING_STEPS
    found += [
        Case(MODULE, "diagnose", f"{n:,}", "nodes", _params(n, FULL_PENDING), repeats)
        for n in node_steps
    ]
    found += [
        Case(MODULE, "diagnose", f"{p:,}", "pending", _params(FULL_NODES, p), repeats)
        for p in pending_steps
    ]
    return found


def _spec(params: Params) -> SyntheticSpec:
    whole_node = bool(int(params.get("whole_node", 0)))
    return SyntheticSpec.scaled(int(params["nodes"]), int(params["pending"]), whole_node=whole_node)


def _summary_text(summary: dict[str, int]) -> str:
    kinds = ", ".join(f"{n:,} {cause}" for cause, n in summary.items() if cause != "pending" and n)
    return f"Pending: {kinds}"


def _run_diagnose(params: Params, repeats: int) -> Outcome:
    built = Timings()
    cluster = built.time("build", lambda: synthetic_cluster(_spec(params)))
    profile = str(params.get("scheduler", "cce"))
    # the same cluster under another profile's rules and defaults (itself under cce)
    cluster = retarget(cluster, profile)
    timings = Timings()
    for _ in range(repeats):
        diagnosis = timings.time("diagnose", lambda: diagnose(cluster))
    summary = diagnosis.summary
    facts = {
        "build_cluster_seconds": round(built.wall["build"][0], 3),
        "cards": sum(len(n.cards) for n in cluster.nodes),
        "running": len(cluster.running),
        "summary": summary,
        "note": _summary_text(summary),
    }
    return Outcome(timings, facts)


def _run_cli(params: Params, repeats: int) -> Outcome:
    cluster = synthetic_cluster(_spec(params))
    timings = Timings()
    peak = 0
    with tempfile.TemporaryDirectory(prefix="xgpu-bench-") as tmp:
        scenario = Path(tmp) / "synthetic.json"
        save_scenario(scenario, cluster)
        del cluster  # the in-process stages below hold only what the CLI holds
        report = Path(tmp) / "diagnosis.json"
        command = [*cli_command(), "diagnose", "--scenario", str(scenario), "--format", "json"]
        for _ in range(repeats):
            child = run_child([*command, "--output", str(report)])
            timings.add("whole CLI process", child.wall, child.cpu)
            peak = max(peak, child.peak_rss_kib)
        summary = json.loads(report.read_text(encoding="utf-8"))["summary"]
        size_mib = scenario.stat().st_size / 2**20
        # The CLI's stages, once, in this process: where its time goes.
        loaded = timings.time("└ load scenario", lambda: load_scenario(scenario))
        diagnosis = timings.time("└ diagnose", lambda: diagnose(loaded))
        # The advice weighs the rebalancing plans, as the command does (its defaults).
        timings.time(
            "└ plan search (the advice)", lambda: plan(loaded, PlanOptions(), diagnosis=diagnosis)
        )
        timings.time("└ JSON", lambda: json.dumps(diagnosis_json(diagnosis), indent=2))
    note = f"scenario file {size_mib:.1f} MiB JSON; RSS is the CLI process's own"
    return Outcome(timings, {"summary": summary, "peak_rss_kib": peak, "note": note})


def _run_autoscalers(params: Params, repeats: int) -> Outcome:
    cluster = synthetic_cluster(_spec(params))
    count = int(params["autoscalers"])
    distinct = bool(int(params.get("distinct", 0)))
    running = [i for i, p in enumerate(cluster.pods) if p.running]
    chosen = set(running[:: max(1, len(running) // count)][:count])
    pods = list(cluster.pods)
    autoscalers = []
    for k, i in enumerate(sorted(chosen)):
        pod = pods[i]
        target = f"Deployment/{pod.namespace}/app{k}"
        owner = f"ReplicaSet/{pod.namespace}/app{k}-5d8f7"
        # `distinct`: a cpu request of its own makes each template a kind of its own
        # (`kind_of`), so no run is shared; the GPU-only nodes' cpu is unlimited, so every
        # replica goes where it went
        resources = replace(pod.resources, cpu_milli=k + 1) if distinct else pod.resources
        pods[i] = replace(pod, owner=owner, resources=resources)
        autoscalers.append(Autoscaler(f"{pod.namespace}/hpa{k}", target, 1, 11, 1))
    cluster = replace(cluster, pods=tuple(pods), autoscalers=tuple(autoscalers))
    timings = Timings()

    def judged() -> tuple[CardState, Diagnosis]:
        """As `core.autoscalers.judged`: the running pods' cards built once, for both."""
        cards = build_state(cluster)
        return cards, judge(cluster, state=cards.copy())

    for _ in range(repeats):
        cards, diagnosis = timings.time("judge", judged)
        reaches = timings.time("autoscalers", partial(reachable, cluster, diagnosis, cards))
    statuses = Counter(r.status for r in reaches)
    newest = templates(cluster)
    kinds = len({kind_of(newest[a.target]) for a in autoscalers if a.target in newest})
    counted = ", ".join(f"{n} {status}" for status, n in sorted(statuses.items()))
    facts = {
        "autoscalers": len(reaches),
        "placeable": sum(r.placeable or 0 for r in reaches),
        "one_cycle": one_pod_cycle(cluster),
        "kinds": kinds,
        "note": f"{counted}; templates of {kinds} kinds",
    }
    return Outcome(timings, facts)


def run_case(name: str, params: Params, repeats: int) -> Outcome:
    if name == "diagnose":
        return _run_diagnose(params, repeats)
    if name == "autoscalers":
        return _run_autoscalers(params, repeats)
    if name == "cli":
        return _run_cli(params, repeats)
    raise ValueError(f"unknown case {name!r}")
