"""An independent restatement of kube-scheduler's node filters, for checking placements.

It shares no code with the core (neither `CardState` nor `nodefilters`): it reads the
model's plain values and says whether a node admits a pod as the upstream plugins decide,
written from their sources (kubernetes/kubernetes pkg/scheduler/framework/plugins:
nodeunschedulable, nodeaffinity, tainttoleration, noderesources; core/v1 helper
`ToleratesTaint`; component-helpers `nodeaffinity`).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Mapping

from advisor.core.model import Node, Pod
from advisor.core.nodefilters import NodeConstraints, Requirement, Taint, Term

CORDON = Taint("node.kubernetes.io/unschedulable", "NoSchedule")
_INTEGER = re.compile(r"[+-]?[0-9]+")


def _tolerated(taint: Taint, pod: NodeConstraints) -> bool:
    for t in pod.tolerations:
        if t.effect and t.effect != taint.effect:
            continue
        if t.key and t.key != taint.key:
            continue
        if t.operator == "Exists" or t.value == taint.value:
            return True
    return False


def _matches(r: Requirement, labels: Mapping[str, str]) -> bool:
    value = labels.get(r.key)
    if r.operator == "Exists":
        return value is not None
    if r.operator == "DoesNotExist":
        return value is None
    if r.operator == "In":
        return value is not None and value in r.values
    if r.operator == "NotIn":
        return value is None or value not in r.values
    # Gt / Lt: both sides parse as integers (strconv.ParseInt), else no match
    if value is None or not _INTEGER.fullmatch(value) or not _INTEGER.fullmatch(r.values[0]):
        return False
    return int(value) > int(r.values[0]) if r.operator == "Gt" else int(value) < int(r.values[0])


def _term(term: Term, node: Node) -> bool:
    if not term.expressions and not term.fields:
        return False  # an empty term selects no node
    labels = dict(node.labels)
    return all(_matches(r, labels) for r in term.expressions) and all(
        _matches(r, {"metadata.name": node.name}) for r in term.fields
    )


def static_refusal(node: Node, pod: NodeConstraints) -> str | None:
    """Which static filter refuses `pod` on `node`, or None: cordon, selector and required
    affinity, then the NoSchedule / NoExecute taints."""
    if node.unschedulable and not _tolerated(CORDON, pod):
        return "unschedulable"
    labels = dict(node.labels)
    if any(labels.get(k) != v for k, v in pod.node_selector):
        return "node selector"
    if pod.required is not None and not any(_term(t, node) for t in pod.required):
        return "required node affinity"
    for taint in node.taints:
        if taint.effect in ("NoSchedule", "NoExecute") and not _tolerated(taint, pod):
            return f"taint {taint.key}"
    return None


def node_totals(node: Node, pods_there: Iterable[Pod]) -> tuple[int, int, int]:
    """(pods, cpu milli, memory bytes) requested on `node` by every pod on it: the GPU pods
    given, its other pods and the pods that stay with it."""
    others = [*(node.other_pods or ()), *node.resident_pods]
    gpu_pods = list(pods_there)
    return (
        len(others) + len(gpu_pods),
        sum(o.resources.cpu_milli for o in others) + sum(p.resources.cpu_milli for p in gpu_pods),
        sum(o.resources.memory_bytes for o in others)
        + sum(p.resources.memory_bytes for p in gpu_pods),
    )


def resource_refusal(node: Node, landed: Iterable[Pod], pods_there: Iterable[Pod]) -> str | None:
    """Whether the pods that `landed` on `node` (among `pods_there`, every GPU pod on it
    afterwards) could each have passed NodeResourcesFit when they came. Evictions come first
    and placements only add, so the last pod asking for a resource saw the final total of
    it: it fits when that total is within allocatable. Pod slots: every pod asks one."""
    arrivals = list(landed)
    if not arrivals:
        return None
    slots, cpu, memory = node_totals(node, pods_there)
    a = node.allocatable
    if a.pods is not None and slots > a.pods:
        return f"{slots} pods over {a.pods} slots"
    if (
        a.cpu_milli is not None
        and cpu > a.cpu_milli
        and any(p.resources.cpu_milli for p in arrivals)
    ):
        return f"{cpu}m cpu over {a.cpu_milli}m"
    if (
        a.memory_bytes is not None
        and memory > a.memory_bytes
        and any(p.resources.memory_bytes for p in arrivals)
    ):
        return f"{memory} bytes over {a.memory_bytes}"
    return None


def placement_refusals(
    nodes: Iterable[Node], pods: Iterable[Pod], arrived: Collection[str]
) -> list[str]:
    """Every pod named in `arrived` (placed by one scheduling pass: it came or came back)
    that sits on a node a filter refuses it, and every node its arrivals overrun, in
    words; empty when none. `pods`: every pod, with its placement after the pass."""
    by_node: dict[str, list[Pod]] = {}
    came: dict[str, list[Pod]] = {}
    for pod in pods:
        if pod.placement is None:
            continue
        by_node.setdefault(pod.placement.node, []).append(pod)
        if pod.name in arrived:
            came.setdefault(pod.placement.node, []).append(pod)
    problems = []
    for node in nodes:
        for pod in came.get(node.name, []):
            why = static_refusal(node, pod.constraints)
            if why is not None:
                problems.append(f"{pod.name} on {node.name}: {why}")
        short = resource_refusal(node, came.get(node.name, []), by_node.get(node.name, []))
        if short is not None:
            problems.append(f"{node.name}: {short}")
    return problems
