"""Volcano v1.14.1's preempt and reclaim, run by the `volcano` harness after allocate,
beside the advisor's preemption verdicts (conformance/session_preempt.py,
docs/conformance.md). Without Go on PATH the harness tests skip, saying why."""

from __future__ import annotations

from typing import Any

import pytest

from conformance import harness, session_compare, session_preempt

pytestmark = pytest.mark.realservices  # the Go harness runs as a process

skip_without_go = pytest.mark.skipif(
    harness.go_missing() is not None, reason=str(harness.go_missing())
)

CARD = {"index": 0, "memory_mib": 16384}
WHOLE = {"gpus": 1, "memory_mib": 16384}

# Two nodes of one full card each; two Pending pods of priority 100: each evicts the pod of
# priority 0 on one node (gang's vote off: a pod of no group is its own job of one).
PREEMPT: dict[str, Any] = {
    "scheduler": {
        "profile": "volcano-vgpu",
        "actions": ["allocate", "preempt", "backfill"],
        "gang": {"preemptable": False},
    },
    "policy": {"card": "legacy"},
    "nodes": [{"name": f"n{i}", "cards": [CARD]} for i in (0, 1)],
    "pods": [
        {"name": "run/a", "node": "n0", "cards": [0], "request": WHOLE},
        {"name": "run/b", "node": "n1", "cards": [0], "request": WHOLE},
        {"name": "ml/p", "priority": 100, "request": WHOLE},
        {"name": "ml/q", "priority": 100, "request": WHOLE},
    ],
}

# q0 (weight 2) deserves one of the node's two cards, which q1 and q2 hold: reclaim takes
# it from q2, the queue listed last of two alike (VictimQueueOrderFn).
RECLAIM: dict[str, Any] = {
    "scheduler": {"profile": "volcano-vgpu", "actions": ["allocate", "reclaim", "backfill"]},
    "policy": {"card": "legacy"},
    "nodes": [{"name": "n0", "cards": [CARD, {**CARD, "index": 1}]}],
    "queues": [{"name": "q0", "weight": 2}, {"name": "q1"}, {"name": "q2"}],
    "groups": [
        {"name": "ml/g", "queue": "q0"},
        {"name": "run/ga", "queue": "q1"},
        {"name": "run/gb", "queue": "q2"},
    ],
    "pods": [
        {"name": "run/a", "node": "n0", "cards": [0], "group": "run/ga", "request": WHOLE},
        {"name": "run/b", "node": "n0", "cards": [1], "group": "run/gb", "request": WHOLE},
        {"name": "ml/p", "group": "ml/g", "request": WHOLE},
    ],
}


def test_generated_clusters_reach_preempt_and_reclaim() -> None:
    datas = [session_preempt.generate_preempt(i) for i in range(200)]
    actions = [d["scheduler"]["actions"] for d in datas]
    single = [d for d, a in zip(datas, actions, strict=True) if "reclaim" not in a]
    assert len(single) > 50  # one queue: `default` alone
    assert {q["name"] for d in single for q in d.get("queues", [])} <= {"default"}
    assert sum("reclaim" in a for a in actions) > 50
    queues = [q for d in datas for q in d.get("queues", [])]
    assert any(q.get("reclaimable") is False for q in queues)
    running = [p for d in datas for p in d["pods"] if "node" in p]
    assert any(p.get("preemptable") is False for p in running)
    assert any(p.get("group", "").startswith("run/rg-") for p in running)
    assert len({p.get("priority", 0) for p in running}) >= 4
    assert any(d["scheduler"].get("gang", {}).get("job_starving") is False for d in datas)


@skip_without_go
@pytest.mark.timeout(900)  # a cold build compiles Volcano's scheduler and k8s v1.34
def test_the_harness_names_each_preemptors_node_and_victims() -> None:
    (result,) = harness.run_scenarios("volcano", [PREEMPT])
    got = {p["pod"]: (p["node"], p["preempt"]) for p in result["pods"]}
    assert got["ml/p"] == (
        None,  # pipelined, not bound: the pod stays Pending this session
        {"action": "preempt", "node": "n0", "victims": [{"pod": "run/a", "node": "n0"}],
         "unneeded": False},
    )  # fmt: skip
    assert got["ml/q"][1]["victims"] == [{"pod": "run/b", "node": "n1"}]
    assert sorted(result["evicted"]) == ["run/a", "run/b"]
    assert result["preempt_queues"] == ["default"]
    assert session_preempt.check([PREEMPT]) == [session_preempt.Row(2, [], False)]


@skip_without_go
@pytest.mark.timeout(900)
def test_reclaim_takes_from_the_queue_listed_last() -> None:
    (result,) = harness.run_scenarios("volcano", [RECLAIM])
    (pod,) = result["pods"]
    assert pod["preempt"]["action"] == "reclaim"
    assert pod["preempt"]["victims"] == [{"pod": "run/b", "node": "n0"}]
    assert session_preempt.check([RECLAIM]) == [session_preempt.Row(1, [], False)]


