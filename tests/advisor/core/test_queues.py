"""Hand cases for Volcano's queues in the cycle (advisor.core.queues, advisor.core.session)
and HAMi's quotas (advisor.core.quota): what the upstream tables leave out."""

from __future__ import annotations

from typing import Any

from advisor.core.gang import diagnose_jobs, judge
from advisor.core.jobs import Queue, frozen_resources
from advisor.core.queues import Pool, QueueAttr, deserve, real_capability
from advisor.core.resource_info import is_empty, less_equal, resource_list, short_of
from advisor.scenario import scenario_from_data


def node(name: str, cpu: str = "8", cards: int = 2, memory_mib: int = 16384) -> dict[str, Any]:
    return {
        "name": name,
        "allocatable": {"cpu": cpu, "memory": "64Gi", "pods": 20},
        "cards": [{"index": i, "memory_mib": memory_mib} for i in range(cards)],
    }


def pod(name: str, group: str | None = None, cpu: str = "1", **request: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "request": {"gpus": 1, "memory_mib": 1024, **request},
        "resources": {"cpu": cpu, "memory": "1Gi"},
    }
    if group is not None:
        out["group"] = group
    on = out["request"].pop("on", None)
    if on is not None:
        out["node"], out["cards"] = on, list(range(out["request"]["gpus"]))
    return out


def run(profile: str, **data: Any) -> Any:
    return diagnose_jobs(scenario_from_data({"scheduler": {"profile": profile}, **data}, "q.yaml"))


def causes(result: Any) -> dict[str, str]:
    return {d.pod.name: d.cause for d in result.diagnosis.pods}


# -- Volcano's queues ---------------------------------------------------------------------------


def test_a_closed_queue_takes_no_task_even_without_enqueue() -> None:
    """cce runs no enqueue: a group in a Closed queue reaches allocate, whose
    queueAllocatable refuses every task of a queue not Open."""
    result = run(
        "cce",
        nodes=[node("n1")],
        queues=[{"name": "frozen", "state": "Closed"}],
        groups=[{"name": "ml/a", "queue": "frozen"}],
        pods=[pod("ml/a-0", "ml/a")],
    )
    (verdict,) = result.diagnosis.pods
    assert verdict.cause == "queue"
    assert verdict.message == "Queue frozen is Closed, not Open: it takes no task"
    assert result.diagnosis.summary["queue"] == 1


def test_gang_and_queue_a_member_refused_by_its_queue_rolls_the_gang_back() -> None:
    """Queue q deserves 1 card's worth of memory (capability 2048 MiB of vgpu-memory): the
    first member places, the second is refused by the queue, the gang is rolled back."""
    result = run(
        "volcano-vgpu",
        nodes=[node("n1")],
        queues=[{"name": "q", "capability": {"volcano.sh/vgpu-memory": "1024"}}],
        groups=[{"name": "ml/g", "queue": "q", "min_member": 2}],
        pods=[pod("ml/g-0", "ml/g"), pod("ml/g-1", "ml/g")],
    )
    assert causes(result) == {"ml/g-0": "gang", "ml/g-1": "queue"}
    assert result.groups[0].state == "rolled-back"
    refused = result.diagnosis.pods[1].message
    assert "insufficient volcano.sh/vgpu-memory" in refused
    assert "1024 allocated + 1024 > 1024 deserved" in refused


def test_a_rolled_back_gang_frees_its_queue_for_the_next_job() -> None:
    """Gang ml/g (first in order) places one member, its second cannot fit any card, so the
    job is discarded and its queue's allocation given back (Deallocate): the next job in the
    same queue, asking the queue's whole capability, then fits."""
    result = run(
        "volcano-vgpu",
        nodes=[node("n1")],
        queues=[{"name": "q", "capability": {"cpu": "2"}}],
        groups=[
            {"name": "ml/g", "queue": "q", "min_member": 2},
            {"name": "ml/b", "queue": "q"},
        ],
        pods=[
            pod("ml/g-0", "ml/g"),
            pod("ml/g-1", "ml/g", memory_mib=65536),
            pod("ml/b-0", "ml/b", cpu="2"),
        ],
    )
    assert causes(result) == {"ml/g-0": "gang", "ml/g-1": "unsatisfiable", "ml/b-0": "schedulable"}


