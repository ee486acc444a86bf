"""The advisor's preemption verdicts beside kube-scheduler's DefaultPreemption
(docs/conformance.md): the `hami` profile, whose session is kube-scheduler's.

The advisor's diagnose runs its cycle, then judges each pod it left unplaced
(core.preemption.kube). The harness (conformance/kube, `-preempt`) is told where the cycle
placed the others (`placed`, a key of the harness's copy only) and replays the queue in
upstream's order: a placed pod is bound, an unplaced one runs the in-tree filters and then
DefaultPreemption's PostFilter; a nomination evicts its victims and counts the preemptor on
its node for the pods after it.

Per pod: the verdict (`not-eligible`, `no-victims`, `evicts`); for `evicts`, the node (the
advisor's must be one of the candidates that tie with the nominated one on every criterion of
pickOneNodeForPreemption, which takes the first key of a Go map among equals) and the
victims (as a set, those DryRunPreemption chose on the advisor's node). `helps` (whether the
pod then fits its cards) is the advisor's alone: HAMi's GPU filter is no part of
kube-scheduler. Not compared: a pod the advisor finds fitting once earlier victims are gone
(the GPU decides, which the harness cannot), and `off` (no PostFilter runs).
"""

from __future__ import annotations

import json
import random
from copy import deepcopy
from pathlib import Path
from typing import Any

from advisor.core.gang import judge
from advisor.core.quantity import quantity_milli
from advisor.scenario import ScenarioError, scenario_from_data
from conformance import harness
from conformance.compare import shrink
from conformance.generate import generate

FITS_AFTER = "it fits on "  # kube.preempt's "fits once earlier victims are gone"
Outcome = dict[str, Any]  # one pod's verdict, node, victims


def advisor_side(data: dict[str, Any]) -> tuple[dict[str, str], dict[str, Outcome]]:
    """(the Pending pods the cycle placed: node, each unplaced pod's preemption verdict)."""
    diagnosis = judge(scenario_from_data(data, "<generated>"), node_detail_limit=0)
    placed: dict[str, str] = {}
    verdicts: dict[str, Outcome] = {}
    for v in diagnosis.pods:
        if v.placement is not None:
            placed[v.pod.name] = v.placement.node
        elif v.preemption is not None:
            p = v.preemption
            verdicts[v.pod.name] = {
                "verdict": p.verdict,
                "node": p.node,
                "victims": sorted(p.victims),
                "message": p.message,
            }
    return placed, verdicts


def compare_pod(ours: Outcome | None, theirs: Outcome | None, mig: bool = False) -> str | None:
    """What differs for one pod, or None; "skip: ..." where the harness cannot say. `mig`:
    a MIG pod, whose instances the in-tree filters count: where the advisor finds it
    fitting once earlier victims are gone, upstream's filters must pass that node."""
    if ours is None or theirs is None:
        return f"advisor {ours and ours['verdict']}, upstream {theirs and theirs['verdict']}"
    fits_after = ours["verdict"] == "no-victims" and ours["message"].startswith(FITS_AFTER)
    if mig and (fits_after or theirs["verdict"] == "fits"):
        node = ours["message"].removeprefix(FITS_AFTER).split(" ", 1)[0] if fits_after else ""
        if node and node in theirs.get("in_tree", []):
            return None
        return (
            f"advisor {ours['verdict']}{f' (fits on {node})' if node else ''}, upstream "
            f"{theirs['verdict']} (in-tree filters pass {theirs.get('in_tree', [])})"
        )
    if fits_after:
        return "skip: fits once earlier victims are gone (the GPU decides)"
    if ours["verdict"] != theirs["verdict"]:
        return (
            f"advisor {ours['verdict']}, upstream {theirs['verdict']} "
            f"({theirs.get('node') or theirs.get('status', '')})"
        )
    if ours["verdict"] != "evicts":
        return None
    ties = theirs.get("ties") or [theirs["node"]]
    if ours["node"] not in ties:
        return f"advisor evicts on {ours['node']}, upstream on {theirs['node']} (ties {ties})"
    candidates = theirs.get("candidates") or {theirs["node"]: theirs["victims"]}
    upstream = sorted(candidates.get(ours["node"], []))
    if ours["victims"] != upstream:
        return f"on {ours['node']}: advisor evicts {ours['victims']}, upstream {upstream}"
    return None


# (pods compared, agreeing, skipped, what differs, (verdicts with upstream words, whose
# advisor message begins with them))
Row = tuple[int, int, int, list[str], tuple[int, int]]


def check(datas: list[dict[str, Any]]) -> list[Row]:
    """Both sides on each scenario, the harness once for all of them."""
    sides = [advisor_side(d) for d in datas]
    copies = [
        {**deepcopy(d), "placed": placed} for d, (placed, _) in zip(datas, sides, strict=True)
    ]
    results = harness.run_scenarios("kube-preempt", copies)
    rows: list[Row] = []
    for data, (_, ours), result in zip(datas, sides, results, strict=True):
        theirs = {p["pod"]: p for p in result["preemptions"]}
        migs = mig_pods(data)
        compared = agree = skipped = worded = same_words = 0
        diffs: list[str] = []
        after_skip = False
        for pod in queue(result, ours):
            what = compare_pod(ours.get(pod), theirs.get(pod), pod in migs)
            if after_skip or (what is not None and what.startswith("skip:")):
                skipped += 1
                # upstream nominated a pod the comparison cannot judge: its victims and
                # nomination shape every later pod's cycle there, so none is compared
                after_skip |= pod in theirs and theirs[pod]["verdict"] == "evicts"
                continue
            compared += 1
            agree += what is None
            if what is not None:
                diffs.append(f"{pod}: {what}")
            status = theirs[pod].get("status", "") if pod in theirs else ""
            if what is None and status:  # upstream words: no-victims and not-eligible
                worded += 1
                same_words += ours[pod]["message"].startswith(status)
        rows.append((compared, agree, skipped, diffs, (worded, same_words)))
    return rows


