"""The trial behind an autoscaler's remedy (`core.scaling.replicas`, docs/design.md §12.2)
leaves Pending exactly the replicas the reach does not place: the replicas it advises on
are the ones `blocked` speaks of, judged in the same cycle."""

from __future__ import annotations

from hypothesis import given, settings

from advisor.core.autoscalers import judged
from advisor.core.model import Cluster
from advisor.core.plan import PlanOptions
from advisor.core.scaling.replicas import replica_trial
from tests.advisor.core.test_autoscalers import clusters, queued

SMALL = PlanOptions(work=2_000)  # the plans do not decide which replicas are left Pending


@settings(max_examples=40, deadline=None)
@given(clusters())
def test_the_trial_leaves_pending_the_replicas_the_reach_does_not_place(
    drawn: tuple[Cluster, int],
) -> None:
    cluster, _ = drawn
    _, reaches = judged(cluster, node_detail_limit=0)
    (reach,) = reaches
    trial = replica_trial(cluster, reaches, SMALL)
    if reach.status != "blocked":
        assert trial is None
        return
    assert trial is not None
    assert reach.placeable is not None
    name = reach.autoscaler.name
    left = trial.left[name]
    assert len(left) == reach.autoscaler.headroom - reach.placeable
    assert reach.blocked is not None
    assert left[0].cause == reach.blocked.cause
    assert [r.pod for r in left] == list(trial.replicas[name][reach.placeable :])


@settings(max_examples=40, deadline=None)
@given(queued())
def test_only_the_blocked_autoscalers_are_tried(cluster: Cluster) -> None:
    _, reaches = judged(cluster, node_detail_limit=0)
    trial = replica_trial(cluster, reaches, SMALL)
    blocked = {r.autoscaler.name for r in reaches if r.status == "blocked"}
    assert set(trial.replicas if trial is not None else ()) == blocked
    if trial is not None:
        added = len(trial.cluster.pods) - len(cluster.pods)
        assert added == sum(r.autoscaler.headroom for r in reaches if r.status == "blocked")
