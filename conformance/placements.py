"""The advisor's simulated cycle against kube-scheduler's filters (docs/conformance.md).

`compare` judges each Pending pod on the cluster as it stands. The advisor's diagnose then
places the pods one by one, each seeing the cpu, memory and pod slots the ones before it
took. Here each Pending pod is judged again on the cluster the advisor says it meets: every
pod placed before it in queue order (priority, then creation) turned into a running pod on
the advisor's node and cards (a MIG pod: the instances its bind takes). Two checks per
pod, both against kube-scheduler's own filters:

- every node's verdict agrees (the advisor's filters on that cluster, as in `compare`);
- where the advisor places the pod, kube-scheduler's filters pass that node: the cycle's
  own accounting never puts a pod where the real scheduler would refuse it.
"""

from __future__ import annotations

from copy import deepcopy
from typing import Any

from advisor.core.diagnose import diagnose
from advisor.core.mig_cycle import MigBook
from advisor.core.model import queue_order
from advisor.core.occupancy import build_state
from advisor.scenario import scenario_from_data
from conformance import harness
from conformance.compare import advisor_verdicts, compare, upstream_verdicts

Step = tuple[dict[str, Any], str, str | None]  # (cluster before the pod, pod, advisor's node)


def steps(data: dict[str, Any]) -> list[Step]:
    """Each Pending pod of `data`, on the cluster the advisor's cycle has built before it."""
    cluster = scenario_from_data(data, "<generated>")
    verdicts = {d.pod.name: d for d in diagnose(cluster).pods}
    by_name = {p["name"]: p for p in data["pods"]}
    running = [p for p in data["pods"] if "node" in p]
    book = MigBook(cluster, build_state(cluster))
    out: list[Step] = []
    for pod in queue_order(cluster.pending):
        verdict = verdicts[pod.name]
        placement = verdict.placement if verdict.cause == "schedulable" else None
        before = {**deepcopy(data), "pods": [*deepcopy(running), deepcopy(by_name[pod.name])]}
        out.append((before, pod.name, placement.node if placement else None))
        if placement is None:
            continue
        bound = {**by_name[pod.name], "node": placement.node}
        if pod.request.mig_profile:
            _, taken = book.bind_on(pod, book.state.node_index[placement.node])  # as the cycle
            bound["mig_instances"] = [{"card": i.card, "start": i.start} for i in taken]
        else:
            bound["cards"] = list(placement.cards)
        running.append(bound)
    return out


def check(datas: list[dict[str, Any]]) -> tuple[int, int, int, int, list[str]]:
    """(pods, pods whose every node agrees, pods the advisor places, of those placed where
    kube-scheduler refuses, what differs) over every step of every cluster, the harness run
    once for all of them."""
    all_steps = [s for data in datas for s in steps(data)]
    results = harness.run_scenarios("kube", [before for before, _, _ in all_steps])
    agree = placed = refused = 0
    diffs: list[str] = []
    for (before, pod, node), result in zip(all_steps, results, strict=True):
        theirs = upstream_verdicts(result)
        _, same, _, what = compare(before, advisor_verdicts(before), theirs)
        agree += same
        diffs += what
        placed += node is not None
        if node is not None and theirs[pod].get(node):
            refused += 1
            diffs.append(f"{pod}: advisor places it on {node}, kube-scheduler: {theirs[pod][node]}")
    return len(all_steps), agree, placed, refused, diffs