@skip_without_go
@pytest.mark.timeout(900)
def test_generated_clusters_agree_on_preemption() -> None:
    rows = session_preempt.check([session_preempt.generate_preempt(i) for i in range(50)])
    assert sum(r.compared for r in rows) > 200
    apart = [
        d
        for r in rows
        if not r.allocate_differs
        for d in r.diffs
        if not d.startswith(session_compare.EXPLAINED)
    ]
    assert apart == []


@skip_without_go
def test_task_roles_in_preempt_agree() -> None:
    """Seeds where task roles decide preemption, each a difference the comparison found and
    the advisor now follows: gang's JobPipelined checks each role (CheckTaskPipelined,
    seed 501), and preempt's one predicate helper per action keeps a node an earlier task
    of the job's role failed as failed for the role's later tasks (preempt.go Execute,
    util/predicate_helper.go; seeds 806, 943, 1546, 1930, 1957), where a node allocate held
    unresolvable for the task is dropped first and never cached (seed 936)."""
    seeds = [501, 806, 936, 943, 1546, 1930, 1957]
    rows = session_preempt.check([session_preempt.generate_preempt(s) for s in seeds])
    apart = [d for r in rows for d in r.diffs if not d.startswith(session_compare.EXPLAINED)]
    assert apart == []


A100 = "NVIDIA A100-SXM4-80GB"
HALVES = {"instances": [{"profile": "3g.40gb", "start": 0}, {"profile": "3g.40gb", "start": 4}]}


def _holder(name: str, start: int, priority: int) -> dict[str, Any]:
    return {
        "name": name,
        "node": "m0",
        "priority": priority,
        "request": {"gpus": 1, "mig_profile": "3g.40gb"},
        "mig_instances": [{"card": 0, "start": start}],
    }


# A MIG node (mixed strategy: nvidia.com/mig-3g.40gb, 2) whose two instances pods of
# priority 0 and 10 hold; a Pending pod of priority 100 asks one: preempt evicts the lower.
MIG_PREEMPT: dict[str, Any] = {
    "scheduler": {
        "profile": "volcano-vgpu",
        "actions": ["allocate", "preempt", "backfill"],
        "gang": {"preemptable": False},
    },
    "policy": {"card": "legacy"},
    "nodes": [
        {
            "name": "m0",
            "mig_strategy": "mixed",
            "cards": [{"index": 0, "memory_mib": 81920, "model": A100, "mig": HALVES}],
        }
    ],
    "pods": [
        _holder("run/b", 4, 10),
        _holder("run/a", 0, 0),
        {"name": "ml/p", "priority": 100, "request": {"gpus": 1, "mig_profile": "3g.40gb"}},
    ],
}


@skip_without_go
@pytest.mark.timeout(900)
def test_a_mig_pod_preempts_a_lower_priority_holder_of_its_profile() -> None:
    """The harness advertises the instances as the device plugin does (nvidia.com/mig-<P>
    per healthy instance) and asks them for a MIG pod: Volcano's node sums count them as
    a scalar, and preempt evicts the lowest job priority until they cover the pod."""
    (result,) = harness.run_scenarios("volcano", [MIG_PREEMPT])
    (pod,) = result["pods"]
    assert pod["preempt"]["victims"] == [{"pod": "run/a", "node": "m0"}]
    assert session_preempt.check([MIG_PREEMPT]) == [session_preempt.Row(1, [], False)]


# Seeds of generate_preempt whose MIG clusters reach a MIG preemptor or a MIG victim (a MIG
# pod evicting a vGPU pod for cpu, a vGPU pod evicting MIG pods for its node's sums, a gang
# of MIG pods evicting both), found by `session_preempt.report` over seeds 0-1999.
MIG_SEEDS = (524, 652, 919, 1970)


def test_generated_clusters_reach_mig_preemption() -> None:
    evicts = [
        (name, v.victims)
        for seed in MIG_SEEDS
        for data in [session_preempt.generate_preempt(seed)]
        for name, v in session_preempt.advisor_side(data).items()
        if v is not None and v.verdict == "evicts"
    ]
    assert any(name.startswith("ml/mig-") for name, _ in evicts)
    assert any(not name.startswith("ml/mig-") and any("mig" in v for v in victims)
               for name, victims in evicts)  # fmt: skip


@skip_without_go
@pytest.mark.timeout(900)
def test_generated_mig_clusters_agree_on_preemption() -> None:
    rows = session_preempt.check([session_preempt.generate_preempt(s) for s in MIG_SEEDS])
    assert not any(r.allocate_differs for r in rows)
    assert [d for r in rows for d in r.diffs if not d.startswith(session_compare.EXPLAINED)] == []