def queue(result: dict[str, Any], ours: dict[str, Outcome]) -> list[str]:
    """The unplaced pods in the order the harness met them (its queue: PrioritySort's),
    then any only the advisor judged."""
    met = [p["pod"] for p in result["preemptions"]]
    return met + sorted(set(ours) - set(met))


def mig_pods(data: dict[str, Any]) -> set[str]:
    """The names of the scenario's MIG pods (a `mig_profile` request)."""
    return {p["name"] for p in data["pods"] if "mig_profile" in (p.get("request") or {})}


def disagrees(data: dict[str, Any]) -> bool:
    """A witness: every running pod keeps its start time (kube-scheduler counts a pod
    without one as started now, at each comparison: their order is no one's to predict)."""
    if any("started" not in p for p in data["pods"] if "node" in p):
        return False
    try:
        return bool(check([data])[0][3])
    except ScenarioError:
        return False  # a smaller scenario the advisor refuses is no witness


def generate_preempt(seed: int, mig: bool = False) -> dict[str, Any]:
    """A `hami` cluster (generate.generate) with what preemption turns on: running pods of
    several priorities with start times, some under a disruption budget, Pending pods of
    higher priority asking what only evictions free, some with preemptionPolicy Never.
    `mig`: with MIG cards and pods (generate_mig.py)."""
    data = generate(seed, profile="hami", mig=mig)
    rng = random.Random(seed * 7919 + 1)
    nodes = {n["name"]: n for n in data["nodes"]}
    for node in data["nodes"]:  # fewer nodes that no eviction opens
        if rng.random() < 0.6:
            node.pop("taints", None)
            node.pop("unschedulable", None)
    running = [p for p in data["pods"] if "node" in p]
    for k, pod in enumerate(running):
        pod["priority"] = rng.choice((0, 0, 5, 10, 50))
        # Distinct times: kube-scheduler counts a pod without one as started now, at each
        # comparison, and orders pods by it (util.MoreImportantPod).
        pod["started"] = f"2025-01-01T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{k:02d}Z"
        if rng.random() < 0.3:
            pod["annotations"] = {"xgpu.io/disruption-budget": f"{rng.choice('ab')}:{seed % 2}"}
    for pod in data["pods"]:
        if "node" in pod:
            continue
        pod["priority"] = rng.choice((0, 10, 100, 100, 1000))
        if rng.random() < 0.6:
            pod.pop("node_selector", None)
            pod.pop("affinity", None)
        if rng.random() < 0.15:
            pod["preemption_policy"] = "Never"
        if rng.random() < 0.6:  # what only evicting the node's GPU pods frees
            node = nodes[rng.choice(sorted(nodes))]
            if "cpu" in node.get("allocatable", {}):
                pod["resources"] = {"cpu": f"{_cpu_beside_others(node)}m"}
    for pod in running:  # one budget per name: every pod under it tells the same count
        budget = pod.get("annotations", {}).get("xgpu.io/disruption-budget")
        if budget is not None:
            name = budget.split(":")[0]
            pod["annotations"]["xgpu.io/disruption-budget"] = f"{name}:{(seed + ord(name)) % 2}"
    return data


def _cpu_beside_others(node: dict[str, Any]) -> int:
    """The node's cpu less what its other and resident pods (never victims) take."""
    others = node.get("other_pods", []) + node.get("resident_pods", [])
    taken = sum(quantity_milli(o["resources"]["cpu"]) for o in others)
    return max(quantity_milli(node["allocatable"]["cpu"]) - taken, 0)


def run_generated(
    count: int, seed: int, out: Path | None, mig: bool = False
) -> tuple[int, int, int, int, tuple[int, int], list[Path]]:
    """(clusters, pods compared, agreeing, skipped, (verdicts in upstream words, whose
    advisor message begins with them), shrunk disagreements written); `mig`: with MIG."""
    datas = [generate_preempt(seed + i, mig=mig) for i in range(count)]
    rows = check(datas)
    written: list[Path] = []
    for i, (data, row) in enumerate(zip(datas, rows, strict=True)):
        if row[3] and out is not None:
            out.mkdir(parents=True, exist_ok=True)
            small = shrink(data, disagrees)
            path = out / f"kube-preemption{'-mig' if mig else ''}-seed-{seed + i}.json"
            again = check([small])[0][3]
            path.write_text(json.dumps({"differs": again, "scenario": small}, indent=2) + "\n")
            written.append(path)
    return (
        count,
        sum(r[0] for r in rows),
        sum(r[1] for r in rows),
        sum(r[2] for r in rows),
        (sum(r[4][0] for r in rows), sum(r[4][1] for r in rows)),
        written,
    )
