"""The diagnosis (§5 JSON, `advisor.output.diagnosis_json`, read by `read.read_diagnosis`) as
both pages word it: the headline, each pod's request, cause and explanation; and who judged
it (`policy_text`, `judged_by`: also read from the plan's and the report's JSON)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

# CAUSES: the causes in the core's order (docs/design.md §3), one list, so a new cause reaches
# every report, chart and count without a second copy here.
from advisor.core.diagnosis import shown_causes
from advisor.render.common.parts import profile_of
from advisor.render.common.values import as_map, as_str, fmt_age
from advisor.schemas import (
    AutoscalerJson,
    DiagnosisJson,
    PlacementJson,
    PodDiagnosisJson,
    RequestJson,
)


def oldest_first(diagnosis: DiagnosisJson) -> list[PodDiagnosisJson]:
    """The Pending pods, the longest waiting first (§12.3); those of unknown age after them,
    each group in the diagnosis' own order."""
    known = [p for p in diagnosis["pods"] if "pending_age_seconds" in p]
    unknown = [p for p in diagnosis["pods"] if "pending_age_seconds" not in p]
    return [*sorted(known, key=lambda p: -p.get("pending_age_seconds", 0.0)), *unknown]


def any_age(diagnosis: DiagnosisJson) -> bool:
    """Whether a pod's age is known: the pages then show how long each has waited."""
    return any("pending_age_seconds" in p for p in diagnosis["pods"])


def waited(pod: PodDiagnosisJson) -> str:
    return fmt_age(pod.get("pending_age_seconds"))


def headline(diagnosis: DiagnosisJson) -> str:
    """e.g. "3 Pending GPU pods: 1 schedulable, 1 fragmentation, 1 capacity"."""
    counts = diagnosis["summary"]
    pending = counts["pending"]
    if pending == 0:
        return "No Pending GPU pods"
    noun = "pod" if pending == 1 else "pods"
    parts = [f"{counts[cause]} {cause}" for cause in shown_causes(counts) if counts[cause]]
    return (
        f"{pending} Pending GPU {noun}: " + ", ".join(parts)
        if parts
        else f"{pending} Pending GPU {noun}"
    )


def policy_text(diagnosis: Mapping[str, Any]) -> str:
    policy = as_map(diagnosis.get("policy"))
    node = as_str(policy.get("node"), "binpack")
    card = as_str(policy.get("card"), "binpack")
    return f"node {node}, card {card}"


def judged_by(data: Mapping[str, Any]) -> str:
    """ "policy: node binpack, card binpack", led by "scheduler: hami; " outside cce."""
    profile = profile_of(data)
    policy = f"policy: {policy_text(data)}"
    return policy if profile is None else f"scheduler: {profile}; {policy}"


def format_request(request: RequestJson) -> str:
    """Per-card shape as the scheduler sees it: "2 × 4096 MiB + 2 × 10 % core"; outside cce
    also "1 × 50 % of the card" (a share) and "2 × whole card" (neither memory nor share)."""
    gpus, memory, core = request["gpus"], request["memory_mib"], request["core_percent"]
    if mig := request.get("mig_profile"):
        return f"{gpus} × MIG {mig}"
    share = request.get("memory_percent", 0)
    whole = request.get("whole_card", False)
    if (share or whole) and gpus >= 1 and core % gpus == 0:
        # A share wins over memory in volcano-vgpu, memory over a share in hami: show both.
        text = f"{gpus} × " + (f"{share} % of the card" if share else "whole card")
        if share and memory and memory % gpus == 0:
            text += f" or {memory // gpus} MiB"
        return f"{text} + {gpus} × {core // gpus} % core" if core else text
    if gpus < 1 or memory % gpus or core % gpus:
        # Not an even split (an invalid pod): show the totals rather than a false shape.
        text = f"{memory} MiB over {gpus} cards"
        return f"{text} + {core} % core" if core else text
    text = f"{gpus} × {memory // gpus} MiB"
    return f"{text} + {gpus} × {core // gpus} % core" if core else text


