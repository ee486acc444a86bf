"""JSON-ready forms of the core's results (DESIGN.md §5) and the card view the reports draw."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping
from typing import Any

from advisor.core.diagnose import Diagnosis, PodDiagnosis
from advisor.core.model import Cluster, Mode, Node, Placement, Pod
from advisor.core.nodefilters import Resources, Taint, bytes_text, cpu_text

DIAGNOSIS_SCHEMA = "xgpu-advisor/diagnosis/v1"


def placement_json(placement: Placement | None) -> dict[str, Any] | None:
    if placement is None:
        return None
    return {"node": placement.node, "cards": list(placement.cards)}


def request_json(pod: Pod) -> dict[str, int]:
    r = pod.request
    return {"gpus": r.gpus, "memory_mib": r.memory_mib, "core_percent": r.core_percent}


def resources_json(resources: Resources) -> dict[str, str]:
    """A cpu/memory request as Kubernetes quantities, the parts asked for only."""
    parts = {}
    if resources.cpu_milli:
        parts["cpu"] = cpu_text(resources.cpu_milli)
    if resources.memory_bytes:
        parts["memory"] = bytes_text(resources.memory_bytes)
    return parts


def taint_text(taint: Taint) -> str:
    """kubectl's form: key=value:Effect (key:Effect without a value)."""
    value = f"={taint.value}" if taint.value else ""
    return f"{taint.key}{value}:{taint.effect}"


def pod_diagnosis_json(d: PodDiagnosis) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "pod": d.pod.name,
        "cause": d.cause,
        "message": d.message,
        "placement": placement_json(d.placement),
        "request": request_json(d.pod),
        "priority": d.pod.priority,
        "nodes": {node: list(reasons) for node, reasons in d.node_reasons},
        "nodes_omitted": d.nodes_omitted,
    }
    # What else binds the pod to a node, when anything does (§9.1): shown beside its request.
    resources = resources_json(d.pod.resources)
    if resources:
        entry["resources"] = resources
    if d.pod.constraints.node_selector:
        entry["node_selector"] = dict(d.pod.constraints.node_selector)
    if d.node_summary is not None:
        entry["node_summary"] = d.node_summary
        entry["reason_counts"] = dict(d.reason_counts)
    if d.cluster_free_sufficient is not None:
        entry["cluster_free_sufficient"] = d.cluster_free_sufficient
    return entry


def diagnosis_json(diagnosis: Diagnosis) -> dict[str, Any]:
    policy = diagnosis.policy
    return {
        "schema": DIAGNOSIS_SCHEMA,
        "policy": {"node": policy.node, "card": policy.card},
        "pods": [pod_diagnosis_json(d) for d in diagnosis.pods],
        "summary": diagnosis.summary,
    }


def card_view(
    cluster: Cluster,
    where: Mapping[str, Placement],
    fresh: Collection[str] = (),
    nodes: Collection[str] | None = None,
) -> dict[str, Any]:
    """Cards (of `nodes`, or all) with the pods `where` puts on them; pods in `fresh` are
    marked `pending` (placed by this cycle or plan, not running yet)."""
    wanted = None if nodes is None else set(nodes)
    on_card: dict[tuple[str, int], list[Pod]] = defaultdict(list)
    for pod in cluster.pods:
        placement = where.get(pod.name)
        if placement is None or (wanted is not None and placement.node not in wanted):
            continue
        for index in placement.cards:
            on_card[(placement.node, index)].append(pod)
    views = []
    for node in cluster.nodes:
        if wanted is not None and node.name not in wanted:
            continue
        cards = []
        for card in node.cards:
            pods = on_card.get((node.name, card.index), [])
            mode = Mode.UNUSED
            if pods:
                core = any(p.request.core_percent for p in pods)
                mode = Mode.MEMORY_CORE if core else Mode.MEMORY
            cards.append(
                {
                    "index": card.index,
                    "memory_mib": card.memory_mib,
                    "model": card.model,
                    "healthy": card.healthy,
                    "mode": int(mode),
                    "vgpus": len(pods),
                    "core_allotted_percent": sum(p.request.card_core_percent for p in pods),
                    "allotments": [
                        {
                            "pod": p.name,
                            "memory_mib": p.request.card_memory_mib,
                            "core_percent": p.request.card_core_percent,
                            "pending": p.name in fresh,
                        }
                        for p in pods
                    ],
                }
            )
        views.append({"name": node.name, "cards": cards, **_node_fit(node, cluster, where)})
    return {"nodes": views}


def _node_fit(node: Node, cluster: Cluster, where: Mapping[str, Placement]) -> dict[str, Any]:
    """The node's cpu and memory (allocatable, and requested by its pods where `where` puts
    them and by its other pods) and its taints; nothing for a node that sets none of them."""
    fit: dict[str, Any] = {}
    allocatable = node.allocatable
    if allocatable.cpu_milli is not None or allocatable.memory_bytes is not None:
        placed = [p for p in cluster.pods if (w := where.get(p.name)) and w.node == node.name]
        others = node.other_pods or ()
        fit["resources"] = {
            "cpu_allocatable_milli": allocatable.cpu_milli,
            "memory_allocatable_bytes": allocatable.memory_bytes,
            "cpu_requested_milli": sum(p.resources.cpu_milli for p in placed)
            + sum(o.resources.cpu_milli for o in others),
            "memory_requested_bytes": sum(p.resources.memory_bytes for p in placed)
            + sum(o.resources.memory_bytes for o in others),
        }
    if node.taints:
        fit["taints"] = [taint_text(t) for t in node.taints]
    if node.unschedulable:
        fit["unschedulable"] = True
    return fit


def cluster_view(cluster: Cluster, diagnosis: Diagnosis | None = None) -> dict[str, Any]:
    """Every card with its allotments after the cycle; pods the cycle placed are `pending`."""
    where = {p.name: p.placement for p in cluster.pods if p.placement is not None}
    fresh = set()
    if diagnosis is not None:
        for d in diagnosis.pods:
            if d.placement is not None:
                where[d.pod.name] = d.placement
                fresh.add(d.pod.name)
    return card_view(cluster, where, fresh)
