"""Volcano v1.15.1's capacity plugin with ancestorReclaimLevel (`ancestor_reclaim_level`):
its table converted (volcano-sh/volcano, tag v1.15.1,
pkg/scheduler/plugins/capacity/capacity_test.go, Test_capacityPlugin_AncestorReclaimScenarios),
each case cited by its name; core.capacity_tree, docs/design.md §10.2.

Translation as test_capacity_hierarchy_upstream.py's (each pod asks a vGPU beside; upstream's
`nvidia.com/a100` is `volcano.sh/vgpu-number`, a card a device, `max_vgpus_per_card: 1`;
`rdma/hca` left out). Actions enqueue, reclaim, allocate; tiers capacity (hierarchy, the
case's level), predicates, gang.

Not converted: case2 and case3 (cross-parent reclaim among several victims ordered by the
priority plugin's job and task order, with a pod upstream runs as pipelined), case4 (its
node holds two running a100 pods on one a100: a scenario refuses an overcommitted card).
"""

from __future__ import annotations

from typing import Any

import pytest

from advisor.core.gang import diagnose_jobs
from advisor.scenario import scenario_from_data
from tests.advisor.core.test_capacity_hierarchy_upstream import (
    GPU,
    binds,
    evictions,
    group,
    node,
    pod,
    queue,
    res,
)

SOURCE = "volcano-sh/volcano v1.15.1 pkg/scheduler/plugins/capacity/capacity_test.go"
CASES = f"{SOURCE} Test_capacityPlugin_AncestorReclaimScenarios"


def judge(data: dict[str, Any], level: int) -> Any:
    scheduler: dict[str, Any] = {
        "profile": "volcano-vgpu",
        "actions": ["enqueue", "reclaim", "allocate"],
        "queue_plugin": "capacity",
        "enable_hierarchy": True,
    }
    if level:
        scheduler["ancestor_reclaim_level"] = level
    return diagnose_jobs(scenario_from_data({"scheduler": scheduler, **data}, "ancestors.yaml"))


def level_tree() -> list[dict[str, Any]]:
    """buildLevelSemanticsTree."""
    return [
        queue("root", None),
        queue("grand-a", "root", res("2", "2Gi"), res("4", "4Gi")),
        queue("parent-a", "grand-a", res("2", "2Gi"), res("2", "2Gi")),
        queue("queue-a", "parent-a", res("2", "2Gi"), res("2", "2Gi")),
        queue("grand-b", "root", res("3", "3Gi"), res("4", "4Gi")),
        queue("parent-b", "grand-b", res("1", "1Gi"), res("2", "2Gi")),
        queue("queue-b", "parent-b", res("1", "1Gi"), res("2", "2Gi")),
    ]


def one_victim(queues: list[dict[str, Any]], victim_queue: str, reclaimer_queue: str) -> Any:
    """n1 (2 cpu, 2Gi) full with p-victim (2 cpu, 2Gi); p-reclaimer asks as much."""
    return {
        "nodes": [node("n1", "2", "2Gi", pods=10)],
        "queues": queues,
        "groups": [
            group("pg-victim", victim_queue, "Running"),
            group("pg-reclaimer", reclaimer_queue, "Inqueue"),
        ],
        "pods": [
            pod("p-victim", "pg-victim", "2", "2Gi", on="n1"),
            pod("p-reclaimer", "pg-reclaimer", "2", "2Gi"),
        ],
    }


@pytest.mark.parametrize(
    ("level", "evicted"),
    [
        (0, ["ns1/p-victim"]),  # case5: level 0 allows reclaim based on leaf-level deserved checks
        (1, ["ns1/p-victim"]),  # case6: level 1 allows reclaim when parent-level check passes
        (2, []),  # case7: level 2 blocks reclaim when grandparent-level check fails
    ],
)
def test_case5_to_7_the_level_decides_which_ancestors_are_checked(
    level: int, evicted: list[str]
) -> None:
    """CASES case5..case7: queue-b (1 cpu deserved) and parent-b (1) hold 2 cpu, grand-b (3)
    does not exceed its deserved: level 0 and 1 let p-victim go, level 2 keeps it."""
    result = judge(one_victim(level_tree(), "queue-b", "queue-a"), level)
    assert binds(result) == {}
    pipelined = {"ns1/p-reclaimer": "n1"} if evicted else {}
    assert evictions(result) == (pipelined, evicted)


def test_case8_level_1_blocks_sibling_reclaim_when_leaf_deserved_is_unset() -> None:
    """CASES case8: queue-a and queue-b (no deserved) share `parent` (4 cpu): queue-a may
    reclaim on parent's deserved, but p-victim, an immediate victim under the shared parent,
    is kept while queue-a's own deserved names nothing the reclaimer asks."""
    queues = [
        queue("root", None),
        queue("parent", "root", res("4", "4Gi"), res("4", "4Gi")),
        queue("queue-a", "parent"),
        queue("queue-b", "parent"),
    ]
    result = judge(one_victim(queues, "queue-b", "queue-a"), 1)
    assert evictions(result) == ({}, [])
    assert binds(result) == {}


