"""MIG pods downstream of the cycle (docs/design.md §13): plans neither move nor rescue them,
and scale-up proposes only nodes of a shape whose MIG cards offer their profile."""

from __future__ import annotations

from dataclasses import replace

from advisor.core.gang import judge
from advisor.core.model import Cluster, Placement
from advisor.core.plan.planner import plan
from advisor.core.scaling.up import scale_up_advice
from advisor.scenario import scenario_from_data

A100 = "NVIDIA A100-SXM4-40GB"


def _cluster() -> Cluster:
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


def test_scale_up_invents_no_mig_layout() -> None:
    cluster = _cluster()
    causes = {d.pod.name: d.cause for d in judge(cluster).pods}
    assert causes == {"ml/p": "capacity", "v/b": "capacity"}
    advice = scale_up_advice(cluster)
    targeted = {name for step in advice.steps for name in step.pods}
    assert "ml/p" not in targeted  # m's MIG card holds no 3g.20gb: no shape offers one
    assert [n.pod for n in advice.not_triggered] == ["ml/p"]
    assert "v/b" in targeted  # the vGPU pod still gets its node


def test_plans_leave_mig_pods_alone() -> None:
    cluster = _cluster()
    # a second vGPU card: v/a (card 1) and v/c (card 2) hold 20480 MiB each, v/b asks
    # 30720, which moving v/c beside v/a makes room for
    node = cluster.nodes[0]
    extra = replace(node.cards[1], index=2)
    pods = [
        *(p for p in cluster.pods if p.name not in ("v/a", "v/b")),
        replace(cluster.pods[2], request=replace(cluster.pods[2].request, memory_mib=20480)),
        replace(
            cluster.pods[2],
            name="v/c",
            placement=Placement("m", (2,)),
            request=replace(cluster.pods[2].request, memory_mib=20480),
        ),
        replace(cluster.pods[4], request=replace(cluster.pods[4].request, memory_mib=30720)),
    ]
    cluster = replace(cluster, nodes=(replace(node, cards=(*node.cards, extra)),), pods=tuple(pods))
    causes = {d.pod.name: d.cause for d in judge(cluster).pods}
    assert causes == {"ml/p": "capacity", "v/b": "fragmentation"}
    report = plan(cluster)
    assert report.plans
    touched = {n for p in report.plans for n in (*p.evict, *p.rescues)}
    touched |= {n for p in report.plans for n, _ in p.placements}
    assert "v/b" in touched
    assert not {"ml/2", "ml/5", "ml/p"} & touched
