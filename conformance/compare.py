"""The differential comparison (docs/conformance.md): the advisor beside the upstream
schedulers' own code on the same clusters, disagreements shrunk to minimal scenarios.

The command that runs it is `python -m conformance.cli` (conformance/cli.py).

kube-scheduler's filters: for every Pending pod and every node, which filter rejects the node
first (NodeUnschedulable, NodeAffinity, TaintToleration, NodeResourcesFit, and for the last
which resources), judged on the cluster as it stands (running and resident pods bound). The
advisor's side is its own filter code: `nodefilters.static_reasons` and
`CardState.resource_shortfalls` with NodeResourcesFit's rule (`KUBE_FIT`), the functions its
diagnose, plans and what-if call. Under every profile: the static filters are the same in
Volcano's session; its resource check (`VOLCANO_FIT`, which cce and volcano-vgpu use) is
Volcano's own, compared by the Volcano harnesses. A pod agrees when every node's verdict
agrees. Messages are compared too, and counted apart.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from copy import deepcopy
from pathlib import Path
from typing import Any

from advisor.core.mig_cycle import MigBook
from advisor.core.nodefilters import KUBE_FIT, RESOURCE_REASONS, static_reasons
from advisor.core.occupancy import build_state
from advisor.core.state import Shape
from advisor.scenario import ScenarioError, scenario_from_data
from conformance import harness
from conformance.files import read_scenario
from conformance.generate import generate

Verdicts = dict[str, dict[str, tuple[str, ...]]]  # pod → node → reasons (absent: passes)

FILTERS = {
    "node(s) were unschedulable": "NodeUnschedulable",
    "node(s) didn't match Pod's node affinity/selector": "NodeAffinity",
    # NodeAffinity's PreFilter (node_affinity.go errReasonConflict): matchFields terms that
    # name no node in common reject every node before Filter runs.
    "pod affinity terms conflict": "NodeAffinity",
}
RESOURCES = ("Insufficient cpu", "Insufficient memory", "Too many pods")
MIG_SHORT = "Insufficient nvidia.com/mig-"  # a MIG pod's instances (fitsRequest's scalars)


def filter_of(reasons: tuple[str, ...]) -> tuple[str, ...]:
    """What a verdict decides, without its wording: the filter, and for NodeResourcesFit the
    resources it lacks. None of the node's reasons: it passes."""
    if not reasons:
        return ()
    first = reasons[0]
    if first in FILTERS:
        return (FILTERS[first],)
    if first.startswith("node(s) had untolerated taint"):
        return ("TaintToleration",)
    if first in RESOURCES or first.startswith(MIG_SHORT):
        return ("NodeResourcesFit", *sorted(reasons))
    return ("unknown", *reasons)  # a message this comparison does not know: never agrees


def advisor_verdicts(data: dict[str, Any]) -> Verdicts:
    """The advisor's filter verdicts for each Pending pod on each node."""
    cluster = scenario_from_data(data, "<generated>")
    state = build_state(cluster)
    book = MigBook(cluster, state)
    nodes = {n.name: n for n in cluster.nodes}
    out: Verdicts = {}
    for pod in cluster.pending:
        shape = Shape.of_pod(pod)
        short = state.resource_shortfalls(shape, KUBE_FIT)
        profile = pod.request.mig_profile
        # A MIG pod: the cycle's free instances of its profile, named after cpu, memory and
        # the pod slot as fitsRequest names its scalar resources.
        free = book.free(profile) if profile else []
        verdict: dict[str, tuple[str, ...]] = {}
        for i, name in enumerate(state.node_names):
            reasons = static_reasons(nodes[name], shape.constraints)
            if not reasons:
                reasons = tuple(r for r, bad in zip(RESOURCE_REASONS, short[i], strict=True) if bad)
                if profile and len(free[i]) < pod.request.gpus:
                    reasons += (f"Insufficient {book.resource(i, profile)}",)
            if reasons:
                verdict[name] = reasons
        out[pod.name] = verdict
    return out


def upstream_verdicts(result: dict[str, Any]) -> Verdicts:
    return {p["pod"]: {n: tuple(r) for n, r in p["nodes"].items()} for p in result["pods"]}


def node_names(data: dict[str, Any]) -> list[str]:
    return [str(n["name"]) for n in data["nodes"]]


