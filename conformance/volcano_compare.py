"""The comparison for the volcano-vgpu profile (docs/conformance.md), ready for the Volcano
harness: per Pending pod, placed or not, and where placed the node and the cards.

Volcano draws among equally scored nodes at random
(pkg/scheduler/util/scheduler_helper.go:209); the harness reports that tied set and pins
the draw to its first node by name, so a node agrees when it is in the set. Card order is
deterministic upstream (vgpu/utils.go sortedDeviceIndicesByPolicy: ties by index), so the
set of cards is compared exactly. Not their order: the advisor lists a pod's cards by index,
Volcano writes them in the order it took them (checkNodeGPUSharingPredicateAndScore appends
as it walks), which decides no placement.
"""

from __future__ import annotations

from typing import Any

from advisor.core.diagnose import diagnose
from advisor.output import diagnosis_json
from advisor.scenario import ScenarioError, scenario_from_data
from conformance import harness


def advisor_side(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The advisor's diagnosis JSON per Pending pod, judged as volcano-vgpu."""
    cluster = scenario_from_data(data, "<generated>", "volcano-vgpu")
    report = diagnosis_json(diagnose(cluster), cluster.scheduler)
    return {str(p["pod"]): dict(p) for p in report["pods"]}


def differences(ours: dict[str, dict[str, Any]], theirs: dict[str, Any]) -> list[str]:
    """What the advisor and the harness's JSON disagree on, one line per pod."""
    out: list[str] = []
    for up in theirs["pods"]:
        pod = up["pod"]
        mine = ours.get(pod)
        if mine is None:
            out.append(f"{pod}: not in the advisor's diagnosis")
            continue
        placement: dict[str, Any] = mine.get("placement") or {}
        placed = mine["cause"] == "schedulable" and bool(placement)
        if placed != (up["node"] is not None):
            upstream = f"on {up['node']}" if up["node"] else f"pending: {up['reason']}"
            out.append(f"{pod}: advisor {mine['cause']}, upstream {upstream}")
        elif placed:
            tied = up.get("tied") or [up["node"]]
            if placement["node"] not in tied:
                out.append(f"{pod}: advisor node {placement['node']}, upstream one of {tied}")
            elif placement["node"] == up["node"] and sorted(placement["cards"]) != sorted(
                up["cards"]
            ):
                out.append(f"{pod}: advisor cards {placement['cards']}, upstream {up['cards']}")
    return out


def check(datas: list[dict[str, Any]]) -> list[tuple[int, list[str]]]:
    """(Pending pods, what differs) per scenario: Volcano's vGPU device code (the
    volcano-cards harness) beside the advisor's volcano-vgpu profile."""
    results = harness.run_scenarios("volcano-cards", datas)
    return [
        (len(result["pods"]), differences(advisor_side(data), result))
        for data, result in zip(datas, results, strict=True)
    ]


def disagrees(data: dict[str, Any]) -> bool:
    try:
        return bool(check([data])[0][1])
    except ScenarioError:
        return False  # a smaller scenario the advisor refuses is no witness
