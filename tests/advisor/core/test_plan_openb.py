"""Plans on a reduced openb end state, every one re-simulated by the independent checker
(the full trace is the benchmark's: `python -m benchmarks.plan_bench`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.core.model import Cluster, Policy, PolicyName
from advisor.core.plan import PlanOptions, plan
from advisor.replay import load_trace, replay
from tests.advisor.core.test_plan_checker import check_report

STEP = 6  # every sixth node: about 200 nodes of every kind


def reduced_end_state(openb: Path, node_policy: PolicyName) -> Cluster:
    """Every STEP-th node and as many arriving pods as ask 2% more than they hold."""
    trace = load_trace(
        openb / "openb_node_list_gpu_node.csv",
        openb / "openb_pod_list_default.csv",
        Policy(node=node_policy, card="binpack"),
    )
    nodes = trace.nodes[::STEP]
    capacity = sum(len(n.cards) for n in nodes) * 128_000
    pods, asked = [], 0
    for pod in trace.pods:
        pods.append(pod)
        asked += pod.request.memory_mib
        if asked > 1.02 * capacity:
            break
    return replay(Cluster(nodes, tuple(pods), trace.policy)).end_state()


@pytest.mark.timeout(600)  # the whole openb trace: seconds alone, minutes on a busy machine
@pytest.mark.slow
@pytest.mark.parametrize("node_policy", ["binpack", "spread"])
def test_plans_on_a_reduced_openb_end_state_hold(openb_dir: Path, node_policy: PolicyName) -> None:
    cluster = reduced_end_state(openb_dir, node_policy)
    report = plan(cluster, PlanOptions(max_evaluations=3000))
    assert report.plans, "the reduced end state should leave something to rescue"
    check_report(cluster, report)  # within the default caps: 4 per plan, 3 per rescued card
    assert max(len(p.evict) for p in report.plans) <= 4
    assert report.evictions <= 3 * sum(p.rescued_cards for p in report.plans)
