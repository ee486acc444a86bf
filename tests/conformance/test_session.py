"""Volcano v1.14.1's own session beside the advisor's job cycle (conformance/session_compare.py,
docs/conformance.md). Without Go on PATH these skip, saying why."""

from __future__ import annotations

from typing import Any

import pytest

from conformance import harness, session_compare, session_queues

pytestmark = pytest.mark.realservices  # the Go harness runs as a process

skip_without_go = pytest.mark.skipif(
    harness.go_missing() is not None, reason=str(harness.go_missing())
)

# Two nodes of one card each; a gang of three one-card members (min_member 3) cannot be
# placed whole: Volcano's allocate discards it (actions/allocate/allocate.go, stmt.Discard).
# v1.15.1 (and the advisor) give its two cards back and the pod of no group gets one;
# v1.14.1 keeps them taken (vgpu/device_info.go Release is a no-op): the explained difference.
GANG: dict[str, Any] = {
    "scheduler": {"profile": "volcano-vgpu"},
    "policy": {"card": "legacy"},
    "nodes": [{"name": f"n{i}", "cards": [{"index": 0, "memory_mib": 16384}]} for i in (0, 1)],
    "groups": [{"name": "ml/g", "min_member": 3, "priority": 10}],
    "pods": [
        *({"name": f"ml/g-{k}", "group": "ml/g", "priority": 10,
           "request": {"gpus": 1, "memory_mib": 16384}} for k in range(3)),
        {"name": "ml/solo", "request": {"gpus": 1, "memory_mib": 16384}},
    ],
}  # fmt: skip


def test_generated_gangs_have_min_members_of_two_to_eight() -> None:
    mins = [
        g["min_member"]
        for i in range(100)
        for g in session_compare.generate_gangs(i).get("groups", [])
    ]
    assert mins
    assert min(mins) == 2
    assert max(mins) <= 8


@skip_without_go
@pytest.mark.timeout(900)  # a cold build compiles Volcano's scheduler and k8s v1.34
def test_a_gang_short_of_cards_is_discarded_and_v1_14_keeps_its_cards() -> None:
    ((pods, diffs, leaked, _),) = session_compare.check([GANG])
    assert pods == 4
    assert diffs == ["ml/solo: advisor n0, upstream pending"]
    assert leaked  # two members were placed, then discarded: the harness names them
    assert not session_compare.disagrees(GANG)  # so it is counted as explained
    (result,) = harness.run_scenarios("volcano", [GANG])
    assert result["leaked"] == ["ml/g-0", "ml/g-1"]
    placed = {p["pod"]: p["node"] for p in result["pods"]}
    assert [placed[f"ml/g-{k}"] for k in range(3)] == [None, None, None]
    assert [(g["name"], g["state"]) for g in result["groups"] if g["name"] == "ml/g"] == [
        ("ml/g", "rolled-back")
    ]


@skip_without_go
@pytest.mark.timeout(900)
def test_generated_gangs_agree_pod_by_pod_and_group_by_group() -> None:
    rows = session_compare.check([session_compare.generate_gangs(i) for i in range(50)])
    apart = [
        d
        for _, diffs, leaked, _ in rows
        if not leaked
        for d in diffs
        if not d.startswith(session_compare.EXPLAINED)
    ]
    assert apart == []


def test_generated_clusters_have_queues_at_the_edges() -> None:
    datas = [session_compare.generate_gangs(i) for i in range(200)]
    queued = [d for d in datas if d.get("queues")]
    assert len(queued) > 100
    assert any("enqueue" not in d["scheduler"].get("actions", ["enqueue"]) for d in queued)
    assert any(g.get("min_resources") for d in queued for g in d["groups"])
    # a capability of exactly one gang's request, in some dimension
    exact = 0
    for d in queued:
        wants = [
            session_queues.total([p for p in d["pods"] if p.get("group") == g["name"]])
            for g in d["groups"]
        ]
        for q in d["queues"]:
            for name, text in q.get("capability", {}).items():
                value = int(text.removesuffix("m"))
                exact += any(w.get(name) == value for w in wants)
    assert exact > 10


