"""Plans and scale-down keep gangs whole (docs/design.md §10.4): under Volcano's session a
plan evicts a running gang (a PodGroup with min_member above 1) only whole and never rescues
one Pending member alone, and no node removal moves one. Each case is checked against the
same cluster with min_member 1, where the move is made: the protection, not the cluster,
decides. tests/advisor/core/test_gang_plans.py has the plans that move and rescue gangs."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.core.gang import judge
from advisor.core.model import gang_members
from advisor.core.plan import plan
from advisor.core.scaling.down import GPU_POD_NOT_MOVABLE, scale_down_advice
from advisor.core.scaling.up import scale_up_advice, with_new_nodes
from advisor.core.whatif import profile_outcome, what_if
from advisor.scenario import scenario_from_data

ONE_CARD = [{"index": 0, "memory_mib": 16384}]


def cluster(pods: list[dict[str, Any]], min_member: int, profile: str = "cce") -> Any:
    data = {
        "scheduler": {"profile": profile},
        "nodes": [{"name": n, "cards": ONE_CARD} for n in ("a", "b", "c")],
        "pods": pods,
        "groups": [{"name": "g/job", "min_member": min_member}],
    }
    return scenario_from_data(data, "gang.yaml")


def running(name: str, node: str, mib: int, group: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": name,
        "node": node,
        "cards": [0],
        "request": {"gpus": 1, "memory_mib": mib},
    }
    if group:
        out["group"] = group
    return out


def pending(name: str, mib: int, group: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "request": {"gpus": 1, "memory_mib": mib}}
    if group:
        out["group"] = group
    return out


# Half a card used on a and on b by two members of g/job, c full: a 16 GiB pod fits only
# if one member moves next to the other.
SPLIT = [
    running("g/w-0", "a", 8192, "g/job"),
    running("g/w-1", "b", 8192, "g/job"),
    running("x/full", "c", 16384),
    pending("web/big", 16384),
]


@pytest.mark.parametrize(("min_member", "members"), [(1, 1), (2, 2)])
def test_a_plan_evicts_a_running_gang_only_whole(min_member: int, members: int) -> None:
    """min_member 1: one member moves next to the other; a gang goes whole."""
    report = plan(cluster(SPLIT, min_member))
    evicted = [name for p in report.plans for name in p.evict]
    assert len(evicted) == members
    assert set(evicted) <= {"g/w-0", "g/w-1"}
    assert [p.rescues for p in report.plans] == [("web/big",)]


# a and b each half used by other pods, c full: either Pending member fits after one move.
MEMBERS = [
    running("x/s-0", "a", 8192),
    running("x/s-1", "b", 8192),
    running("x/full", "c", 16384),
    pending("g/m-0", 16384, "g/job"),
    pending("g/m-1", 16384, "g/job"),
]


@pytest.mark.parametrize(("min_member", "rescues"), [(1, True), (2, False)])
def test_no_plan_rescues_one_gang_member_alone(min_member: int, rescues: bool) -> None:
    report = plan(cluster(MEMBERS, min_member))
    rescued = {name for p in report.plans for name in p.rescues}
    assert bool(rescued) is rescues


@pytest.mark.parametrize("min_member", [1, 2])
def test_scale_down_never_moves_a_gang_member(min_member: int) -> None:
    pods = [running("g/w-0", "a", 1024, "g/job"), running("g/w-1", "b", 1024, "g/job")]
    advice = scale_down_advice(cluster(pods, min_member), threshold=0.3)
    removed = [s.node for s in advice.steps]
    if min_member == 1:
        assert removed  # an emptier node goes, its member moving onto another
        return
    assert removed == ["c"]  # the empty node alone
    held = {h.node: (h.reason, h.detail) for h in advice.held}
    assert held["a"] == (
        GPU_POD_NOT_MOVABLE,
        "g/w-0: a member of gang g/job (min_member 2): moved alone it could split the gang",
    )


def test_only_volcano_sessions_have_gangs() -> None:
    """kube-scheduler (hami) knows no PodGroup: nothing is held for it."""
    assert gang_members(cluster(SPLIT, 2), volcano=True).keys() == {"g/w-0", "g/w-1"}
    assert plan(cluster(SPLIT, 2, profile="hami")).plans


# Every card full; two members need a node each; the third selects a pool no node has, so
# no template admits it.
FULL = [running(f"x/full-{n}", n, 16384) for n in ("a", "b", "c")]
NO_POOL = {**pending("g/m-2", 16384, "g/job"), "node_selector": {"pool": "none"}}


@pytest.mark.parametrize("min_member", [2, 3])
def test_scale_up_adds_nothing_for_a_gang_no_node_can_start(min_member: int) -> None:
    pods = [*FULL, pending("g/m-0", 16384, "g/job"), pending("g/m-1", 16384, "g/job"), NO_POOL]
    advice = scale_up_advice(cluster(pods, min_member))
    sized = {name for step in advice for name in step.pods}
    reasons = {t.pod: t.reason for t in advice.not_triggered}
    assert "g/m-2" in reasons  # no template admits it, either way
    if min_member == 2:  # two members are enough: nodes for them
        assert sized == {"g/m-0", "g/m-1"}
        assert all(step.verified for step in advice)
        return
    assert not sized
    assert reasons["g/m-0"] == (
        "its gang g/job cannot start: 2 of min_member 3 pods could run with nodes added "
        "(no node helps g/m-2)"
    )


def test_scale_up_sizes_nodes_for_the_whole_gang() -> None:
    """With the nodes scale-up adds, the gang cycle lands every member."""
    pods = [*FULL, *(pending(f"g/m-{i}", 16384, "g/job") for i in range(3))]
    grown_cluster = cluster(pods, 3)
    advice = scale_up_advice(grown_cluster)
    assert [step.nodes for step in advice] == [3]
    assert advice[0].verified
    verdicts = judge(with_new_nodes(grown_cluster, advice.steps)).pods
    assert all(d.placement is not None for d in verdicts if d.pod.group == "g/job")


# a free, b and c full: one member fits, the other does not.
ONE_FREE = [
    running("x/full-b", "b", 16384),
    running("x/full-c", "c", 16384),
    pending("g/m-0", 16384, "g/job"),
    pending("g/m-1", 16384, "g/job"),
]


@pytest.mark.parametrize(("min_member", "placed"), [(1, 1), (2, 0)])
def test_what_if_places_what_the_gang_cycle_places(min_member: int, placed: int) -> None:
    """The what-if never places a member its diagnosis keeps Pending (one decision)."""
    gangs = cluster(ONE_FREE, min_member)
    schedulable = judge(gangs).count("schedulable")
    assert schedulable == placed
    assert {o.pending_placed for o in what_if(gangs).outcomes} == {placed}
    outcome = profile_outcome(gangs)
    assert outcome.placed == placed == outcome.pending_by_cause["schedulable"]