def test_queue_weights_share_the_cluster_and_the_lower_share_goes_first() -> None:
    """Two queues, weights 3 and 1, both asking more than the cluster: deserved splits 3:1."""
    total = {"cpu": 8000.0, "memory": 0.0}
    a = QueueAttr(Queue("a", weight=3), 0, request={"cpu": 100000.0})
    b = QueueAttr(Queue("b", weight=1), 1, request={"cpu": 100000.0})
    a.real_capability = b.real_capability = dict(total)
    deserve({"a": a, "b": b}, total)
    assert (a.deserved["cpu"], b.deserved["cpu"]) == (6000.0, 2000.0)
    pool = Pool(total)
    a.pool = b.pool = pool
    a.allocate({"cpu": 3000.0})  # share 0.5
    b.allocate({"cpu": 2000.0})  # share 1.0: overused, and 3000 cpu of the cluster are free
    assert a.key() < b.key()
    assert b.overused() is True
    a.allocate({"cpu": 3000.0})  # the cluster is full: b's deserved no longer decides
    assert b.overused() is False


def test_a_cluster_full_for_its_one_queue_is_capacity_not_queue() -> None:
    """With one queue, a shortage only the cluster's size explains is left to the node
    cycle: the pod is Pending for capacity, as without queues."""
    result = run(
        "volcano-vgpu",
        nodes=[node("n1", cards=1)],
        pods=[pod("ml/a", memory_mib=16384, on="n1"), pod("ml/b", memory_mib=16384)],
    )
    assert causes(result) == {"ml/b": "capacity"}
    assert "queue" not in result.diagnosis.summary


# -- HAMi's namespace quotas (pkg/device/quota.go FitQuota) --------------------------------------


def _quota_cluster(asked_mib: int) -> Any:
    return scenario_from_data(
        {
            "scheduler": {"profile": "hami"},
            "nodes": [node("n1", cards=4)],
            "quotas": [{"namespace": "ml", "hard": {"limits.nvidia.com/gpumem": "10240"}}],
            "pods": [
                pod("ml/running", gpus=2, memory_mib=4096, on="n1"),  # 2 × 2048 MiB in use
                pod("ml/new", gpus=2, memory_mib=asked_mib),
                pod("other/free", gpus=1, memory_mib=8192),
            ],
        },
        "quota.yaml",
    )


def test_quota_at_the_boundary_exactly_equal_fits() -> None:
    """4096 MiB in use + 6144 asked (2 × 3072) = 10240 = the limit: it fits."""
    verdicts = {d.pod.name: d.cause for d in judge(_quota_cluster(6144)).pods}
    assert verdicts == {"ml/new": "schedulable", "other/free": "schedulable"}


def test_quota_one_more_mib_per_card_does_not_fit() -> None:
    cluster = _quota_cluster(6146)  # 2 × 3073: 2 MiB over; per card the smallest step
    diagnosis = judge(cluster)
    new = next(d for d in diagnosis.pods if d.pod.name == "ml/new")
    assert new.cause == "quota"
    assert new.message == (
        "ResourceQuotaNotFit: namespace ml's ResourceQuota limits.nvidia.com/gpumem is 10240: "
        "4096 in use + 6146 asked > 10240"
    )
    assert diagnosis.summary["quota"] == 1
    # another namespace has no quota
    assert next(d for d in diagnosis.pods if d.pod.name == "other/free").cause == "schedulable"


