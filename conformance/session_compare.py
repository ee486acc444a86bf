"""Volcano's own session (the `volcano` harness, v1.14.1) beside the advisor's job cycle
(`advisor.core.gang.diagnose_jobs`), on generated clusters with gangs (docs/conformance.md):
per Pending pod placed or not and the node (within upstream's tied set), per PodGroup with
Pending members its state (placed, rolled-back, admitted).

The clusters keep to what v1.14.1 and v1.15.1 decide alike: the legacy card order (v1.14.1
walks cards from the last whatever the policy, `vgpu/utils.go`). One difference remains:
v1.14.1 keeps the cards of a vGPU pod whose placement a discarded gang undid
(`vgpu/device_info.go` Release does nothing and Allocate leaves the in-memory pod without
its `vgpu-ids-new`, so `NodeInfo.RemoveTask`'s SubResource finds nothing to give back);
v1.15.1, which the advisor follows, gives them back. The harness names such pods
(`leaked`), and a cluster with any is counted apart, as explained.
"""

from __future__ import annotations

import random
from typing import Any

from advisor.core.gang import diagnose_jobs
from advisor.scenario import ScenarioError, scenario_from_data
from conformance import harness
from conformance.generate import generate
from conformance.session_queues import add_queues


def generate_gangs(seed: int) -> dict[str, Any]:
    """A volcano-vgpu cluster (generate.py's nodes and running pods) whose Pending pods
    come in PodGroups of min_member 2 to 8, some members alike, some groups short of
    members, beside pods of no group; on most, queues (conformance/session_queues.py); some
    groups with their status.phase given (the others inferred), some with task roles."""
    data = generate(seed, max_pending=10, profile="volcano-vgpu")
    data["policy"] = {"card": "legacy"}
    data["scheduler"].pop("schedule_weight", None)
    rng = random.Random(seed * 7919 + 1)
    pending = [p for p in data["pods"] if "node" not in p]
    groups: list[dict[str, Any]] = []
    start = 0
    while start < len(pending):
        size = rng.randint(1, 6)
        members = pending[start : start + size]
        start += size
        if len(members) < 2 and rng.random() < 0.5:
            continue  # a pod of no group
        name = f"ml/gang-{len(groups)}"
        if rng.random() < 0.5:  # members alike: a gang of one template
            for m in members[1:]:
                for key in ("request", "resources", "priority", "node_selector", "affinity"):
                    m.pop(key, None)
                    if key in members[0]:
                        m[key] = members[0][key]
        for m in members:
            m["group"] = name
        low = max(2, len(members) - 1)
        min_member = rng.randint(min(low, 8), min(len(members) + 1, 8))
        group: dict[str, Any] = {"name": name, "min_member": min_member}
        priority = rng.choice((0, 0, 10, 100))
        if priority:
            group["priority"] = priority
        groups.append(group)
    if groups:
        data["groups"] = groups
    add_queues(data, random.Random(seed * 7919 + 2))  # its own draws: the gangs stay as they were
    phases = random.Random(seed * 7919 + 4)
    for group in groups:  # an admitted one (Inqueue) skips enqueue, which judges only
        # minResources: those groups are given a phase most often
        weights = (2, 6, 2, 1, 1, 1) if "min_resources" in group else (9, 6, 3, 1, 1, 1)
        (phase,) = phases.choices(PHASES, weights=weights)
        if phase is not None:
            group["phase"] = phase
    add_roles(data, random.Random(seed * 7919 + 5))
    return data


def add_roles(data: dict[str, Any], rng: random.Random) -> None:
    """Task roles on some groups (their own draws: the rest stays as it was): each member a
    `ps` or a `worker` (`volcano.sh/task-spec`), and on most of those a `min_task_member`
    at, below or above what the members give, so Volcano's per-role checks, its skipping
    of a failed role's tasks and NeedContinueAllocating's two rules all come up."""
    members: dict[str, list[dict[str, Any]]] = {}
    for pod in data["pods"]:
        if "group" in pod and "node" not in pod:
            members.setdefault(pod["group"], []).append(pod)
    for group in data.get("groups", []):
        pods = members.get(group["name"], [])
        if len(pods) < 2 or rng.random() < 0.6:
            continue
        for pod in pods:
            pod["role"] = "ps" if rng.random() < 0.3 else "worker"
        if rng.random() < 0.7:
            ps = sum(1 for p in pods if p["role"] == "ps")
            wanted = {"ps": rng.randint(0, ps + 1), "worker": rng.randint(0, len(pods) - ps + 1)}
            group["min_task_member"] = {r: n for r, n in wanted.items() if n or rng.random() < 0.5}


PHASES = (None, "Inqueue", "Pending", "Running", "Unknown", "Completed")


def advisor_side(
    data: dict[str, Any],
) -> tuple[dict[str, str | None], dict[str, str], frozenset[str]]:
    """The advisor's node (None: not placed) per Pending pod, state per group, and the
    groups it leaves to the node cycle where Volcano's enqueue refuses them for the
    cluster's size (docs/design.md §10.2)."""
    cluster = scenario_from_data(data, "<generated>", "volcano-vgpu")
    jobs = diagnose_jobs(cluster)
    nodes = {
        v.pod.name: (v.placement.node if v.placement is not None else None)
        for v in jobs.diagnosis.pods
    }
    return nodes, {g.name: g.state for g in jobs.groups}, jobs.left_to_nodes


EXPLAINED = "explained: "  # a difference docs/conformance.md explains, counted apart


def differences(data: dict[str, Any], theirs: dict[str, Any]) -> list[str]:
    """What differs, one line per pod or group; a group's state the advisor's design words
    otherwise (enqueue's refusal for the cluster's size) starts with EXPLAINED."""
    nodes, states, left = advisor_side(data)
    out: list[str] = []
    for up in theirs["pods"]:
        pod = up["pod"]
        mine = nodes.get(pod, "missing")
        if mine == "missing":
            out.append(f"{pod}: not in the advisor's diagnosis")
        elif (mine is None) != (up["node"] is None):
            out.append(f"{pod}: advisor {mine or 'pending'}, upstream {up['node'] or 'pending'}")
        elif mine is not None and mine not in (up.get("tied") or [up["node"]]):
            out.append(f"{pod}: advisor node {mine}, upstream one of {up['tied']}")
    for group in theirs["groups"]:
        name = group["name"]
        if name.split("/", 1)[1].startswith("pg-"):
            continue  # a pod's own group: its pod is compared above
        if states.get(name) != group["state"]:
            line = f"group {name}: advisor {states.get(name)}, upstream {group['state']}"
            explained = name in left and group["state"] == "not-admitted"
            out.append(EXPLAINED + line if explained else line)
    return out


def check(datas: list[dict[str, Any]]) -> list[tuple[int, list[str], bool]]:
    """(Pending pods, what differs, whether v1.14.1 kept a discarded pod's cards)."""
    results = harness.run_scenarios("volcano", datas)
    return [
        (len(r["pods"]), differences(d, r), bool(r["leaked"]))
        for d, r in zip(datas, results, strict=True)
    ]


def disagrees(data: dict[str, Any]) -> bool:
    try:
        _, diffs, leaked = check([data])[0]
    except ScenarioError:
        return False
    return not leaked and any(not d.startswith(EXPLAINED) for d in diffs)
