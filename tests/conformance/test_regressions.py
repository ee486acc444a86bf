"""Disagreements the differential test found, shrunk, with upstream's answer recorded: each
runs without Go, on the advisor alone (docs/conformance.md)."""

from __future__ import annotations

from typing import Any

from advisor.core.diagnose import diagnose
from advisor.core.gang import judge
from advisor.scenario import scenario_from_data
from conformance.compare import advisor_verdicts

AFFINITY = "node(s) didn't match Pod's node affinity/selector"


def _gt(bound: str) -> dict[str, Any]:
    return {"match_expressions": [{"key": "rank", "operator": "Gt", "values": [bound]}]}


def test_a_gt_bound_that_is_no_label_value_matches_no_node() -> None:
    """Seed 1387, shrunk. kube-scheduler v1.35.3 (k8s.io/kubernetes, NodeAffinity over
    apimachinery v0.35.3 labels.NewRequirement, selector.go:219) checks every value as a
    label value, Gt's bound too: "+2" parses as an integer but is no label value, so the
    term matches nothing; the advisor had checked values for In and NotIn only."""
    scenario = {
        "scheduler": {"profile": "volcano-vgpu"},
        "nodes": [
            {"name": "node-0", "labels": {"rank": "5"},
             "cards": [{"index": 0, "memory_mib": 16384}]}
        ],
        "pods": [
            {"name": "ml/job-3", "request": {"gpus": 1, "memory_mib": 2048},
             "affinity": {"node": {"required": [_gt("+2")]}}},
            {"name": "ml/job-4", "request": {"gpus": 1, "memory_mib": 2048},
             "affinity": {"node": {"required": [_gt("+2"), _gt("002")]}}},
        ],
    }  # fmt: skip
    assert advisor_verdicts(scenario) == {
        "ml/job-3": {"node-0": (AFFINITY,)},
        "ml/job-4": {},  # the other term ("002": a label value) matches
    }


def test_an_overcommitted_node_refuses_a_pod_asking_no_cpu_under_volcano() -> None:
    """Session seed 635, shrunk. Volcano v1.14.1's allocate (actions/allocate/allocate.go
    `predicate`, line 820; v1.15.1 line 988) checks `task.InitResreq.
    LessEqualWithResourcesName(node.FutureIdle(), api.Zero)` before its predicates: every
    dimension, a request of zero too, and a DaemonSet pod asking 20 cores of 8 leaves
    FutureIdle cpu at -12. Upstream: "0/1 nodes are unavailable: 1 Insufficient cpu."; the
    advisor had judged the node by NodeResourcesFit's rule, which skips a zero request."""
    scenario = {
        "scheduler": {"profile": "volcano-vgpu"},
        "policy": {"card": "legacy"},
        "nodes": [
            {"name": "node-2", "allocatable": {"cpu": "8"},
             "cards": [{"index": 0, "memory_mib": 81920, "healthy": False},
                       {"index": 1, "memory_mib": 81920}],
             "other_pods": [{"name": "kube-system/ds-2-0",
                             "resources": {"cpu": "20000m", "memory": "1Gi"}}]},
        ],
        "pods": [
            {"name": "ml/job-1", "request": {"gpus": 1, "memory_mib": 24576, "core_percent": 50}},
        ],
    }  # fmt: skip
    (verdict,) = judge(scenario_from_data(scenario, "seed-635.json")).pods
    assert verdict.placement is None
    assert verdict.node_summary == "0/1 nodes are unavailable: 1 Insufficient cpu."
    # kube-scheduler's filters (the kube harness's comparison) still pass the node
    assert advisor_verdicts(scenario) == {"ml/job-1": {}}