def pod_request_text(pod: PodDiagnosisJson) -> str:
    """The GPU shape, then what else binds the pod to a node when anything does:
    "1 × 49152 MiB · cpu 8, memory 64Gi · nodeSelector nodepool=a100"."""
    request = pod["request"]
    parts = [format_request(request) if request else "?"]
    resources = pod.get("resources", {})
    if resources:
        parts.append(", ".join(f"{key} {value}" for key, value in resources.items()))
    selector = pod.get("node_selector", {})
    if selector:
        pairs = ", ".join(f"{key}={value}" for key, value in sorted(selector.items()))
        parts.append(f"nodeSelector {pairs}")
    return " · ".join(parts)


def format_cards(cards: Sequence[int]) -> str:
    return ("card " if len(cards) == 1 else "cards ") + ", ".join(map(str, cards))


def format_placement(placement: PlacementJson) -> str:
    return f"fits on {placement['node']}, {format_cards(placement['cards'])}"


def explanation(pod: PodDiagnosisJson) -> str:
    """Where the pod fits, or why it does not: the message, led by the node summary
    (kube-scheduler's FitError sentence, "0/3 nodes are available: 3 too-few-cards.")."""
    placement, message = pod["placement"], pod["message"]
    if pod["cause"] == "schedulable" and placement:
        return format_placement(placement) + tie_note(message)
    summary = pod.get("node_summary", "")
    if summary and summary not in message:
        if not message:
            message = summary
        # The summary is a sentence of its own; an older report's ("0/3 nodes fit: ...") is not.
        elif summary.endswith("."):
            message = f"{summary} {message}"
        else:
            message = f"{summary}; {message}"
    line = preemption_text(pod)
    return f"{message} {line}" if line else message


def preemption_text(pod: PodDiagnosisJson) -> str:
    """The pod's preemption verdict as a sentence (docs/design.md §10.3), "" where there is
    none to tell (placed, or the configuration has no preemption for it)."""
    p = pod.get("preemption")
    if not p or p["verdict"] == "off":
        return ""
    if p["verdict"] != "evicts":
        return f"Preemption ({p['verdict']}): {p['message']}"
    effect = "then it fits" if p["helps"] else "it still does not fit its cards"
    victims = ", ".join(p["victims"])
    return f"Preemption evicts {victims} on {p['node']} ({effect}): {p['message']}"


def tie_note(message: str) -> str:
    """The message's note that the node was a random tie (hami, volcano-vgpu): " (3 nodes
    score the same ... the real pick may differ)", or "" when the pick was not a tie."""
    _, bracket, note = message.partition(" (")
    return f" ({note}" if bracket and "may differ" in note else ""


def pods_for_node(diagnosis: DiagnosisJson, node: str) -> Iterator[PodDiagnosisJson]:
    """Pending pods placed on this node by the cycle, or whose diagnosis names it."""
    for pod in diagnosis["pods"]:
        placement = pod["placement"]
        if (placement is not None and placement["node"] == node) or node in pod["nodes"]:
            yield pod


# -- autoscalers (docs/design.md §12.2): the Markdown line and the HTML table word them alike

NO_TEMPLATE = "no running pod to copy a replica from"


def more_replicas(a: AutoscalerJson) -> int:
    """Replicas the HPA may still add (none once at or past max)."""
    return max(0, a["max_replicas"] - a["replicas"])


def placeable_text(a: AutoscalerJson) -> str:
    """'3 of 4 more replicas place', 'at max_replicas (5), none to add', or NO_TEMPLATE."""
    if a["placeable"] is None:
        return NO_TEMPLATE
    more = more_replicas(a)
    if not more:
        return f"at max_replicas ({a['max_replicas']}), none to add"
    return f"{a['placeable']} of {more} more replicas place"


def blocked_text(a: AutoscalerJson) -> str | None:
    """The first replica left Pending: its cause and node summary; None when none is."""
    blocked = a["blocked"]
    if blocked is None:
        return None
    summary = blocked["node_summary"]
    return blocked["cause"] + (f": {summary}" if summary else "")
