"""Enqueue's bookkeeping and allocate's device totals in Volcano's session (core.session,
profiles.volcano_vgpu): hand cases citing the upstream code that decides them, checked
once against Volcano's own code (the first through v1.14.1's session, conformance/volcano14;
the second through the device harness, whose words it gives: in the session, proportion's
enqueue already refuses the pod's automatic group, 60 + 50 cores beyond the queue's 100).
"""

from __future__ import annotations

from typing import Any

from advisor.core.gang import diagnose_jobs
from advisor.scenario import scenario_from_data


def _member(name: str, group: str, cpu: str, priority: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "group": group,
        "request": {"gpus": 1, "memory_mib": 1024},
        "resources": {"cpu": cpu},
    }
    if priority:
        out["priority"] = priority
    return out


def test_a_group_the_cluster_is_too_small_for_holds_no_room_for_the_next() -> None:
    """One node of 10 cpu: overcommit's idle is 1.2 x 10 = 12. ml/a's minResources (13
    cpu) exceed it alone, so Volcano's enqueue leaves it Pending (plugins/overcommit
    overcommit.go JobEnqueueableFn) and never calls JobEnqueuedFn: nothing of it counts
    inqueue. ml/b (8 cpu) is then admitted and placed. The advisor leaves ml/a to the node
    cycle, which words the cluster's size (docs/design.md §10.2), but must not count its
    13 cpu inqueue either, or ml/b would be refused ("resource in cluster is overused")."""
    data = {
        "scheduler": {"profile": "volcano-vgpu"},
        "policy": {"card": "legacy"},
        "nodes": [
            {
                "name": "n0",
                "allocatable": {"cpu": "10", "memory": "64Gi"},
                "cards": [{"index": 0, "memory_mib": 16384}, {"index": 1, "memory_mib": 16384}],
            }
        ],
        "groups": [
            {"name": "ml/a", "min_member": 2, "priority": 100, "min_resources": {"cpu": "13"}},
            {"name": "ml/b", "min_member": 2, "min_resources": {"cpu": "8"}},
        ],
        "pods": [
            _member("ml/a-0", "ml/a", "7", 100),
            _member("ml/a-1", "ml/a", "7", 100),
            _member("ml/b-0", "ml/b", "4"),
            _member("ml/b-1", "ml/b", "4"),
        ],
    }
    result = diagnose_jobs(scenario_from_data(data, "enqueue.yaml"))
    states = {g.name: g.state for g in result.groups}
    assert states["ml/b"] == "placed"  # upstream: Inqueue, both members on n0
    assert states["ml/a"] == "rolled-back"  # upstream: Pending (not-admitted), never tried
    assert result.left_to_nodes == frozenset({"ml/a"})
    causes = {d.pod.name: d.cause for d in result.diagnosis.pods}
    assert causes["ml/a-1"] == "node-resources"  # the node cycle's words: 7 + 7 > 10 cpu


def test_device_totals_count_the_healthy_cards_slots_and_cores() -> None:
    """Volcano's vGPU card filter has no health check, but allocate's `predicate` checks
    the pod's volcano.sh/vgpu-cores against the node's allocatable first, and the device
    plugin advertises 100 cores per healthy card only (Project-HAMi/
    volcano-vgpu-device-plugin pkg/plugin/vgpu/plugin.go apiDevices): one healthy card, a
    running pod asking 60 on the unhealthy one, so 40 left; a pod asking 50 is refused,
    one asking 40 fits."""
    running = {
        "name": "ml/old",
        "node": "n0",
        "cards": [1],
        "request": {"gpus": 1, "memory_mib": 1024, "core_percent": 60},
    }

    def asking(core: int) -> Any:
        request = {"gpus": 1, "memory_mib": 1024, "core_percent": core}
        pending = {"name": "ml/new", "request": request}
        data = {
            "scheduler": {"profile": "volcano-vgpu"},
            "nodes": [
                {
                    "name": "n0",
                    "cards": [
                        {"index": 0, "memory_mib": 16384},
                        {"index": 1, "memory_mib": 16384, "healthy": False},
                    ],
                }
            ],
            "pods": [running, pending],
        }
        (verdict,) = diagnose_jobs(scenario_from_data(data, "totals.yaml")).diagnosis.pods
        return verdict

    refused = asking(50)
    assert refused.placement is None
    assert dict(refused.reason_counts) == {"Insufficient volcano.sh/vgpu-cores": 1}
    ((node, lines),) = refused.node_reasons
    assert (node, lines[0]) == (
        "n0",
        "Insufficient volcano.sh/vgpu-cores: its healthy cards' cores, less what its pods ask",
    )
    assert asking(40).placement is not None


# Two nodes of 2 cpu: n0 holds a running pod of 1.5 cpu, n1's card is tainted. A gang of two
# (min_member 2, every member needed): ml/a asks 3 cpu, ml/b 1 cpu.
SIZED: dict[str, Any] = {
    "scheduler": {"profile": "volcano-vgpu"},
    "policy": {"card": "legacy"},
    "nodes": [
        {"name": "n0", "allocatable": {"cpu": "2", "memory": "16Gi", "pods": 10},
         "cards": [{"index": 0, "memory_mib": 16384}]},
        {"name": "n1", "allocatable": {"cpu": "2", "memory": "16Gi", "pods": 10},
         "cards": [{"index": 0, "memory_mib": 16384}],
         "taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]},
    ],
    "groups": [{"name": "ml/g", "min_member": 2}],
    "pods": [
        {"name": "run/r", "node": "n0", "cards": [0], "request": {"gpus": 1, "memory_mib": 1024},
         "resources": {"cpu": "1500m", "memory": "1Gi"}},
        {"name": "ml/a", "group": "ml/g", "request": {"gpus": 1, "memory_mib": 1024},
         "resources": {"cpu": "3", "memory": "1Gi"}},
        {"name": "ml/b", "group": "ml/g", "request": {"gpus": 1, "memory_mib": 1024},
         "resources": {"cpu": "1", "memory": "1Gi"}},
    ],
}  # fmt: skip


def test_a_member_the_queue_refuses_for_the_clusters_size_does_not_end_the_jobs_turn() -> None:
    """Volcano v1.15.1 actions/allocate/allocate.go allocateResourcesForTasks: a task
    `ssn.Allocatable` refuses is skipped (`continue`, no fit error), whatever
    NeedContinueAllocating says. ml/a's 3 cpu pass the default queue's realCapability (the
    cluster's 4 cpu, 1.5 allocated): proportion refuses it, for the cluster's size alone,
    which the advisor words by the nodes (unsatisfiable, docs/design.md §10.2). Volcano then
    tries ml/b on the nodes (its fit error: Insufficient cpu on n0, the taint on n1), so the
    advisor must too, not end the turn at ml/a and word ml/b `gang`. Checked against
    v1.14.1's session (conformance/volcano14; tests/conformance/test_session.py)."""
    jobs = diagnose_jobs(scenario_from_data(SIZED, "<test>", "volcano-vgpu"))
    causes = {v.pod.name: v.cause for v in jobs.diagnosis.pods}
    assert causes == {"ml/a": "unsatisfiable", "ml/b": "node-resources"}
    assert jobs.sized == frozenset({"ml/a"})
    assert [(g.name, g.state) for g in jobs.groups] == [("ml/g", "admitted")]
