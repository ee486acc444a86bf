"""Right-sizing's "what if the recommendations were applied" shrinks GPU requests only: a
running pod keeps its cpu, memory and node constraints, so the node filters still see them."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from advisor.core.model import Cluster
from advisor.rightsizing import pending_fit, shrunk_cluster
from tests.advisor.core.constrained import CORE, gpu_node, gpu_pod, selecting

WORKLOADS: list[dict[str, Any]] = [
    {
        "workload": "Deployment/ml/r",
        "memory_mib": {"recommended": 4096},
        "core_percent": {"recommended": None},
    }
]


def test_shrinking_keeps_cpu_and_constraints() -> None:
    # a: two 16 GiB cards and 4 cores; r (16 GiB, 3 cores) runs on card 0. p (16 GiB,
    # 2 cores) finds card 1 free but 3 + 2 > 4 cores. Shrinking r to 4 GiB frees card
    # memory, not cpu: p stays Pending.
    running = replace(
        gpu_pod("ml/r", 16, "a", cpu_milli=3 * CORE, constraints=selecting(pool="x")),
        owner="Deployment/ml/r",
    )
    cluster = Cluster(
        (gpu_node("a", 16, 16, cpu=4, labels={"pool": "x"}),),
        (running, gpu_pod("ml/p", 16, cpu_milli=2 * CORE)),
    )
    shrunk = shrunk_cluster(cluster, WORKLOADS)
    (after, _) = shrunk.pods
    assert after.request.memory_mib == 4096
    assert (after.resources, after.constraints) == (running.resources, running.constraints)
    fit = pending_fit(cluster, WORKLOADS)
    assert (fit["schedulable_now"], fit["schedulable_after"]) == (0, 0)
