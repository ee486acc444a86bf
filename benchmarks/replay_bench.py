"""The openb trace replay (docs/design.md §7): the core against the plain-Python reference.

Cases:
- `openb`: load the node and pod lists, then replay them (diagnose, figures) — timed apart;
  GPUs only (`--resources gpu`) or with the trace's cpu and memory (`--resources all`).
- `reference`: the same replay by `benchmarks.reference`, once, against the core's, with
  every placement and cause compared; the core's figures must come out the same.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any, cast

from advisor.core.model import Cluster, Policy, PolicyName, Scheduler
from advisor.defaults import ResourceMode
from advisor.replay import Trace, read_trace, replay
from benchmarks.measure import Case, Outcome, Params, Timings
from benchmarks.reference import reference_diagnose, reference_figures
from benchmarks.trace_dir import candidates, find_openb

MODULE = "benchmarks.replay_bench"
NODES_CSV = "openb_node_list_gpu_node.csv"
PODS_CSV = "openb_pod_list_default.csv"
QUICK_REFERENCE_PODS = 1_000  # --quick replays only this many pods in the reference


def openb_dir() -> Path:
    """Where the trace lives (`benchmarks.trace_dir`); the first candidate when absent."""
    return find_openb() or candidates()[0]


def cases(quick: bool) -> list[Case]:
    if not (openb_dir() / NODES_CSV).is_file():
        print(f"benchmarks: no openb trace in {openb_dir()}; replay skipped", file=sys.stderr)
        return []
    repeats = 1 if quick else 5
    found: list[Case] = []
    for resources, goal, scope in (("gpu", 2.0, ""), ("all", 1.5, ", --resources all")):
        for node in ("binpack", "spread"):
            found.append(
                Case(
                    MODULE,
                    "openb",
                    f"openb default replay{scope}, node {node}, card binpack",
                    params={"node": node, "card": "binpack", "resources": resources},
                    repeats=repeats,
                    goal_phase="total",
                    goal_seconds=goal,
                    goal_rss_mib=1024.0,
                )
            )
    # the other profiles' default card policies (hami spread, volcano-vgpu legacy)
    for profile, card in (("hami", "spread"), ("volcano-vgpu", "legacy")):
        found.append(
            Case(
                MODULE,
                "openb",
                f"openb default replay --scheduler {profile}, node binpack, card {card}",
                params={"node": "binpack", "card": card, "resources": "gpu", "scheduler": profile},
                repeats=repeats,
                goal_phase="total",
                goal_seconds=2.0,
                goal_rss_mib=1024.0,
            )
        )
    for node in ("binpack",) if quick else ("binpack", "spread"):
        pods = QUICK_REFERENCE_PODS if quick else 0
        size = f"first {pods:,} pods" if pods else "all pods"
        found.append(
            Case(
                MODULE,
                "reference",
                f"plain-Python reference vs core, openb default ({size}), node {node}",
                params={"node": node, "card": "binpack", "pods": pods},
                repeats=1 if quick else 3,
            )
        )
    return found


def _load(params: Params) -> Trace:
    policy = Policy(
        node=cast(PolicyName, str(params["node"])), card=cast(PolicyName, str(params["card"]))
    )
    resources = cast(ResourceMode, str(params.get("resources", "gpu")))
    scheduler = Scheduler(str(params.get("scheduler", "cce")))
    return read_trace(openb_dir() / NODES_CSV, openb_dir() / PODS_CSV, policy, resources, scheduler)


def _failed_text(failed: dict[str, int]) -> str:
    return ", ".join(f"{n} {cause}" for cause, n in sorted(failed.items())) or "none"


def _run_openb(params: Params, repeats: int) -> Outcome:
    timings = Timings()
    figures: dict[str, Any] = {}
    for _ in range(repeats):
        trace = timings.time("load", lambda: _load(params))
        figures = dict(timings.time("replay", lambda: replay(trace).figures()))  # noqa: B023
        timings.add(
            "total",
            timings.wall["load"][-1] + timings.wall["replay"][-1],
            timings.cpu["load"][-1] + timings.cpu["replay"][-1],
        )
    note = (
        f"{figures['pods']:,} GPU pods; placed {figures['placed_gpus']:,.2f} of "
        f"{figures['capacity_gpus']:,} GPUs; Pending: {_failed_text(figures['failed'])}"
    )
    if "cpu_only_pods" in figures:
        cpu_pods = figures["cpu_only_pods"]
        note += f"; CPU-only pods placed {cpu_pods['placed']:,} of {cpu_pods['replayed']:,}"
    return Outcome(timings, {"figures": figures, "note": note})


def _run_reference(params: Params, repeats: int) -> Outcome:
    cluster = _load(params).cluster
    if int(params["pods"]):
        cluster = Cluster(cluster.nodes, cluster.pods[: int(params["pods"])], cluster.policy)
    timings = Timings()
    verdicts = timings.time("reference", lambda: reference_diagnose(cluster))
    result = timings.time("core", lambda: replay(cluster))
    for _ in range(repeats - 1):
        timings.time("core", lambda: replay(cluster))
    core = result.figures()
    expected = reference_figures(cluster, verdicts)
    same_figures = (
        core["placed_gpus"] == expected["placed_gpus"] and core["failed"] == expected["failed"]
    )
    same_pods = [(d.pod.name, d.cause, d.placement) for d in result.diagnosis.pods] == [
        (v.pod.name, v.cause, v.placement) for v in verdicts
    ]
    speedup = timings.wall["reference"][0] / statistics.median(timings.wall["core"])
    verdict = "figures and every placement match" if same_figures and same_pods else "MISMATCH"
    note = f"{verdict}; core {speedup:.0f}× faster (placed {expected['placed_gpus']:,.2f} GPUs)"
    facts = {
        "reference_figures": expected,
        "core_figures": {"placed_gpus": core["placed_gpus"], "failed": core["failed"]},
        "figures_match": same_figures,
        "placements_match": same_pods,
        "speedup": round(speedup, 1),
        "crosscheck_ok": same_figures and same_pods,
        "note": note,
    }
    return Outcome(timings, facts)


def run_case(name: str, params: Params, repeats: int) -> Outcome:
    if name == "openb":
        return _run_openb(params, repeats)
    if name == "reference":
        return _run_reference(params, repeats)
    raise ValueError(f"unknown case {name!r}")
