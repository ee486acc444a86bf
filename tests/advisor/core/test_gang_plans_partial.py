"""Plans evict a running gang's surplus member by member (docs/design.md §10.4): a gang
with more members running than min_member may lose the ones above it, one plan's evictions
of the gang counted together; more than that, and the plan evicts the gang whole (every
member counted, the restart charged once). No plan leaves a gang between 1 and
min_member - 1 running.

Upstream: Volcano v1.15.1, pkg/scheduler/plugins/gang/gang.go lines 97-125, `preemptableFn`
(the session's PreemptableFn and ReclaimableFn): per job it starts from `job.ReadyTaskNum()`
(api/job_info.go lines 889-898: Bound, Binding, Running, Allocated and Succeeded tasks) and
takes a preemptee as a victim only while that count is above `job.MinAvailable`,
decrementing it per victim, so one preemptor's victims of a job are counted together and
the job keeps min_member ready. A plan's evictions are the advisor's, not the preempt
action's, but the rule they keep is that one.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from advisor.core.diagnose import diagnose
from advisor.core.jobs import Group, Jobs
from advisor.core.model import CCE, Cluster
from advisor.core.plan import PlanOptions, plan
from advisor.core.plan.board import Board
from advisor.core.plan.limits import EvictionBudget
from tests.advisor.core.test_gang_plans import (
    GANG,
    cluster,
    cycle_after,
    node,
    pending,
    running,
)
from tests.advisor.core.test_plan_properties import fragmented
from tests.fastloop import examples

BIG = pending("web/big", 16384)
# room for a whole gang of four in one plan (the default 3/card would hold it back)
ROOMY = EvictionBudget(8, "advice")


def member(i: int, where: str, mib: int, started: str = "2024-05-01T00:00:00Z") -> dict[str, Any]:
    return running(f"g/r-{i}", where, 0, mib, group=GANG, owner="Job/g/job", started=started)


def pinned(name: str, where: str, mib: int) -> dict[str, Any]:
    return running(name, where, 0, mib, annotations={"xgpu.io/do-not-disrupt": "true"})


# a holds one member of 8 GiB, b one, c two: moving a's member next to b's frees a's card.
ONE_OFF = [member(0, "a", 8192), member(1, "b", 8192), member(2, "c", 8192), member(3, "c", 8192)]
THREE = [node("a"), node("b"), node("c")]


def test_one_surplus_member_moves_alone() -> None:
    """Four running, min_member 2: the plan evicts the one member on a, not the gang."""
    gang = cluster(THREE, [*ONE_OFF, BIG], min_member=2)
    report = plan(gang)
    assert [(p.rescues, p.evict) for p in report.plans] == [(("web/big",), ("g/r-0",))]
    assert report.evictions == 1
    after = cycle_after(gang, report)
    assert after["web/big"].node == "a"
    assert after["g/r-0"].node == "b"


def test_a_gang_at_min_member_still_goes_whole() -> None:
    """The same cluster, min_member 4: no member is surplus; the plan evicts all four (all
    counted), and under a cap of one eviction there is none, the plan held back needing 4."""
    gang = cluster(THREE, [*ONE_OFF, BIG], min_member=4)
    report = plan(gang, PlanOptions(max_evictions=ROOMY))
    assert [sorted(p.evict) for p in report.plans] == [[f"g/r-{i}" for i in range(4)]]
    assert report.evictions == 4
    cycle_after(gang, report)
    capped = plan(gang, PlanOptions(max_plan_evictions=1, max_evictions=ROOMY))
    assert not capped.plans
    assert [h.needs for h in capped.held_back] == ["4"]


# a holds two younger members of 8 GiB, b and c one older member each: a's card is free
# once both of its members move, one beside each of the others.
YOUNG = "2024-05-01T10:00:00Z"
TWO_OFF = [
    member(0, "a", 8192, YOUNG),
    member(1, "a", 8192, YOUNG),
    member(2, "b", 8192),
    member(3, "c", 8192),
]


def test_two_surplus_members_move_together_and_cost_less_than_the_gang() -> None:
    """Four running, min_member 2: both members on a go (the two surplus, counted together),
    the gang keeps two running; the plan costs what the younger members lost, less than the
    whole gang's restart (the dearest member's), which the gang at min_member 4 pays."""
    gang = cluster(THREE, [*TWO_OFF, BIG], min_member=2)
    report = plan(gang)
    assert len(report.plans) == 1
    only = report.plans[0]
    assert only.rescues == ("web/big",)
    assert sorted(only.evict) == ["g/r-0", "g/r-1"]
    assert report.evictions == 2
    after = cycle_after(gang, report)
    assert {after["g/r-0"].node, after["g/r-1"].node} == {"b", "c"}
    whole = plan(cluster(THREE, [*TWO_OFF, BIG], min_member=4), PlanOptions(max_evictions=ROOMY))
    assert [len(p.evict) for p in whole.plans] == [4]
    assert only.cost < whole.plans[0].cost


# a holds three members (4 + 4 + 8 GiB), b the fourth beside a pinned pod, c and d 8 GiB
# free each: a's three fit on c and d, but three of a gang of four with min_member 2 is
# more than its surplus, so the plan evicts the fourth too (there is room for it).
THREE_ON_A = [
    member(0, "a", 4096),
    member(1, "a", 4096),
    member(2, "a", 8192),
    member(3, "b", 8192),
    pinned("x/b", "b", 8192),
    pinned("x/c", "c", 8192),
    pinned("x/d", "d", 8192),
]
FOUR = [node("a"), node("b"), node("c"), node("d")]


def test_three_of_a_four_with_min_two_is_never_proposed() -> None:
    gang = cluster(FOUR, [*THREE_ON_A, BIG], min_member=2)
    report = plan(gang, PlanOptions(max_evictions=ROOMY))
    assert [sorted(p.evict) for p in report.plans] == [[f"g/r-{i}" for i in range(4)]]
    cycle_after(gang, report)
    capped = plan(gang, PlanOptions(max_plan_evictions=3, max_evictions=ROOMY))
    assert not capped.plans
    assert [(sorted(h.evict), h.needs) for h in capped.held_back] == [
        ([f"g/r-{i}" for i in range(4)], "4")
    ]


def test_the_board_closes_an_eviction_set_over_the_surplus() -> None:
    """`whole_gangs` and `splits_gang` on the four-member gang, min_member 2."""
    gang = cluster(THREE, [*ONE_OFF, BIG], min_member=2)
    first = diagnose(gang, node_detail_limit=0)
    board = Board(gang, {d.pod.name: d.placement for d in first.pods if d.placement})
    r = [board.ids[f"g/r-{i}"] for i in range(4)]
    assert board.gang_surplus(GANG) == 2
    assert board.whole_gangs(r[:2]) == r[:2]
    assert sorted(board.whole_gangs(r[:3])) == sorted(r)
    assert [board.splits_gang(r[:n]) for n in range(5)] == [False, False, False, True, False]


# -- property ----------------------------------------------------------------------------


@st.composite
def ganged_fragments(draw: st.DrawFn) -> Cluster:
    """A fragmented cluster (`fragmented`) under CCE (Volcano's session) whose running `ml`
    pods fall into one or two PodGroups of min_member 2 or 3, or none (a gang with a
    Pending member is never evicted: §10.4)."""
    base: Cluster = draw(fragmented())
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    groups = [Group(f"ml/g{i}", rng.randint(2, 3)) for i in range(rng.randint(1, 2))]
    names = [None, *(g.name for g in groups)]
    pods = tuple(
        dataclasses.replace(p, group=rng.choice(names))
        if p.namespace == "ml" and p.placement is not None
        else p
        for p in base.pods
    )
    return dataclasses.replace(base, pods=pods, jobs=Jobs(groups=tuple(groups)), scheduler=CCE)


@settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
@given(ganged_fragments())
def test_no_plan_leaves_a_gang_between_none_and_min_member(gang: Cluster) -> None:
    """Each plan in turn, on the members running before it (those running in the input and
    those earlier plans rescued; evicted ones land again): a gang a plan evicts members of
    keeps min_member running or loses every member."""
    report = plan(gang, PlanOptions(max_evaluations=400))
    evicted = {False: 0, True: 0}  # plans evicting a gang whole, and its surplus
    mins = {g.name: g.min_member for g in gang.jobs.groups}
    up = {p.name for p in gang.pods if p.placement is not None}
    for p in report.plans:
        gone = set(p.evict)
        for group, least in mins.items():
            members = {q.name for q in gang.pods if q.group == group} & up
            if members & gone:
                left = len(members - gone)
                assert left == 0 or left >= least, (group, sorted(members), p.evict)
                evicted[len(members & gone) < len(members)] += 1
        up |= set(p.rescues)
    event(f"gangs evicted whole: {min(evicted[False], 2)}, in part: {min(evicted[True], 2)}")
