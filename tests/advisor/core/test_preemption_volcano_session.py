"""Volcano's preempt and reclaim as its own session runs them after allocate, on clusters
shrunk from the differential comparison's disagreements (conformance/session_preempt.py,
docs/conformance.md): each case is what the `volcano` harness (volcano.sh/volcano v1.14.1,
the same in v1.15.1 for these) decides, and what the advisor got wrong before.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, cast

from advisor.core.gang import diagnose_jobs
from advisor.core.model import Pod
from advisor.core.preemption.votes import _tiers
from advisor.scenario import scenario_from_data

PREEMPT = ["allocate", "preempt", "backfill"]


def cluster(pods: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    scheduler = {"profile": "volcano-vgpu", "actions": PREEMPT, "gang": {"preemptable": False}}
    data: dict[str, Any] = {
        "scheduler": scheduler,
        "policy": {"card": "legacy"},
        "nodes": [{"name": "n0", "cards": [{"index": 0, "memory_mib": 16384}]}],
        "pods": pods,
    }
    for key, value in extra.items():
        if key in ("actions", "gang"):
            scheduler[key] = value
        else:
            data[key] = value
    return data


def verdicts(data: dict[str, Any]) -> dict[str, tuple[str, str | None, tuple[str, ...]]]:
    found = diagnose_jobs(scenario_from_data(data, "<test>", "volcano-vgpu")).diagnosis.pods
    return {
        v.pod.name: (v.preemption.verdict, v.preemption.node, v.preemption.victims)
        for v in found
        if v.preemption is not None
    }


def running(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "node": "n0", "cards": [0], **extra}


def test_a_whole_card_pod_holds_no_vgpu_memory_in_the_node_sums() -> None:
    """A running pod that asks no memory takes the whole card, but its Resreq has no
    volcano.sh/vgpu-memory: the node's FutureIdle still shows the card's memory, so
    preempt pipelines the Pending pod there without evicting (normalPreempt's loop stops
    at once: InitResreq <= FutureIdle), and the pod stays Pending on cards that are full."""
    data = cluster(
        [
            running("run/whole", request={"gpus": 1}),
            {"name": "ml/p", "priority": 100, "request": {"gpus": 1, "memory_mib": 8192}},
        ]
    )
    assert verdicts(data) == {"ml/p": ("no-victims", "n0", ())}


def test_the_node_sums_count_one_pod_against_the_pods_allocatable() -> None:
    """The card has room but the node's pod count is full: the Resreq's `pods` scalar
    makes preempt evict the running pod."""
    data = cluster(
        [
            running("run/low", request={"gpus": 1, "memory_mib": 4096}),
            {"name": "ml/p", "priority": 100, "request": {"gpus": 1, "memory_mib": 4096}},
        ],
        nodes=[
            {
                "name": "n0",
                "allocatable": {"cpu": "8", "memory": "32Gi", "pods": 1},
                "cards": [{"index": 0, "memory_mib": 16384}],
            }
        ],
    )
    assert verdicts(data) == {"ml/p": ("evicts", "n0", ("run/low",))}


def test_the_pass_within_a_job_pipelines_a_member_the_gang_could_not() -> None:
    """A gang of two one-card members on a node of one card: between jobs the statement
    pipelines one, then is discarded (the gang needs both); the pass within the job then
    pipelines the first and commits it, whatever the gang (preempt.go "Preemption between
    Task within Job")."""
    gang = {"name": "ml/g", "min_member": 2}
    pods = [
        {"name": f"ml/g-{k}", "group": "ml/g", "request": {"gpus": 1, "memory_mib": 16384}}
        for k in range(2)
    ]
    assert verdicts(cluster(pods, groups=[gang])) == {
        "ml/g-0": ("no-victims", "n0", ()),
        "ml/g-1": ("no-victims", None, ()),
    }


def test_a_node_its_pods_overcommit_takes_nothing_even_a_pod_asking_no_cpu() -> None:
    """LessEqual compares cpu and memory always: FutureIdle's negative cpu refuses a pod
    that asks none."""
    data = cluster(
        [
            running(
                "run/big",
                priority=100,
                resources={"cpu": "2"},
                request={"gpus": 1, "memory_mib": 4096},
            ),
            {"name": "ml/p", "priority": 10, "request": {"gpus": 1, "memory_mib": 1024}},
        ],
        nodes=[
            {
                "name": "n0",
                "allocatable": {"cpu": "1", "memory": "32Gi", "pods": 10},
                "cards": [{"index": 0, "memory_mib": 16384}],
            }
        ],
    )
    assert verdicts(data) == {"ml/p": ("no-victims", None, ())}


def test_a_pod_of_no_group_enqueue_leaves_pending_preempts_nothing() -> None:
    """Its own PodGroup stays Pending (enqueue: the cluster has no room for it), and
    preempt skips a Pending job (job.IsPending)."""
    data = cluster(
        [
            running("run/low", request={"gpus": 1, "memory_mib": 16384}),
            {"name": "ml/p", "priority": 100, "request": {"gpus": 1, "memory_mib": 16384}},
        ],
        actions=["enqueue", "allocate", "preempt", "backfill"],
    )
    assert verdicts(data)["ml/p"][0] == "not-eligible"
    data["scheduler"]["actions"] = PREEMPT  # no enqueue: allocate admits it, preempt evicts
    assert verdicts(data) == {"ml/p": ("evicts", "n0", ("run/low",))}


def test_an_empty_intersection_lets_the_tiers_next_plugin_start_afresh() -> None:
    """session_plugins.go Preemptable: an empty intersection sets victims to nil, and the
    next plugin's list then becomes the victims."""
    pods = [cast(Pod, SimpleNamespace(name=n)) for n in ("ns/a", "ns/b")]  # names only
    first: list[Callable[[list[Pod]], list[Pod]]] = [
        lambda ps: [p for p in ps if p.name == "ns/a"],
        lambda ps: [p for p in ps if p.name == "ns/b"],
        lambda ps: list(ps),
    ]
    assert [p.name for p in _tiers(pods, first)] == ["ns/a", "ns/b"]
    assert _tiers(pods, first[:2]) == []  # undecided: no next tier
    assert [p.name for p in _tiers(pods, first[:2], [lambda ps: ps[:1]])] == ["ns/a"]


RECLAIM = ["allocate", "reclaim", "backfill"]


def _pod_limited(pods: int, cards: int = 1) -> list[dict[str, Any]]:
    cards_ = [{"index": i, "memory_mib": 16384} for i in range(cards)]
    return [{"name": "n0", "allocatable": {"pods": pods}, "cards": cards_}]


def test_a_queue_deserves_no_more_pods_than_the_cluster_allows() -> None:
    """Seed 165, shrunk. The queues count `pods` (volcano v1.15.1 pkg/scheduler/api/
    pod_info.go GetPodResourceRequest, line 119: one per task; resource_info.go
    NewResource, line 95: the node's allocatable), so on a node of one pod slot `default`
    deserves a fraction of a pod (proportion.go OnSessionOpen, line 233) and holds one:
    its allocated is not LessEqual its deserved (ReclaimableFn, line 310) and q1 reclaims
    its pod, though the card has room. The advisor had left `pods` out: no victims."""
    data = cluster(
        [
            running("run/low", request={"gpus": 1, "memory_mib": 4096}),
            {"name": "ml/p", "request": {"gpus": 1, "memory_mib": 4096}, "group": "ml/g"},
        ],
        actions=RECLAIM,
        gang={},
        nodes=_pod_limited(1),
        groups=[{"name": "ml/g", "min_member": 1, "queue": "q1"}],
        queues=[{"name": "q1", "weight": 10}],
    )
    assert verdicts(data) == {"ml/p": ("evicts", "n0", ("run/low",))}


def test_a_gang_reclaims_the_pod_slots_its_queue_deserves() -> None:
    """Seed 330, shrunk: a gang of two in q0 on a node of two pod slots, both held by pods
    of `default`; each member reclaims one of them (the pod slot is the only resource short;
    reclaim.go Execute, `ssn.Reclaimable`)."""
    data = cluster(
        [
            running("run/a", request={"gpus": 1, "memory_mib": 4096}),
            {**running("run/b", request={"gpus": 1, "memory_mib": 4096}), "cards": [1]},
            {"name": "ml/p0", "request": {"gpus": 1, "memory_mib": 4096}, "group": "ml/g"},
            {"name": "ml/p1", "request": {"gpus": 1, "memory_mib": 4096}, "group": "ml/g"},
        ],
        actions=RECLAIM,
        nodes=_pod_limited(2, cards=2),
        groups=[{"name": "ml/g", "min_member": 2, "queue": "q0"}],
        queues=[{"name": "q0", "weight": 2}],
    )
    assert verdicts(data) == {
        "ml/p0": ("evicts", "n0", ("run/b",)),
        "ml/p1": ("evicts", "n0", ("run/a",)),
    }


def test_a_node_allocate_held_unresolvable_is_never_cached_for_the_role() -> None:
    """Seed 936, shrunk: w0 (tolerates n0's taint) fits n0 in allocate, w1 (same role) fails
    there: n0's sums cover it and its taint refuses it, UnschedulableAndUnresolvable, so
    preempt drops n0 for w1 before its predicates (FilterOutUnschedulableAndUnresolvable-
    NodesForTask) and never caches it for the role; the gang ends short, and the pass within
    the job pipelines w0 on n0. Were n0 cached by w1's predicates, w0 would find it failed."""
    taint = {"key": "dedicated", "value": "a", "effect": "NoExecute"}
    whole, part = {"gpus": 1, "memory_mib": 16384}, {"gpus": 1, "memory_mib": 4096}
    data = cluster(
        [
            {**running("run/a", request=whole, preemptable=False), "node": "n1"},
            {
                "name": "ml/w0",
                "group": "ml/g",
                "role": "worker",
                "priority": 10,
                "request": part,
                "tolerations": [{**taint, "operator": "Equal"}],
            },
            {
                "name": "ml/w1",
                "group": "ml/g",
                "role": "worker",
                "request": part,
                "resources": {"cpu": "8", "memory": "1Gi"},
            },
        ],
        nodes=[
            {
                "name": "n0",
                "cards": [{"index": 0, "memory_mib": 16384}],
                "taints": [taint],
                "allocatable": {"cpu": "16", "memory": "8Gi"},
            },
            {
                "name": "n1",
                "cards": [{"index": 0, "memory_mib": 16384}],
                "allocatable": {"cpu": "4", "memory": "8Gi"},
            },
        ],
        groups=[{"name": "ml/g", "min_member": 2}],
    )
    got = diagnose_jobs(scenario_from_data(data, "<test>", "volcano-vgpu")).diagnosis.pods
    found = {v.pod.name: v.preemption for v in got if v.preemption is not None}
    assert (found["ml/w0"].node, found["ml/w1"].node) == ("n0", None)
    assert found["ml/w0"].message.startswith("preempt's pass within its job")