def test_quota_counts_pods_placed_earlier_in_the_cycle() -> None:
    cluster = scenario_from_data(
        {
            "scheduler": {"profile": "hami"},
            "nodes": [node("n1", cards=4)],
            "quotas": [{"namespace": "ml", "hard": {"limits.nvidia.com/gpucores": "100"}}],
            "pods": [
                pod("ml/a", core_percent=60),
                pod("ml/b", core_percent=60),
            ],
        },
        "quota.yaml",
    )
    assert [d.cause for d in judge(cluster).pods] == ["schedulable", "quota"]


def test_quotas_are_hamis_alone() -> None:
    """A Volcano profile's session does not read HAMi's quota keys."""
    data = {
        "scheduler": {"profile": "volcano-vgpu"},
        "nodes": [node("n1")],
        "quotas": [{"namespace": "ml", "hard": {"limits.nvidia.com/gpumem": "0"}}],
        "pods": [pod("ml/a")],
    }
    assert [d.cause for d in judge(scenario_from_data(data, "q.yaml")).pods] == ["schedulable"]


def test_a_guarantee_is_kept_out_of_the_other_queues_real_capability() -> None:
    """realCapability = total − Σguarantee + own guarantee: q2's guarantee of 6 cpu leaves
    q1 at most 2 of the 8, whatever the weights; q2 deserves its guarantee."""
    total = {"cpu": 8000.0, "memory": 0.0}
    q1, q2 = Queue("q1"), Queue("q2", guarantee=frozen_resources({"cpu": "6"}))
    guarantees = {"cpu": 6000.0}
    a = QueueAttr(q1, 0, request={"cpu": 8000.0})
    b = QueueAttr(q2, 1, request={"cpu": 8000.0}, guarantee={"cpu": 6000.0})
    a.real_capability = real_capability(q1, total, guarantees)
    b.real_capability = real_capability(q2, total, guarantees)
    assert (a.real_capability["cpu"], b.real_capability["cpu"]) == (2000.0, 8000.0)
    deserve({"q1": a, "q2": b}, total)
    assert (a.deserved["cpu"], b.deserved["cpu"]) == (2000.0, 6000.0)


def test_pods_count_in_the_sums_but_not_in_the_dimension_comparisons() -> None:
    """volcano v1.15.1 pkg/scheduler/api/resource_info.go: NewResource reads `pods` by
    Value (line 95) into the scalars, so LessEqual and ResourceNames count it; IsEmpty and
    LessEqualWithDimensionAndResourcesName skip `ignoredScalarResources` (line 232)."""
    assert resource_list({"pods": "3", "cpu": "1"}) == {"pods": 3.0, "cpu": 1000.0}
    assert not less_equal({"pods": 2.0}, {"pods": 1.0})
    assert short_of({"pods": 2.0, "cpu": 1.0}, {"pods": 1.0, "cpu": 1.0}, {"pods": 1.0}) == []
    assert is_empty({"pods": 5.0, "cpu": 0.0})


def test_quota_neither_counts_nor_refuses_a_mig_pod() -> None:
    """A pod asking nvidia.com/mig-<P> holds the NVIDIA device plugin's instances, no HAMi
    device: FitQuota never sees it, and what it holds counts in no HAMi quota."""
    a100 = {"index": 0, "memory_mib": 40960, "model": "NVIDIA A100-SXM4-40GB"}
    mig_card = {**a100, "mig": {"instances": [{"profile": "3g.20gb", "start": 0}]}}
    mig = pod("ml/mig")
    mig["request"] = {"gpus": 1, "mig_profile": "3g.20gb"}
    cluster = scenario_from_data(
        {
            "scheduler": {"profile": "hami"},
            "nodes": [
                node("n1", cards=1),
                {**node("m"), "mig_strategy": "mixed", "cards": [mig_card]},
            ],
            "quotas": [{"namespace": "ml", "hard": {"limits.nvidia.com/gpumem": "4096"}}],
            "pods": [mig, pod("ml/vgpu", memory_mib=4096)],
        },
        "quota.yaml",
    )
    verdicts = {d.pod.name: d.cause for d in judge(cluster).pods}
    assert verdicts == {"ml/mig": "schedulable", "ml/vgpu": "schedulable"}
