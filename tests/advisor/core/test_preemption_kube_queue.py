"""kube-scheduler's preemption at each pod's turn in the queue (core.preemption.kube,
docs/conformance.md): disagreements the differential harness found against
k8s.io/kubernetes v1.35.3's DefaultPreemption (tests/conformance), shrunk and kept.

- A pod's PostFilter runs in its own scheduling cycle: pods placed after it in the queue
  are not on the nodes yet (pkg/scheduler/schedule_one.go, ScheduleOne: schedulingCycle,
  then RunPostFilterPlugins on its FitError).
- A nominated pod counts on its node for the pods after it (framework/runtime/framework.go,
  RunFilterPluginsWithNominatedPods, addGENominatedPods), whether or not its cards fit
  there: kube-scheduler knows no GPU under HAMi.
"""

from __future__ import annotations

from typing import Any

from advisor.core.gang import judge
from advisor.scenario import scenario_from_data


def verdicts(data: dict[str, Any]) -> dict[str, Any]:
    cluster = scenario_from_data({"scheduler": {"profile": "hami"}, **data}, "queue.yaml")
    return {d.pod.name: d for d in judge(cluster).pods}


def test_a_pod_placed_later_in_the_queue_is_not_there_when_an_earlier_pod_preempts() -> None:
    # job-1 (priority 100) asks every cpu of node-0: evicting run/pod-0 makes room. job-4
    # (priority 0) comes after it in the queue and is placed on node-0 by the cycle, but only
    # after job-1's PostFilter has run; judged on the cycle's final state, job-4's cpu left
    # too little and the advisor found no victims.
    cards = [{"index": i, "memory_mib": 81920, "max_vgpus": 10} for i in range(4)]
    data = {
        "nodes": [{"name": "node-0", "cards": cards, "allocatable": {"cpu": "4"}}],
        "pods": [
            {
                "name": "run/pod-0",
                "node": "node-0",
                "cards": [1, 2],
                "request": {"gpus": 2, "memory_mib": 4096},
                "resources": {"cpu": "250m"},
                "started": "2025-01-01T00:00:00Z",
            },
            {
                "name": "ml/job-1",
                "request": {"gpus": 1, "memory_mib": 16384, "core_percent": 100},
                "resources": {"cpu": "4"},
                "priority": 100,
            },
            {
                "name": "ml/job-4",
                "request": {"gpus": 2, "memory_mib": 16384},
                "resources": {"cpu": "1"},
            },
        ],
    }
    found = verdicts(data)
    assert found["ml/job-4"].placement is not None
    assert found["ml/job-4"].placement.node == "node-0"
    p = found["ml/job-1"].preemption
    assert (p.verdict, p.node, p.victims) == ("evicts", "node-0", ("run/pod-0",))
    assert p.helps is True  # the GPU had room all along: cpu alone kept it off


def test_a_nominated_pod_counts_its_cpu_even_where_its_cards_do_not_fit() -> None:
    # job-0 evicts run/pod-3 for memory but its cards still do not fit (helps False); it is
    # nominated on node-0 all the same, and its 500m count for job-1, which then finds too
    # little cpu even with run/pod-2 gone.
    cards = [{"index": i, "memory_mib": 8192, "max_vgpus": 4} for i in range(3)]
    cards.append({"index": 3, "memory_mib": 16384, "max_vgpus": 10, "healthy": False})
    data = {
        "nodes": [{"name": "node-0", "cards": cards, "allocatable": {"cpu": "8", "memory": "4Gi"}}],
        "pods": [
            {
                "name": "run/pod-2",
                "node": "node-0",
                "cards": [0, 1, 2, 3],
                "request": {"gpus": 4, "memory_mib": 16384},
                "resources": {"cpu": "4001m"},
                "started": "2025-01-01T00:00:00Z",
            },
            {
                "name": "run/pod-3",
                "node": "node-0",
                "cards": [0, 1],
                "request": {"gpus": 2, "memory_mib": 8192},
                "resources": {"memory": "3Gi"},
                "started": "2025-01-01T00:00:01Z",
            },
            {
                "name": "ml/job-0",
                "request": {"gpus": 1, "memory_mib": 16384, "core_percent": 25},
                "resources": {"cpu": "500m", "memory": "4Gi"},
                "priority": 100,
            },
            {
                "name": "ml/job-1",
                "request": {"gpus": 2, "memory_mib": 8192},
                "resources": {"cpu": "7900m"},
                "priority": 100,
            },
        ],
    }
    found = verdicts(data)
    first = found["ml/job-0"].preemption
    assert (first.verdict, first.node, first.victims, first.helps) == (
        "evicts",
        "node-0",
        ("run/pod-3",),
        False,
    )
    second = found["ml/job-1"].preemption
    assert second.verdict == "no-victims"
    assert second.message == "preemption: 0/1 nodes are available: 1 Insufficient cpu."