def test_a_scalar_the_guarantees_use_up_does_not_cap_a_queue() -> None:
    """Session seed 744, shrunk. Volcano v1.14.1 proportion.go OnSessionOpen: realCapability
    = api.ExceededPart(total, totalGuarantee) + guarantee, and ExceededPart (resource_info.go
    Diff) leaves out a scalar not beyond the guarantees rather than zero it, so
    MinDimensionResource(realCapability, Infinity) does not cap it: q1's guarantee of
    327679 MiB of volcano.sh/vgpu-memory (more than the node's 188416) leaves `default`'s
    deserved memory uncapped. Upstream places both members on node-0; the advisor had
    capped it at zero and refused them ("Queue default is overused")."""
    scenario = {
        "scheduler": {"profile": "volcano-vgpu"},
        "policy": {"card": "legacy"},
        "nodes": [
            {"name": "node-0",
             "cards": [{"index": 0, "memory_mib": 81920, "max_vgpus": 4},
                       {"index": 1, "memory_mib": 24576},
                       {"index": 2, "memory_mib": 81920, "max_vgpus": 10}]},
        ],
        "pods": [
            {"name": f"ml/job-{i}", "request": {"gpus": 2, "memory_mib": 2048, "core_percent": 100},
             "group": "ml/gang-1"}
            for i in (5, 6)
        ],
        "groups": [{"name": "ml/gang-1", "min_member": 2, "priority": 100}],
        "queues": [
            {"name": "q0", "guarantee": {"volcano.sh/vgpu-cores": "151", "memory": "9663676416"},
             "priority": 10},
            {"name": "q1", "guarantee": {"volcano.sh/vgpu-memory": "327679"}, "state": "Closed"},
        ],
    }  # fmt: skip
    verdicts = judge(scenario_from_data(scenario, "seed-744.json")).pods
    assert [(v.pod.name, v.cause) for v in verdicts] == [
        ("ml/job-5", "schedulable"),
        ("ml/job-6", "schedulable"),
    ]


def test_a_node_whose_pods_hold_slots_of_an_unhealthy_card_refuses_by_its_totals() -> None:
    """Device-code seed 56, shrunk. Volcano's vGPU card filter has no health check, so cards
    0 to 2 could take a three-card pod; but allocate first checks the pod's
    volcano.sh/vgpu-number against the node's allocatable (actions/allocate/allocate.go
    `predicate`), and the device plugin advertises only its healthy cards' slots
    (Project-HAMi/volcano-vgpu-device-plugin pkg/plugin/vgpu/plugin.go apiDevices, cache.go
    notify): 2 + 2 slots, 2 taken by job-0. Upstream: "0/1 nodes are unavailable: 1
    Insufficient volcano.sh/vgpu-number."; the advisor had placed it."""
    scenario = {
        "scheduler": {"profile": "volcano-vgpu"},
        "policy": {"card": "binpack"},
        "nodes": [
            {"name": "node-0",
             "cards": [{"index": 0, "memory_mib": 40960, "max_vgpus": 2},
                       {"index": 1, "memory_mib": 40960, "max_vgpus": 4, "healthy": False},
                       {"index": 2, "memory_mib": 40960, "max_vgpus": 2}]},
        ],
        "pods": [
            {"name": "ml/job-0", "request": {"gpus": 2, "memory_mib": 8192}},
            {"name": "ml/job-1", "request": {"gpus": 3, "memory_mib": 6144, "core_percent": 30}},
        ],
    }  # fmt: skip
    # the device-code comparison's side: the pod cycle, without the session's enqueue
    first, second = diagnose(scenario_from_data(scenario, "seed-56.json")).pods
    assert first.placement is not None
    assert second.placement is None
    assert second.node_summary == (
        "0/1 nodes are unavailable: 1 Insufficient volcano.sh/vgpu-number."
    )


def test_enqueue_refuses_a_pod_the_nodes_would_take_when_daemonsets_overcommit_the_cluster() -> (
    None
):
    """Session seed 1610, shrunk. Volcano v1.14.1's enqueue asks the overcommit plugin
    (plugins/overcommit/overcommit.go:124): the pod's automatic group asks 0.5 cpu of an
    idle of 1.2 x 24 - 40 (two DaemonSet pods of 20 cpu on a cordoned node), so it stays
    Pending and allocate never tries it, though node-0 has room. The advisor had left the
    refusal to its node cycle (the cluster's size, docs/design.md §10.2), which placed it;
    where the nodes would take a group, that refusal now holds it (cause `queue`)."""
    scenario = {
        "scheduler": {"profile": "volcano-vgpu"},
        "policy": {"card": "legacy"},
        "nodes": [
            {"name": "node-0", "allocatable": {"cpu": "16"},
             "cards": [{"index": 0, "memory_mib": 40960}]},
            {"name": "node-2", "allocatable": {"cpu": "8"}, "unschedulable": True,
             "cards": [{"index": 0, "memory_mib": 16384}],
             "resident_pods": [{"name": "kube-system/ds-2-0", "resources": {"cpu": "20"}},
                               {"name": "kube-system/ds-2-1", "resources": {"cpu": "20"}}]},
        ],
        "pods": [
            {"name": "ml/job-0", "request": {"gpus": 1, "memory_mib": 16384},
             "resources": {"cpu": "500m"}},
        ],
    }  # fmt: skip
    (verdict,) = judge(scenario_from_data(scenario, "seed-1610.json")).pods
    assert (verdict.cause, verdict.message) == (
        "queue",
        "resource in cluster is overused: overused cpu",
    )


