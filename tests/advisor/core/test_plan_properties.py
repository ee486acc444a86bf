"""Properties of plans on random fragmented clusters: every reported plan holds under the
independent checker, and the planner's fast simulation agrees with the literal one."""

from __future__ import annotations

import random

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from advisor.core.diagnose import diagnose
from advisor.core.model import Card, Cluster, Node, Pod, Policy, Request
from advisor.core.plan import PlanOptions, plan
from advisor.core.plan.board import Board
from advisor.replay import replay
from tests.advisor.core.test_plan_checker import check_report
from tests.fastloop import examples

GiB = 1024
SETTINGS = settings(
    max_examples=examples(300),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)


@st.composite
def fragmented(draw: st.DrawFn) -> Cluster:
    """Pods arrive onto a small cluster until it is full, some leave (holes), then bigger
    ones arrive and wait: the fragmentation plans are for."""
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    policy = Policy(
        draw(st.sampled_from(["binpack", "spread"])), draw(st.sampled_from(["binpack", "spread"]))
    )
    nodes = tuple(
        Node(f"n{i}", tuple(Card(c, rng.choice([8, 16]) * GiB) for c in range(rng.randint(1, 4))))
        for i in range(rng.randint(2, 4))
    )

    def pod(i: int, sizes: list[int]) -> Pod:
        gpus = rng.choice([1, 1, 1, 1, 2])
        core = rng.choice([0, 0, 0, 0, 10, 30]) * gpus
        namespace = rng.choice(["ml", "ml", "web", "kube-system"])
        annotations = {"xgpu.io/do-not-disrupt": "true"} if rng.random() < 0.1 else {}
        request = Request(gpus, gpus * rng.choice(sizes) * GiB, core)
        priority = rng.choice([0, 0, 10])
        return Pod(f"{namespace}/p{i}", request, priority=priority, annotations=annotations)

    first = [pod(i, [2, 4, 4, 6, 8]) for i in range(rng.randint(10, 30))]
    filled = replay(Cluster(nodes, tuple(first), policy, max_vgpus_per_card=4)).end_state()
    original = {p.name: p for p in first}
    stay = [
        Pod(
            p.name,
            p.request,
            p.placement,
            original[p.name].priority,
            annotations=original[p.name].annotations,
        )
        for p in filled.pods
        if p.placement is not None and rng.random() > 0.3
    ]
    late = [pod(100 + i, [6, 8, 12, 16]) for i in range(rng.randint(1, 6))]
    return Cluster(nodes, (*stay, *late), policy, max_vgpus_per_card=4)


@SETTINGS
@given(fragmented())
def test_every_plan_holds_under_the_independent_checker(cluster: Cluster) -> None:
    report = plan(cluster, PlanOptions(max_evaluations=400))
    check_report(cluster, report)
    event(f"plans: {min(len(report.plans), 3)}")


@SETTINGS
@given(fragmented(), st.randoms(use_true_random=False))
def test_fast_simulation_equals_the_literal_one(cluster: Cluster, rng: random.Random) -> None:
    first = diagnose(cluster, node_detail_limit=0)
    bound = {d.pod.name: d.placement for d in first.pods if d.placement is not None}
    board = Board(cluster, bound)
    board.set_pending(d.pod.name for d in first.pods if d.cause in ("fragmentation", "capacity"))
    running = [i for i, where in enumerate(board.where) if where is not None]
    for _ in range(5):
        evict = rng.sample(running, k=min(len(running), rng.randint(1, 4)))
        quick = board.simulate(evict, quick=True)
        literal = board.simulate(evict, quick=False)
        assert quick.landed == literal.landed
        assert quick.rescued == literal.rescued
        assert quick.stranded == literal.stranded
        assert (quick.state.free_memory == literal.state.free_memory).all()


@SETTINGS
@given(fragmented())
def test_no_plan_evicts_a_pod_pending_in_the_input(cluster: Cluster) -> None:
    """The current cycle binds some Pending pods before any plan; they hold nothing in the
    input, so no plan, chain, last look or plan held back by a cap may evict one."""
    pending = {p.name for p in cluster.pods if p.placement is None}
    report = plan(cluster, PlanOptions(max_evaluations=400, max_plan_evictions=1))
    victims = {name for p in report.plans for name in p.evict}
    victims.update(name for h in report.held_back for name in h.evict)
    assert not victims & pending
    event(f"bound by the cycle: {min(len(report.schedulable), 3)}")