def test_case9_level_2_blocks_reclaim_when_leaves_deserve_nothing_and_share_grandparent() -> None:
    queues = [
        queue("root", None),
        queue("grand", "root", res("2", "2Gi"), res("2", "2Gi")),
        queue("parent-a", "grand"),
        queue("queue-a", "parent-a"),
        queue("parent-b", "grand"),
        queue("queue-b", "parent-b"),
    ]
    result = judge(one_victim(queues, "queue-b", "queue-a"), 2)
    assert evictions(result) == ({}, [])


def test_case10_level_2_blocks_reclaim_in_unbalanced_shared_grandparent_tree() -> None:
    queues = [
        queue("root", None),
        queue("grand", "root", res("1", "1Gi"), res("2", "2Gi")),
        queue("parent-deep", "grand", res("1", "1Gi"), res("2", "2Gi")),
        queue("queue-deep", "parent-deep"),
        queue("queue-shallow", "grand"),
    ]
    result = judge(one_victim(queues, "queue-deep", "queue-shallow"), 2)
    assert evictions(result) == ({}, [])


def _a100_case(level: int) -> Any:
    """CASES case11's tree: p-victim (2 a100) of queue-deep under deep-parent (1) under
    deep-grand (2); p-reclaimer (1 a100) of queue-shallow (1) under shallow-parent (1)."""
    a100 = {GPU: "1"}
    data = {
        "max_vgpus_per_card": 1,
        "nodes": [node("n1", "4", "4Gi", pods=10, cards=2)],
        "queues": [
            queue("root", None),
            queue("shallow-parent", "root", res(None, None, **a100)),
            queue("queue-shallow", "shallow-parent", res(None, None, **a100)),
            queue("deep-grand", "root", res(None, None, **{GPU: "2"})),
            queue("deep-parent", "deep-grand", res(None, None, **a100)),
            queue("queue-deep", "deep-parent", res(None, None, **a100)),
        ],
        "groups": [
            group("pg-victim", "queue-deep", "Running"),
            group("pg-reclaimer", "queue-shallow", "Inqueue"),
        ],
        "pods": [
            pod("p-victim", "pg-victim", "1", "1Gi", gpus=2, mib=32768, on="n1"),
            pod("p-reclaimer", "pg-reclaimer", "1", "1Gi", mib=16384),
        ],
    }
    return judge(data, level)


def test_case11_unbalanced_level2_blocks_reclaim_when_depth2_ancestor_is_not_over_deserved() -> (
    None
):
    """CASES case11: queue-deep and deep-parent hold 2 a100 of 1 deserved, deep-grand 2 of
    2: level 2 checks deep-grand (the reclaimer's depth 2 is the root) and keeps p-victim.
    Level 1 (a hand case beside it) checks deep-parent alone and lets it go."""
    assert evictions(_a100_case(2)) == ({}, [])
    assert evictions(_a100_case(1)) == ({"ns1/p-reclaimer": "n1"}, ["ns1/p-victim"])


def test_case1_can_reclaim_based_on_parent_deserved_when_ancestor_reclaim_level_is_1() -> None:
    """CASES case1: case1_queue11 deserves nothing, its parent case1_queue1 one a100 and
    holds none: at level 1 the parent lets p2 reclaim; p1 (4 a100) of case1_queue2 (no
    deserved: an immediate victim, no ancestor but the root) is evicted. At level 0 the
    leaf alone decides, and p2 may not reclaim."""
    data = {
        "max_vgpus_per_card": 1,
        "nodes": [node("n1", "16", "16Gi", cards=4)],
        "queues": [
            queue("root", None, res("16", "16Gi", **{GPU: "4"})),
            queue("case1_queue1", "root", res(None, None, **{GPU: "1"})),
            queue("case1_queue11", "case1_queue1"),
            queue("case1_queue2", "root"),
        ],
        "groups": [
            group("pg1", "case1_queue2", "Running"),
            group("pg2", "case1_queue11", "Inqueue"),
        ],
        "pods": [
            pod("p1", "pg1", "1", "1Gi", gpus=4, mib=65536, on="n1"),
            pod("p2", "pg2", "1", "1Gi", mib=16384),
        ],
    }
    assert evictions(judge(data, 1)) == ({"ns1/p2": "n1"}, ["ns1/p1"])
    assert evictions(judge(data, 0)) == ({}, [])


def test_an_ancestor_the_reclaimer_shares_at_that_depth_is_not_checked() -> None:
    """Hand case (getReclaimeeAncestorToCheck: the reclaimer's ancestor at the same depth is
    the victim's): a and b share P, which holds less than it deserves; b holds more than its
    own deserved, so at level 1 its pod still goes to a's."""
    queues = [
        queue("root", None),
        queue("P", "root", res("4", "4Gi")),
        queue("a", "P", res("2", "2Gi")),
        queue("b", "P", res("1", "1Gi")),
    ]
    result = judge(one_victim(queues, "b", "a"), 1)
    assert evictions(result) == ({"ns1/p-reclaimer": "n1"}, ["ns1/p-victim"])
