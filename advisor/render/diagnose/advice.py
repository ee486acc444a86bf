"""What to do about each cause: the advice both pages show, grouped with the pods it concerns."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from advisor.render.common.advice import advice_key
from advisor.schemas import DiagnosisJson


@dataclass(frozen=True, slots=True)
class Advice:
    key: str  # an advice key (`advisor.core.remedy`): a cause, or one of its sub-cases
    title: str
    text: str


ADVICE: Mapping[str, Advice] = {
    advice.key: advice
    for advice in (
        Advice(
            "schedulable",
            "Schedulable",
            "These fit on the cards shown in this simulated cycle, on a node that also has the "
            "cpu, memory and pod slot they ask for and that their node selector, affinity and "
            "tolerations admit. If they stay Pending, the node is not what blocks them: look at "
            "quotas, pod affinity, topology spread, volumes or ports.",
        ),
        Advice(
            "node-resources",
            "Node resources",
            "Their GPUs fit now on a node they may use, but that node lacks the cpu, memory or "
            "pod slots they request. Free or add cpu and memory on the GPU nodes, not GPUs: "
            "check the pod's requests (are they what it needs?), and look at the other pods on "
            "the GPU nodes (CPU-only pods that could run elsewhere).",
        ),
        Advice(
            "fragmentation",
            "Fragmentation",
            "The free memory is there on one node, but split wrongly across its cards, held by "
            "a card of the other isolation mode, or behind the vGPU limit. Rebalance "
            "(`xgpu-advisor plan`) or move small pods off these cards; do not add nodes.",
        ),
        Advice(
            "capacity-consolidate",
            "Capacity, consolidation would help",
            "No single node has enough free, but the cluster as a whole does. Consolidating "
            "pods across nodes (`xgpu-advisor plan`) can make room; scaling up would waste money.",
        ),
        Advice(
            "rebalance",
            "A plan makes room",
            "A rebalancing plan (below) lets these run.",
        ),
        Advice(
            "no-plan",
            "No plan makes room, scale up",
            "The free memory would cover these if rearranged, but no rebalancing plan makes "
            "room (pods that may not move, cards too small for the moved pods, the nodes' other "
            "filters). Add nodes as proposed below, or free room by hand.",
        ),
        Advice(
            "capacity-scale-up",
            "Capacity, scale up",
            "The whole cluster lacks the free memory or core for these. Add GPU nodes or evict "
            "lower-priority pods.",
        ),
        Advice(
            "capacity",
            "Capacity",
            "No node has enough free in total. Add GPU nodes, evict lower-priority pods, or "
            "consolidate if the cluster as a whole has room.",
        ),
        Advice(
            "unsatisfiable",
            "Unsatisfiable",
            "No node the pod may use (its node selector, affinity and tolerations decide) has "
            "enough cards of the size asked for, or the allocatable cpu and memory it requests, "
            "even empty and repaired. Shrink the request (fewer cards, less memory per card, "
            "less cpu or memory) or add a node with larger or more cards that the pod may use.",
        ),
        Advice(
            "invalid",
            "Invalid request",
            "The request breaks a rule of the even-split model (see the message). Fix the pod's "
            "GPU resources; it will never be scheduled as it is.",
        ),
    )
}


def grouped_advice(diagnosis: DiagnosisJson) -> list[tuple[Advice, list[str]]]:
    """Each kind of advice that applies, in ADVICE order, with the pods it concerns."""
    groups: dict[str, list[str]] = {}
    for pod in diagnosis["pods"]:
        groups.setdefault(advice_key(pod), []).append(pod["pod"])
    return [(advice, groups[key]) for key, advice in ADVICE.items() if key in groups]
