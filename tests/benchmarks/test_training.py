"""The job benchmark's training cluster is a valid scenario with the gangs it promises."""

from __future__ import annotations

from collections import Counter

from advisor.core.gang import judge
from advisor.scenario import scenario_from_data, scenario_to_data
from benchmarks.training import QUEUES, training_cluster


def test_the_training_cluster_has_whole_gangs_in_queues_and_reads_back() -> None:
    cluster = training_cluster(nodes=80, pending=120, gangs=16, seed=3)
    groups = {g.name: g for g in cluster.jobs.groups}
    assert len(groups) == 16
    assert len(cluster.jobs.queues) == QUEUES
    members = Counter(p.group for p in cluster.pods if p.group is not None)
    assert set(members) == set(groups)
    # Each gang has exactly its min_member pods; the running gangs run whole.
    assert all(members[name] == g.min_member for name, g in groups.items())
    running = Counter(p.group for p in cluster.running if p.group is not None)
    whole = [n for n in groups if n.startswith("train/job-")]
    assert whole
    assert all(running[n] == groups[n].min_member for n in whole)
    assert {g.queue for g in groups.values()} <= {q.name for q in cluster.jobs.queues}
    assert scenario_from_data(scenario_to_data(cluster), "bench.json") == cluster


def test_every_waiting_gang_is_judged_as_one() -> None:
    cluster = training_cluster(nodes=80, pending=120, gangs=16, seed=3)
    diagnosis = judge(cluster)
    waiting = {p.group for p in cluster.pending if p.group is not None}
    assert {g.name for g in diagnosis.groups} == waiting
    for group in diagnosis.groups:
        verdicts = [d for d in diagnosis.pods if d.pod.group == group.name]
        placed = [d for d in verdicts if d.placement is not None]
        # all-or-nothing: a gang either reaches min_member or holds no card
        assert not placed or len(placed) + group.ready >= group.min_member
