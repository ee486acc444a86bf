"""Scale-down honours the node filters: a removed node's GPU pods must fit elsewhere on cpu,
memory and pod slots too, and so must its other pods (first-fit on the nodes that admit
them). Hand-computed cases; utilisation is allotted card memory over card memory."""

from __future__ import annotations

from dataclasses import replace

import pytest

from advisor.core.model import Cluster, Node, Placement
from advisor.core.nodefilters import NodeConstraints, Taint, Toleration
from advisor.core.scaling.down import PODS_DO_NOT_FIT, scale_down_advice
from tests.advisor.core.constrained import CORE, gpu_node, gpu_pod, other

TOLERATES_ALL = NodeConstraints(tolerations=(Toleration("", "Exists"),))


def idle_and_busy(
    g_cores: int, busy_cores: int, others: tuple[str, int] | None = None, slots: int | None = None
) -> Cluster:
    """n1: one 16 GiB card running g (2 GiB, `g_cores`), utilisation 2/16 = 0.125, and
    optionally an other pod (name, millicores). n2: one 16 GiB card, 4 cores, `slots` pod
    slots, running busy (12 GiB, `busy_cores`): 0.75, not a candidate at 0.3."""
    return Cluster(
        (
            gpu_node("n1", 16, others=None if others is None else (other(*others),)),
            gpu_node("n2", 16, cpu=4, pods=slots),
        ),
        (
            gpu_pod("t/g", 2, "n1", cpu_milli=g_cores * CORE),
            gpu_pod("t/busy", 12, "n2", cpu_milli=busy_cores * CORE),
        ),
    )


def assert_n1_goes(n1: Node, n2: Node, goes: bool) -> None:
    """n1 runs g (2 GiB), n2 busy (12 GiB), both tolerating everything: only n1's other
    pods decide whether n1 can go."""
    cluster = Cluster(
        (n1, n2),
        (
            gpu_pod("t/g", 2, "n1", constraints=TOLERATES_ALL),
            gpu_pod("t/busy", 12, "n2", constraints=TOLERATES_ALL),
        ),
    )
    advice = scale_down_advice(cluster)
    assert [s.node for s in advice.steps] == (["n1"] if goes else [])
    assert [h.reason for h in advice.held] == ([] if goes else [PODS_DO_NOT_FIT])


def test_a_gpu_pod_must_fit_elsewhere_on_cpu() -> None:
    # busy takes 3 of n2's 4 cores: g (2 cores) has 1 left, so n1 stays.
    advice = scale_down_advice(idle_and_busy(g_cores=2, busy_cores=3))
    assert advice.steps == ()
    (held,) = advice.held
    assert (held.node, held.reason) == ("n1", PODS_DO_NOT_FIT)
    assert held.detail == "t/g (1 × 2048 MiB) finds no place on the other nodes"
    # busy takes 2: g's 2 cores fit (2 + 2 <= 4), and n1 goes.
    (step,) = scale_down_advice(idle_and_busy(g_cores=2, busy_cores=2)).steps
    assert (step.node, dict(step.moves)) == ("n1", {"t/g": Placement("n2", (0,))})


def test_an_other_pod_must_fit_elsewhere_on_cpu() -> None:
    # g asks no cpu and moves; web/x (2 cores) finds n2 with 4 - 3 = 1 core: n1 stays.
    advice = scale_down_advice(idle_and_busy(0, busy_cores=3, others=("web/x", 2 * CORE)))
    (held,) = advice.held
    assert (held.node, held.reason) == ("n1", PODS_DO_NOT_FIT)
    assert held.detail == "web/x (cpu 2, memory 0) finds no node with room that admits it"
    # With busy at 2 cores, x fits (2 + 2 <= 4) and moves with n1.
    (step,) = scale_down_advice(idle_and_busy(0, busy_cores=2, others=("web/x", 2 * CORE))).steps
    assert (step.node, step.also_moves) == ("n1", ("web/x",))


@pytest.mark.parametrize(("slots", "goes"), [(2, False), (3, True)])
def test_an_other_pod_needs_a_pod_slot(slots: int, goes: bool) -> None:
    # n2 holds busy; g lands there (2 pods), then web/x needs a third slot.
    advice = scale_down_advice(idle_and_busy(0, 0, others=("web/x", 0), slots=slots))
    assert [s.node for s in advice.steps] == (["n1"] if goes else [])
    assert [h.reason for h in advice.held] == ([] if goes else [PODS_DO_NOT_FIT])


