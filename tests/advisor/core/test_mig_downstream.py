"""MIG pods downstream of the cycle (docs/design.md §13): plans neither move nor rescue them
and no node template is sized for them, so neither proposes what the cycle did not judge."""

from __future__ import annotations

from typing import Any

from advisor.core.gang import judge
from advisor.core.plan.planner import plan
from advisor.core.scaling.up import scale_up_advice
from advisor.scenario import scenario_from_data

A100 = "NVIDIA A100-SXM4-40GB"


def _cluster() -> Any:
    seven = [{"profile": "1g.5gb", "start": s} for s in range(7)]
    data = {
        "nodes": [
            {
                "name": "m",
                "mig_strategy": "mixed",
                "cards": [
                    {"index": 0, "memory_mib": 40960, "model": A100, "mig": {"instances": seven}},
                    {"index": 1, "memory_mib": 40960, "model": A100},
                ],
            }
        ],
        "pods": [
            *(
                {
                    "name": f"ml/{s}",
                    "node": "m",
                    "request": {"gpus": 1, "mig_profile": "1g.5gb"},
                    "mig_instances": [{"card": 0, "start": s}],
                }
                for s in (2, 5)
            ),
            {"name": "v/a", "node": "m", "cards": [1], "request": {"gpus": 1, "memory_mib": 30720}},
            {"name": "ml/p", "request": {"gpus": 1, "mig_profile": "3g.20gb"}},
            {"name": "v/b", "request": {"gpus": 1, "memory_mib": 20480}},
        ],
    }
    return scenario_from_data(data, "t.yaml")


def test_plans_and_scale_up_leave_mig_pods_alone() -> None:
    cluster = _cluster()
    causes = {d.pod.name: d.cause for d in judge(cluster).pods}
    assert causes == {"ml/p": "capacity", "v/b": "capacity"}
    report = plan(cluster)
    moved = {name for p in report.plans for name in (*p.evict, *p.rescued)}
    assert not {"ml/2", "ml/5", "ml/p"} & moved
    advice = scale_up_advice(cluster)
    targeted = {name for step in advice.steps for name in step.pods}
    assert "ml/p" not in targeted
    assert "v/b" in targeted  # the vGPU pod still gets its node