def compare(
    data: dict[str, Any], ours: Verdicts, theirs: Verdicts
) -> tuple[int, int, int, list[str]]:
    """(pods, pods agreeing on every node's filter, pods agreeing word for word, what differs)."""
    agree = words = 0
    diffs: list[str] = []
    for pod in sorted(set(ours) | set(theirs)):
        mine, upstream = ours.get(pod, {}), theirs.get(pod, {})
        same = same_words = True
        for node in node_names(data):
            a, b = mine.get(node, ()), upstream.get(node, ())
            if filter_of(a) != filter_of(b):
                same = False
                mine_text, their_text = list(a) or "passes", list(b) or "passes"
                diffs.append(f"{pod} on {node}: advisor {mine_text}, upstream {their_text}")
            elif sorted(a) != sorted(b):
                same_words = False
        agree += same
        words += same and same_words
    return len(set(ours) | set(theirs)), agree, words, diffs


def check(datas: list[dict[str, Any]]) -> list[tuple[int, int, int, list[str]]]:
    """Both sides on each scenario, the upstream harness once for all of them."""
    results = harness.run_scenarios("kube", datas)
    return [
        compare(data, advisor_verdicts(data), upstream_verdicts(result))
        for data, result in zip(datas, results, strict=True)
    ]


def disagrees(data: dict[str, Any]) -> bool:
    try:
        return bool(check([data])[0][3])
    except ScenarioError:
        return False  # a smaller scenario the advisor refuses is no witness


def smaller(data: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Each scenario one step smaller: a node (with its pods), a pod, or one optional key."""
    for i, node in enumerate(data["nodes"]):
        if len(data["nodes"]) > 1:
            d = deepcopy(data)
            del d["nodes"][i]
            d["pods"] = [p for p in d["pods"] if p.get("node") != node["name"]]
            yield d
    for i in range(len(data["pods"])):
        d = deepcopy(data)
        del d["pods"][i]
        if any("node" not in p for p in d["pods"]):
            yield d
    for kind in ("nodes", "pods"):
        for i, item in enumerate(data[kind]):
            for key, value in item.items():
                if key in ("name", "cards", "request", "node"):
                    continue
                d = deepcopy(data)
                del d[kind][i][key]
                yield d
                if isinstance(value, dict) and len(value) > 1:
                    for sub in value:
                        d = deepcopy(data)
                        del d[kind][i][key][sub]
                        yield d
                if isinstance(value, list) and len(value) > 1:
                    for j in range(len(value)):
                        d = deepcopy(data)
                        del d[kind][i][key][j]
                        yield d


def shrink(
    data: dict[str, Any], still: Callable[[dict[str, Any]], bool] = disagrees
) -> dict[str, Any]:
    """Delta debugging, one step at a time: the smallest scenario reached from `data` by
    removals that all keep the disagreement."""
    current = data
    progress = True
    while progress:
        progress = False
        for candidate in smaller(current):
            if still(candidate):
                current, progress = candidate, True
                break
    return current


def run_generated(
    count: int, seed: int, out: Path | None, profile: str | None = None, mig: bool = False
) -> tuple[int, int, int, int, list[Path]]:
    """(clusters, pods, agreeing, agreeing word for word, shrunk disagreements written);
    `profile` None: the generator's round of profiles; `mig`: with MIG (generate_mig.py)."""
    datas = [generate(seed + i, profile=profile, mig=mig) for i in range(count)]
    rows = check(datas)
    written: list[Path] = []
    for i, (data, row) in enumerate(zip(datas, rows, strict=True)):
        if row[3] and out is not None:
            out.mkdir(parents=True, exist_ok=True)
            small = shrink(data)
            kind = f"{data['scheduler']['profile']}{'-mig' if mig else ''}"
            path = out / f"kube-filters-{kind}-seed-{seed + i}.json"
            again = check([small])[0][3]
            path.write_text(json.dumps({"differs": again, "scenario": small}, indent=2) + "\n")
            written.append(path)
    pods = sum(r[0] for r in rows)
    return count, pods, sum(r[1] for r in rows), sum(r[2] for r in rows), written


def run_files(paths: list[Path]) -> tuple[int, int, int, list[str]]:
    """Scenario files (advisor/examples, fixtures) through both sides."""
    datas = [read_scenario(p, mig=True) for p in paths]
    rows = check([d for d in datas if isinstance(d, dict)])
    diffs = [d for r in rows for d in r[3]]
    return sum(r[0] for r in rows), sum(r[1] for r in rows), sum(r[2] for r in rows), diffs