def _mig_card(index: int, healthy: bool, *layout: tuple[str, int]) -> dict[str, Any]:
    instances = [{"profile": p, "start": s} for p, s in layout]
    return {"index": index, "memory_mib": 81920, "healthy": healthy,
            "model": "H100-SXM5-80GB", "mig": {"instances": instances}}  # fmt: skip


def test_an_instance_held_on_an_unhealthy_card_still_counts_against_the_node() -> None:
    """MIG seed 210 (hami), shrunk. The kubelet's allocatable of nvidia.com/mig-1g.10gb
    counts the healthy card's three instances; kube-scheduler v1.35.3's fitsRequest
    (k8s.io/kubernetes pkg/scheduler/framework/plugins/noderesources/fit.go) subtracts
    every bound pod's request, the one held on the unhealthy card too: 3 - 4 < 1, though
    two healthy instances are free. The advisor had counted the free healthy instances."""
    scenario: dict[str, Any] = {
        "scheduler": {"profile": "hami"},
        "nodes": [
            {"name": "node-2", "mig_strategy": "mixed",
             "cards": [_mig_card(0, False, ("3g.40gb", 0), ("1g.10gb", 4), ("1g.10gb", 5),
                                 ("1g.10gb", 6)),
                       _mig_card(1, True, ("2g.20gb", 0), ("1g.10gb", 2), ("1g.10gb", 3),
                                 ("1g.10gb", 4))]},
        ],
        "pods": [
            {"name": "run/mig-3", "node": "node-2",
             "request": {"gpus": 2, "mig_profile": "1g.10gb"},
             "mig_instances": [{"card": 0, "start": 4}, {"card": 0, "start": 6}]},
            {"name": "run/mig-4", "node": "node-2",
             "request": {"gpus": 2, "mig_profile": "1g.10gb"},
             "mig_instances": [{"card": 1, "start": 4}, {"card": 0, "start": 5}]},
            {"name": "ml/mig-0", "request": {"gpus": 1, "mig_profile": "1g.10gb"}},
        ],
    }  # fmt: skip
    assert advisor_verdicts(scenario) == {
        "ml/mig-0": {"node-2": ("Insufficient nvidia.com/mig-1g.10gb",)}
    }
    (verdict,) = diagnose(scenario_from_data(scenario, "mig-seed-210.json")).pods
    assert verdict.placement is None
    # re-partitioned, the healthy card holds seven: 7 - 4 leaves 3
    assert verdict.cause == "mig-geometry"
    assert "unoccupied slices for 3 1g.10gb" in verdict.message
    # without run/mig-3, one instance: 3 allocatable - 2 requested, two free healthy ones
    del scenario["pods"][0]
    one = diagnose(scenario_from_data(scenario, "mig-seed-210.json")).pods[0]
    assert one.placement is not None
    assert one.message == "fits on node-2 (1g.10gb at card 1 slice 2)"
    scenario["pods"][-1]["request"]["gpus"] = 2
    assert advisor_verdicts(scenario) == {
        "ml/mig-0": {"node-2": ("Insufficient nvidia.com/mig-1g.10gb",)}
    }


def test_a_profile_with_attributes_is_asked_under_the_plugins_resource_name() -> None:
    """A recorded scenario of the suite (tests/advisor/core/test_mig_cycle.py), shrunk. The
    device plugin advertises 1g.5gb+me as nvidia.com/mig-1g.5gb.me: a resource name allows
    no `+` (NVIDIA/k8s-device-plugin internal/rm/rm.go, AddDefaultResourcesToConfig). The
    harness had asked nvidia.com/mig-1g.5gb+me, no qualified name, which kube-scheduler
    (k8s.io/kubernetes pkg/api/v1/resource, IsExtendedResourceName) does not count, so the
    node passed; the advisor's reason named the resource with its `+`."""
    scenario: dict[str, Any] = {
        "nodes": [
            {"name": "m", "mig_strategy": "mixed",
             "cards": [_a100_40(0, ("1g.5gb", 0), ("1g.5gb", 1))]},
        ],
        "pods": [{"name": "ml/r", "request": {"gpus": 1, "mig_profile": "1g.5gb+me"}}],
    }  # fmt: skip
    assert advisor_verdicts(scenario) == {"ml/r": {"m": ("Insufficient nvidia.com/mig-1g.5gb.me",)}}


def _a100_40(index: int, *layout: tuple[str, int]) -> dict[str, Any]:
    instances = [{"profile": p, "start": s} for p, s in layout]
    return {"index": index, "memory_mib": 40960, "model": "NVIDIA A100-SXM4-40GB",
            "mig": {"instances": instances}}  # fmt: skip