@pytest.mark.parametrize(
    ("n2_taint", "n2_cordoned", "goes"),
    [
        (Taint("dedicated", "NoSchedule", "x"), False, False),  # x never tolerated it
        (Taint("gpu", "NoSchedule", "yes"), False, True),  # n1's own taint: tolerated
        (Taint("spot", "PreferNoSchedule", "yes"), False, True),  # only scores
        (None, True, False),  # cordoned
    ],
)
def test_an_other_pod_goes_only_where_its_known_tolerations_allow(
    n2_taint: Taint | None, n2_cordoned: bool, goes: bool
) -> None:
    # n1 is tainted gpu=yes, so its other pod x tolerates that taint and no other that we
    # know of; g tolerates everything (cordons too), so only x decides.
    n1 = gpu_node("n1", 16, taints=(Taint("gpu", "NoSchedule", "yes"),), others=(other("web/x"),))
    n2 = gpu_node("n2", 16, taints=() if n2_taint is None else (n2_taint,), cordoned=n2_cordoned)
    assert_n1_goes(n1, n2, goes)


@pytest.mark.parametrize(
    ("constraints", "goes"),
    [
        (None, False),  # not known: n2's taint is one n1 lacks, so x is taken not to tolerate it
        (NodeConstraints(tolerations=(Toleration("dedicated", "Exists"),)), True),  # it does
        (NodeConstraints(), False),  # known to tolerate nothing
        (
            NodeConstraints((("pool", "a"),), tolerations=(Toleration("dedicated", "Exists"),)),
            False,  # tolerates n2, but selects a pool only n1 is in
        ),
    ],
)
def test_an_other_pod_with_known_constraints_goes_where_the_filters_admit_it(
    constraints: NodeConstraints | None, goes: bool
) -> None:
    # n2 is tainted dedicated=x and n1 is not; x's nodeSelector, affinity and tolerations,
    # when the source knows them, are judged by kube-scheduler's own filters.
    x = replace(other("web/x"), constraints=constraints)
    n1 = gpu_node("n1", 16, labels={"pool": "a"}, others=(x,))
    n2 = gpu_node("n2", 16, taints=(Taint("dedicated", "NoSchedule", "x"),))
    assert_n1_goes(n1, n2, goes)


def test_other_pods_moved_by_one_removal_must_move_again_with_the_next() -> None:
    # n1 (1/16) and n2 (2/16) are idle, n3 (12/16) busy and tainted; the GPU pods tolerate
    # the taint, n1's other pod x (1 core) does not. n1 goes first: a lands on n3 (binpack:
    # the fullest), x on n2 (n3 refuses it; n2 is a later candidate, tried last, but the
    # only one left). Then n2: b fits on n3 (13 + 2 <= 16), but x, now on n2, has nowhere
    # to go (n1 is gone, n3 refuses): n2 stays.
    cluster = Cluster(
        (
            gpu_node("n1", 16, others=(other("web/x", CORE),)),
            gpu_node("n2", 16, others=()),
            gpu_node("n3", 16, taints=(Taint("dedicated", "NoSchedule", "x"),)),
        ),
        (
            gpu_pod("t/a", 1, "n1", constraints=TOLERATES_ALL),
            gpu_pod("t/b", 2, "n2", constraints=TOLERATES_ALL),
            gpu_pod("t/c", 12, "n3", constraints=TOLERATES_ALL),
        ),
    )
    advice = scale_down_advice(cluster)
    (step,) = advice.steps
    assert (step.node, dict(step.moves), step.also_moves) == (
        "n1",
        {"t/a": Placement("n3", (0,))},
        ("web/x",),
    )
    (held,) = advice.held
    assert (held.node, held.reason) == ("n2", PODS_DO_NOT_FIT)
    assert held.detail.startswith("web/x (cpu 1, memory 0)")


def test_other_pods_go_to_nodes_no_removal_will_consider_first() -> None:
    # As above without the taint: x goes to n3 (not a candidate) rather than n2 (the next
    # candidate, first by name), so n2 then goes too, and lists no other pod.
    cluster = Cluster(
        (
            gpu_node("n1", 16, others=(other("web/x", CORE),)),
            gpu_node("n2", 16, others=()),
            gpu_node("n3", 16),
        ),
        (gpu_pod("t/a", 1, "n1"), gpu_pod("t/b", 2, "n2"), gpu_pod("t/c", 12, "n3")),
    )
    steps = scale_down_advice(cluster).steps
    assert [(s.node, s.also_moves) for s in steps] == [("n1", ("web/x",)), ("n2", ())]