@skip_without_go
def test_enqueue_leaves_a_group_of_a_closed_queue_pending() -> None:
    """The harness records the actions that run (conf.EnabledActionMap, as scheduler.go
    runOnce does): with enqueue on, allocate leaves a group enqueue refused Pending
    (actions/allocate/allocate.go buildAllocateContext) rather than moving it Inqueue."""
    data: dict[str, Any] = {
        "scheduler": {"profile": "volcano-vgpu"},
        "policy": {"card": "legacy"},
        "nodes": [{"name": "n0", "cards": [{"index": 0, "memory_mib": 16384}]}],
        "queues": [{"name": "shut", "state": "Closed"}],
        "groups": [{"name": "ml/g", "queue": "shut", "min_resources": {"cpu": "1"}}],
        "pods": [{"name": "ml/p", "group": "ml/g", "request": {"gpus": 1, "memory_mib": 1024}}],
    }
    (result,) = harness.run_scenarios("volcano", [data])
    assert [(g["name"], g["phase"], g["state"]) for g in result["groups"]] == [
        ("ml/g", "Pending", "not-admitted")
    ]
    assert session_compare.check([data])[0][1] == []


def _two_queues(plugin: str) -> dict[str, Any]:
    """Queues `a` (deserved 1 cpu) and `b` (deserved 8) on 8 cpu: `a` holds 3 and asks 2
    more, `b` holds 1 and asks 4 more. Proportion shares the cluster 4 and 4 (spec.deserved
    unread) and refuses both; capacity orders `b` first (share 1/8 against 3/1) and bounds
    it by its realCapability (all 8): `b`'s pod takes the 4 free cpu, `a`'s finds none."""

    def pod(name: str, cpu: str, card: int | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": f"ml/{name}",
            "group": f"ml/{name.rsplit('-', 1)[0]}",
            "request": {"gpus": 1, "memory_mib": 1024},
            "resources": {"cpu": cpu, "memory": "1Gi"},
        }
        if card is not None:
            out["node"], out["cards"] = "n0", [card]
        return out

    return {
        "scheduler": {"profile": "volcano-vgpu", "queue_plugin": plugin},
        "policy": {"card": "legacy"},
        "nodes": [{
            "name": "n0", "allocatable": {"cpu": "8", "memory": "64Gi", "pods": 20},
            "cards": [{"index": i, "memory_mib": 16384} for i in range(4)],
        }],
        "queues": [
            {"name": "a", "deserved": {"cpu": "1"}}, {"name": "b", "deserved": {"cpu": "8"}},
        ],
        "groups": [
            {"name": f"ml/{g}", "queue": g[0]} for g in ("a-run", "a-new", "b-run", "b-new")
        ],
        "pods": [
            pod("a-run-0", "3", 0), pod("a-new-0", "2"), pod("b-run-0", "1", 1),
            pod("b-new-0", "4"),
        ],
    }  # fmt: skip


@skip_without_go
@pytest.mark.timeout(900)
def test_the_capacity_plugin_in_proportions_place_bounds_a_queue_by_its_capability() -> None:
    """The harness runs `capacity` where the scenario names it, with the queues' deserved
    (without them `a`, first by name, would take the free cpu): `b`'s pod, refused by
    proportion's 4-cpu share, is placed under capacity, and the advisor agrees with Volcano
    either way."""
    for plugin, placed in (("proportion", None), ("capacity", "n0")):
        data = _two_queues(plugin)
        (result,) = harness.run_scenarios("volcano", [data])
        nodes = {p["pod"]: p["node"] for p in result["pods"]}
        assert (nodes["ml/b-new-0"], nodes["ml/a-new-0"]) == (placed, None), plugin
        assert session_compare.check([data])[0][1] == [], plugin


def test_some_generated_clusters_run_capacity_with_deserved_queues() -> None:
    datas = [session_compare.generate_gangs(i) for i in range(200)]
    capacity = [d for d in datas if d["scheduler"].get("queue_plugin") == "capacity"]
    assert len(capacity) > 20
    assert any(q.get("deserved") for d in capacity for q in d["queues"])
