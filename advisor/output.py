"""JSON-ready forms of the core's results (DESIGN.md §5) and the card view the reports draw."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from advisor.core.diagnose import Diagnosis, PodDiagnosis
from advisor.core.model import Cluster, Mode, Placement, Pod

DIAGNOSIS_SCHEMA = "xgpu-advisor/diagnosis/v1"


def placement_json(placement: Placement | None) -> dict[str, Any] | None:
    if placement is None:
        return None
    return {"node": placement.node, "cards": list(placement.cards)}


def request_json(pod: Pod) -> dict[str, int]:
    r = pod.request
    return {"gpus": r.gpus, "memory_mib": r.memory_mib, "core_percent": r.core_percent}


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


def cluster_view(cluster: Cluster, diagnosis: Diagnosis | None = None) -> dict[str, Any]:
    """Every card with its allotments after the cycle; pods the cycle placed are `pending`."""
    placed: list[tuple[Pod, Placement, bool]] = [
        (p, p.placement, False) for p in cluster.running if p.placement is not None
    ]
    if diagnosis is not None:
        placed += [(d.pod, d.placement, True) for d in diagnosis.pods if d.placement is not None]
    on_card: dict[tuple[str, int], list[dict[str, Any]]] = defaultdict(list)
    for pod, placement, pending in placed:
        for index in placement.cards:
            on_card[(placement.node, index)].append(
                {
                    "pod": pod.name,
                    "memory_mib": pod.request.card_memory_mib,
                    "core_percent": pod.request.card_core_percent,
                    "pending": pending,
                }
            )
    nodes = []
    for node in cluster.nodes:
        cards = []
        for card in node.cards:
            allotments = on_card.get((node.name, card.index), [])
            mode = Mode.UNUSED
            if allotments:
                core = any(a["core_percent"] > 0 for a in allotments)
                mode = Mode.MEMORY_CORE if core else Mode.MEMORY
            cards.append(
                {
                    "index": card.index,
                    "memory_mib": card.memory_mib,
                    "model": card.model,
                    "healthy": card.healthy,
                    "mode": int(mode),
                    "vgpus": len(allotments),
                    "core_allotted_percent": sum(a["core_percent"] for a in allotments),
                    "allotments": allotments,
                }
            )
        nodes.append({"name": node.name, "cards": cards})
    return {"nodes": nodes}
