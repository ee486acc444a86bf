"""Invariants of the gang cycle (advisor.core.gang) on random clusters: without groups it is
§3's one-pod cycle; with them every group is all-or-nothing and the cards are never
over-allotted (hypothesis)."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.core.diagnose import diagnose
from advisor.core.gang import diagnose_jobs
from advisor.core.jobs import Group, Jobs
from advisor.core.model import CCE, Cluster, Scheduler
from tests.advisor.core.test_gang import without_preemption
from tests.advisor.core.test_properties import card_load, clusters
from tests.fastloop import examples


@settings(max_examples=examples(150), deadline=None)
@given(clusters())
def test_without_groups_it_is_the_one_pod_cycle(cluster: Cluster) -> None:
    assert without_preemption(diagnose_jobs(cluster).diagnosis) == diagnose(cluster)


@st.composite
def ganged(draw: st.DrawFn) -> Cluster:
    """A random cluster whose pods fall into up to three groups of random min_member,
    judged under cce or volcano-vgpu (both run Volcano's session)."""
    cluster: Cluster = draw(clusters())
    groups = [Group(f"ns/g{i}", draw(st.integers(0, 4))) for i in range(draw(st.integers(1, 3)))]
    pods = tuple(
        dataclasses.replace(p, group=draw(st.sampled_from([None, *(g.name for g in groups)])))
        for p in cluster.pods
    )
    scheduler = draw(st.sampled_from([CCE, Scheduler("volcano-vgpu")]))
    return dataclasses.replace(
        cluster, pods=pods, jobs=Jobs(groups=tuple(groups)), scheduler=scheduler
    )


@settings(max_examples=examples(200), deadline=None)
@given(ganged())
def test_every_group_is_all_or_nothing_and_no_card_overflows(cluster: Cluster) -> None:
    result = diagnose_jobs(cluster)
    assert diagnose_jobs(cluster) == result  # deterministic
    assert sorted(d.pod.name for d in result.diagnosis.pods) == sorted(
        p.name for p in cluster.pending
    )
    cards = {(n.name, c.index): c for n in cluster.nodes for c in n.cards}
    for key, requests in card_load(cluster, result.diagnosis).items():
        assert sum(r.card_memory_mib for r in requests) <= cards[key].memory_mib
        assert len(requests) <= cluster.max_vgpus_per_card
    placed = {d.pod.name for d in result.diagnosis.pods if d.placement is not None}
    for outcome in result.groups:
        members = {p.name for p in cluster.pending if p.group == outcome.name}
        count = len(members & placed)
        assert count == 0 or outcome.ready + count >= outcome.min_member, outcome
        if outcome.state == "rolled-back":
            assert count == 0
            assert any(d.cause == "gang" for d in result.diagnosis.pods if d.pod.name in members)
