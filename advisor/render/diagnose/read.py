"""The diagnosis JSON read into its typed form (`advisor.schemas.DiagnosisJson`, what
`advisor.output.diagnosis_json` writes), tolerantly: the pages may be rendered from a saved or
hand-edited file, so a missing or odd value becomes the neutral default the pages show ("?",
0, nothing) rather than an exception. Everything after this reads typed values."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.core.diagnosis import OPTIONAL_CAUSES, shown_causes
from advisor.render.common.advice import read_remedy
from advisor.render.common.mig import read_mig_profiles
from advisor.render.common.parts import read_placement, read_scheduler
from advisor.render.common.values import as_float, as_int, as_list, as_map, as_str
from advisor.render.plan.read import read_room
from advisor.schemas import (
    DIAGNOSIS_SCHEMA,
    AutoscalerJson,
    BlockedReplicaJson,
    DiagnosisJson,
    PodDiagnosisJson,
    PreemptionJson,
    RequestJson,
)


def read_diagnosis(raw: Mapping[str, Any]) -> DiagnosisJson:
    """The diagnosis as the advisor writes it; its summary complete (every cause and
    "pending"), counted from the pods where the file has no count."""
    policy = as_map(raw.get("policy"))
    pods = [read_pod(as_map(pod)) for pod in as_list(raw.get("pods"))]
    data: DiagnosisJson = {
        "schema": as_str(raw.get("schema"), DIAGNOSIS_SCHEMA),
        "policy": {
            "node": as_str(policy.get("node"), "binpack"),
            "card": as_str(policy.get("card"), "binpack"),
        },
        "pods": pods,
        "summary": _summary(as_map(raw.get("summary")), pods),
    }
    scheduler = read_scheduler(raw.get("scheduler"))
    if scheduler is not None:
        data["scheduler"] = scheduler
    autoscalers = [read_autoscaler(as_map(a)) for a in as_list(raw.get("autoscalers"))]
    if autoscalers:
        data["autoscalers"] = autoscalers
    if profiles := read_mig_profiles(raw.get("mig_profiles")):
        data["mig_profiles"] = profiles
    return data


def read_autoscaler(raw: Mapping[str, Any]) -> AutoscalerJson:
    """An autoscaler's reachable replicas (docs/design.md §12.2); an odd count reads as
    not known (null)."""
    placeable = raw.get("placeable")
    blocked_raw = raw.get("blocked")
    blocked: BlockedReplicaJson | None = None
    if isinstance(blocked_raw, Mapping):
        summary = blocked_raw.get("node_summary")
        blocked = {
            "cause": as_str(blocked_raw.get("cause"), "?"),
            "node_summary": summary if isinstance(summary, str) else None,
        }
    template = raw.get("template")
    return {
        "name": as_str(raw.get("name"), "?"),
        "target": as_str(raw.get("target"), "?"),
        "replicas": as_int(raw.get("replicas")),
        "max_replicas": as_int(raw.get("max_replicas")),
        "template": template if isinstance(template, str) else None,
        "placeable": as_int(placeable) if isinstance(placeable, int) else None,
        "blocked": blocked,
        "status": as_str(raw.get("status"), "?"),
        "remedy": read_room(raw.get("remedy")),
    }


def _summary(summary: Mapping[str, Any], pods: list[PodDiagnosisJson]) -> dict[str, int]:
    counts: dict[str, int] = {}
    found: dict[str, int] = {
        cause: 1 for cause in OPTIONAL_CAUSES if any(pod["cause"] == cause for pod in pods)
    }
    for cause in shown_causes({**found, **summary}):
        if cause in summary:
            counts[cause] = as_int(summary.get(cause))
        else:
            counts[cause] = sum(1 for pod in pods if pod["cause"] == cause)
    counts["pending"] = as_int(summary.get("pending"), len(pods))
    return counts


def read_pod(raw: Mapping[str, Any]) -> PodDiagnosisJson:
    nodes = as_map(raw.get("nodes"))
    pod: PodDiagnosisJson = {
        "pod": as_str(raw.get("pod"), "?"),
        "cause": as_str(raw.get("cause"), "unknown"),
        "message": as_str(raw.get("message")),
        "placement": read_placement(raw.get("placement")),
        "request": read_request(raw.get("request")),
        "priority": as_int(raw.get("priority")),
        "nodes": {str(name): [as_str(r) for r in as_list(nodes[name])] for name in nodes},
        "nodes_omitted": as_int(raw.get("nodes_omitted")),
    }
    resources = as_map(raw.get("resources"))
    asked = {key: as_str(resources.get(key)) for key in ("cpu", "memory") if key in resources}
    if asked:
        pod["resources"] = asked
    selector = {str(key): as_str(value) for key, value in as_map(raw.get("node_selector")).items()}
    if selector:
        pod["node_selector"] = selector
    summary = raw.get("node_summary")
    if isinstance(summary, str):
        pod["node_summary"] = summary
    if "reason_counts" in raw:
        counts = as_map(raw["reason_counts"])
        pod["reason_counts"] = {str(reason): as_int(n) for reason, n in counts.items()}
    if "cluster_free_sufficient" in raw:
        pod["cluster_free_sufficient"] = bool(raw["cluster_free_sufficient"])
    advice = read_remedy(raw.get("advice"))
    if advice is not None:
        pod["advice"] = advice
    if "preemption" in raw:
        pod["preemption"] = read_preemption(raw["preemption"])
    age = as_float(raw.get("pending_age_seconds"))
    if age is not None and age >= 0:
        pod["pending_age_seconds"] = age
    return pod


def read_preemption(value: Any) -> PreemptionJson | None:
    """A pod's preemption verdict (§10.3); None when there is none."""
    raw = as_map(value)
    if not raw:
        return None
    node, helps = raw.get("node"), raw.get("helps")
    return {
        "verdict": as_str(raw.get("verdict"), "off"),
        "message": as_str(raw.get("message")),
        "node": node if isinstance(node, str) else None,
        "victims": [as_str(v) for v in as_list(raw.get("victims"))],
        "helps": helps if isinstance(helps, bool) else None,
    }


def read_request(value: Any) -> RequestJson | None:
    """None when there is none; one card when the file does not say how many."""
    raw = as_map(value)
    if not raw:
        return None
    request: RequestJson = {
        "gpus": as_int(raw.get("gpus"), 1),
        "memory_mib": as_int(raw.get("memory_mib")),
        "core_percent": as_int(raw.get("core_percent")),
    }
    share = as_int(raw.get("memory_percent"))
    if share:
        request["memory_percent"] = share
    if raw.get("whole_card") is True:
        request["whole_card"] = True
    if isinstance(mig := raw.get("mig_profile"), str) and mig:
        request["mig_profile"] = mig
    return request
