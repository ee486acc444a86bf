"""HAMi v2.10.0's own scheduler tests, replayed on the `hami` profile.

pkg/scheduler (score_test.go, scheduler_test.go, numa_sort_test.go): each test converts the
expressible cases of one upstream test function (named in its `Upstream` source) into
scenario data and checks that the model gives the upstream answer: the cards and their pick
order, the node scores, the rejection reasons, the node Filter picks. What a case needs that
the model has no place for (init containers, several GPU containers in one pod, device
types, UUID lists, MIG, topology, quotas) is left out, and each table says so. The policy
and device tables are in test_profile_hami_device_upstream.py.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from advisor.core.model import Cluster
from tests.advisor.core.profile_helpers import (
    HAMI,
    HAMI_TAG,
    Data,
    Upstream,
    card,
    fit_reason,
    hami_node_score,
    hami_source,
    load,
    node,
    pending_verdict,
    pod,
    scaled,
    scenario,
    used,
    walk_on,
)

CALC = hami_source("pkg/scheduler/score_test.go", "Test_calcScore")
CERTAIN = hami_source("pkg/scheduler/score_test.go", "Test_fitInCertainDevice")
IN_DEVICES = hami_source("pkg/scheduler/score_test.go", "Test_fitInDevices")
FILTER = hami_source("pkg/scheduler/scheduler_test.go", "Test_Filter")
NUMA_SORT = "pkg/scheduler/numa_sort_test.go"
POLICY_KEYS = ("hami.io/node-scheduler-policy", "hami.io/gpu-scheduler-policy")
NUMA_BIND = {"nvidia.com/numa-bind": "true"}


# -- Test_calcScore --------------------------------------------------------------------------------
# Every card: Count 10, Totalcore 100, Totalmem 8000 (8192); "used": Used 5, Usedmem 4000
# (4096), Usedcores 50. Request: 1000 MiB (1024) and 30 % per card. A node's expected walk is
# the Devices calcScore lists for it, in order; None: the node is in failedNodes.
IDLE, BUSY = False, True


@dataclass(frozen=True)
class CalcCase:
    name: str
    nodes: dict[str, tuple[bool, ...]]  # node -> its cards, busy or idle
    walks: dict[str, list[int] | None]
    scores: dict[str, float]
    gpus: int = 1
    card_policy: str = "spread"  # the DeviceUsageList.Policy the case sets
    card_mib: int = scaled(8000)
    failed: str = ""  # failedNodes' reason for every node


CALC_CASES = (
    CalcCase("one node one device one pod one container use one device.",
             {"node1": (IDLE,)}, {"node1": [0]}, {"node1": 0}),
    # 10 · (5/10 + 50/100 + 4096/8192) = 15
    CalcCase("one node one device one pod one container use one device,but this device before "
             "having use.", {"node1": (BUSY,)}, {"node1": [0]}, {"node1": 15}),
    # equal scores: Fit walks the list from its end, so the second card
    CalcCase("one node two device one pod one container use one device",
             {"node1": (IDLE, IDLE)}, {"node1": [1]}, {"node1": 0}),
    # spread takes the lowest card score (the idle card); node 10 · (5/20 + 50/200 + 4096/16384)
    CalcCase("one node two device one pod one container use one device,but having use 50%",
             {"node1": (IDLE, BUSY)}, {"node1": [0]}, {"node1": 7.5}),
    CalcCase("one node two device one pod one container use two device",
             {"node1": (IDLE, IDLE)}, {"node1": [1, 0]}, {"node1": 0}, gpus=2),
    CalcCase("one node two device one pod one container use two device,but this two device "
             "before having use.", {"node1": (BUSY, BUSY)}, {"node1": [1, 0]}, {"node1": 15},
             gpus=2),
    CalcCase("two node per node having one device one pod one container use one device",
             {"node1": (IDLE,), "node2": (IDLE,)}, {"node1": [0], "node2": [0]},
             {"node1": 0, "node2": 0}),
    CalcCase("two node per node having one device one pod one container use one device,one "
             "device having use 50%", {"node1": (BUSY,), "node2": (IDLE,)},
             {"node1": [0], "node2": [0]}, {"node1": 15, "node2": 0}),
    # 10-12: the other containers ask for no GPU, so the pod is its one GPU container
    CalcCase("one node two device one pod two container use two device",
             {"node1": (IDLE,)}, {"node1": [0]}, {"node1": 0}, card_policy="binpack"),
    CalcCase("one node one device one pod two container, the second container use device",
             {"node1": (IDLE,)}, {"node1": [0]}, {"node1": 0}, card_policy="binpack"),
    CalcCase("one node one device one pod with three containers, middle container uses one "
             "device.", {"node1": (IDLE,)}, {"node1": [0]}, {"node1": 0}),
    # 14-15: Totalmem 50 (kept as is: any card under the request is refused alike)
    CalcCase("one node one device one pod one container use one device and not enough "
             "resource,node should be failed.", {"node1": (IDLE,)}, {"node1": None},
             {"node1": 0}, card_mib=50, failed="1/1 CardInsufficientMemory"),
    CalcCase("race condition test for failedNodes map with two nodes failing",
             {"node1": (IDLE,), "node2": (IDLE,)}, {"node1": None, "node2": None},
             {"node1": 0, "node2": 0}, card_mib=50, failed="1/1 CardInsufficientMemory"),
)  # fmt: skip


def calc_cluster(case: CalcCase) -> Cluster:
    nodes, running = [], []
    for name, cards in case.nodes.items():
        nodes.append(node(name, *(card(i, case.card_mib) for i in range(len(cards)))))
        for i, busy in enumerate(cards):
            running += used(name, i, 5, scaled(4000), 50) if busy else []
    request = pod(gpus=case.gpus, card_mib=scaled(1000), card_core=30)
    return load(
        scenario(
            "hami", nodes, [*running, request], node_policy="binpack", card_policy=case.card_policy
        )
    )


@pytest.mark.parametrize("case", CALC_CASES, ids=lambda c: c.name[:60])
def test_calc_score(case: CalcCase) -> None:
    where = CALC.cite(case.name)
    cluster = calc_cluster(case)
    for name, walk in case.walks.items():
        assert walk_on(cluster, name) == walk, where
        assert hami_node_score(cluster, name) == np.float32(case.scores[name]), where
        if walk is None:
            assert fit_reason(cluster, name) == case.failed, where
    # Filter then takes the node with the highest score (binpack), at random among equals.
    verdict = pending_verdict(cluster)
    fitting = [n for n, walk in case.walks.items() if walk is not None]
    if not fitting:
        assert verdict.cause == "unsatisfiable", where  # the card is smaller than the request
        return
    best = max(case.scores[n] for n in fitting)
    tied = sorted(n for n in fitting if case.scores[n] == best)
    assert verdict.placement is not None, where
    assert verdict.placement.node == tied[0], where
    assert verdict.placement.cards == tuple(sorted(case.walks[tied[0]] or ())), where
    assert ("the real pick may differ" in verdict.message) == (len(tied) > 1), where


# -- Test_fitInCertainDevice, Test_fitInDevices ----------------------------------------------------
# Cards: Count 4, Totalmem 8192, Totalcore 4 (1 core = 25 %), NUMA 1 unless stated.


def certain(*cards: Data, running: list[Data], request: Data) -> Cluster:
    return load(scenario("hami", [node("node-1", *cards)], [*running, request]))


def test_fit_in_certain_device() -> None:
    c4 = card(0, 8192, numa=1, max_vgpus=4)
    one_used = used("node-1", 0, 1, 2048, 25)  # Used 1, Usedmem 2048, Usedcores 1 of 4
    ask = pod(card_mib=1024, card_core=25)
    cases = {
        "allocated device": (certain(c4, running=one_used, request=ask), ""),
        # 200 is clamped to 100, above the 75 % left
        "core limit exceed 100": (
            certain(c4, running=one_used, request=pod(card_mib=1024, card_core=200)),
            "1/1 CardInsufficientCore",
        ),
        "card insufficient remaining memory": (
            certain(
                card(0, 8000, numa=1, max_vgpus=4),
                running=used("node-1", 0, 1, 8000, 25),
                request=pod(percent=100, card_core=100),
            ),
            "1/1 CardInsufficientMemory",
        ),
        "the container wants exclusive access to an entire card, but the card is already in use": (
            certain(
                c4, running=used("node-1", 0, 1, 2048, 0), request=pod(card_mib=100, card_core=100)
            ),
            "1/1 ExclusiveDeviceAllocateConflict",
        ),
        "can't allocate core=0 job to an already full GPU": (  # Usedcores 1 of Totalcore 1
            certain(c4, running=used("node-1", 0, 1, 2048, 100), request=pod(card_mib=1024)),
            "1/1 CardComputeUnitsExhausted",
        ),
    }
    for name, (cluster, reason) in cases.items():
        assert fit_reason(cluster, "node-1") == reason, CERTAIN.cite(name)
        assert (walk_on(cluster, "node-1") == [0]) == (not reason), CERTAIN.cite(name)


def test_fit_in_certain_device_numa_not_fit() -> None:
    """Two passing cards on NUMA 0 and 1 for a 2-card numa-bind request: {NumaNotFit: 1,
    AllocatedCardsInsufficientRequest: 1} upstream; the node's one reason is NumaNotFit."""
    cluster = certain(
        card(0, 8192, numa=0, max_vgpus=4),
        card(1, 8192, numa=1, max_vgpus=4),
        running=[*used("node-1", 0, 1, 2048, 25), *used("node-1", 1, 1, 2048, 25)],
        request=pod(gpus=2, card_mib=1024, card_core=25, annotations=NUMA_BIND),
    )
    where = CERTAIN.cite("numa not fit")
    assert walk_on(cluster, "node-1") is None, where
    verdict = pending_verdict(cluster)
    assert verdict.reason_counts == (("NumaNotFit", 1),), where


def test_fit_in_devices() -> None:
    cluster = load(
        scenario(
            "hami",
            [
                node(
                    "node-1", card(0, 8192, numa=1, max_vgpus=4), card(1, 8192, numa=1, max_vgpus=4)
                )
            ],
            [
                *used("node-1", 0, 1, 2048, 25),
                *used("node-1", 1, 1, 2048, 25),
                pod(card_mib=1024, card_core=25),
            ],
        )
    )
    assert walk_on(cluster, "node-1") is not None, IN_DEVICES.cite("all device score for one node")


def test_fit_in_devices_node_insufficient_device() -> None:
    """node-1 has one card for a 2-card pod. A second node with two full cards keeps the pod
    from being unsatisfiable, so node-1's own reason shows."""
    cluster = load(
        scenario(
            "hami",
            [
                node("node-1", card(0, 8192, numa=1, max_vgpus=4)),
                node("node-2", card(0, 8192), card(1, 8192)),
            ],
            [
                *used("node-1", 0, 1, 2048, 25),
                *used("node-2", 0, 1, 8192),
                *used("node-2", 1, 1, 8192),
                pod(gpus=2, card_mib=1024, card_core=25),
            ],
        )
    )
    verdict = pending_verdict(cluster)
    where = IN_DEVICES.cite("request devices nums cannot exceed the total number of devices")
    assert ("NodeInsufficientDevice", 1) in verdict.reason_counts, where


# -- Test_Filter -----------------------------------------------------------------------------------
# node1: device1 (one pod of 2000 MiB, 25 %) and device2; node2: device3 and device4 (one pod of
# 6000 MiB, 75 %); 8000 MiB cards. Node scores by hand (the test does not assert them):
# node1 10 · (1/20 + 25/200 + 2048/16384) = 3.0, node2 10 · (1/20 + 75/200 + 6144/16384) = 8.0.
FILTER_CASES = (
    ("node use binpack gpu use binpack policy", "binpack", "binpack", "node2", 1),
    # device3 4.25 < device4 20.25: spread takes device3 (upstream also accepts device4)
    ("node use binpack gpu use spread policy", "binpack", "spread", "node2", 0),
    ("node use spread gpu use binpack policy", "spread", "binpack", "node1", 0),
    ("node use spread gpu use spread policy", "spread", "spread", "node1", 1),
)


@pytest.mark.parametrize(
    ("name", "node_policy", "card_policy", "want_node", "want_card"), FILTER_CASES
)
def test_filter(
    name: str, node_policy: str, card_policy: str, want_node: str, want_card: int
) -> None:
    where = FILTER.cite(name)
    policies = dict(zip(POLICY_KEYS, (node_policy, card_policy), strict=True))
    request = pod(card_mib=scaled(1000), card_core=20, annotations=policies)
    cards = (card(0, scaled(8000)), card(1, scaled(8000)))
    cluster = load(
        scenario(
            "hami",
            [node("node1", *cards), node("node2", *cards)],
            [
                *used("node1", 0, 1, scaled(2000), 25),
                *used("node2", 1, 1, scaled(6000), 75),
                request,
            ],
        )
    )
    assert hami_node_score(cluster, "node1") == np.float32(3.0), where
    assert hami_node_score(cluster, "node2") == np.float32(8.0), where
    verdict = pending_verdict(cluster)
    assert verdict.placement is not None, where
    assert (verdict.placement.node, verdict.placement.cards) == (want_node, (want_card,)), where
    assert "may differ" not in verdict.message, where


# -- numa_sort_test.go -----------------------------------------------------------------------------


def numa_cluster(numas: tuple[int, ...], pods: tuple[int, ...], request: Data) -> Cluster:
    """Idle-able 8192-MiB cards on these NUMA nodes; card scores ranked by their 512-MiB pods."""
    running = [p for i, n in enumerate(pods) if n for p in used("n", i, n, 512 * n)]
    cards = [card(i, 8192, numa=numa) for i, numa in enumerate(numas)]
    return load(scenario("hami", [node("n", *cards)], [*running, request], card_policy="spread"))


def test_numa_bind_sort_preserves_affinity() -> None:
    # A (NUMA 0, score 5), B (NUMA 0, score 1), C (NUMA 1, score 3); spread, numa-bind, 2 cards.
    # By hand: NUMA 1 first: C taken, then NUMA 0 discards it and takes B, then A.
    where = Upstream(HAMI, HAMI_TAG, NUMA_SORT, "TestNumaBindSortPreservesAffinity").cite()
    request = pod(gpus=2, card_mib=100, card_core=10, annotations=NUMA_BIND)
    walk = walk_on(numa_cluster((0, 0, 1), (2, 0, 1), request), "n")
    assert walk is not None, where
    assert set(walk) == {0, 1}, where
    assert walk == [1, 0], where


def test_score_primary_selects_across_numa() -> None:
    # P (NUMA 0, score 1), Q (NUMA 1, score 8), R (NUMA 1, score 5); spread, 1 card: P.
    where = Upstream(HAMI, HAMI_TAG, NUMA_SORT, "TestScorePrimarySelectsAcrossNuma").cite()
    walk = walk_on(numa_cluster((0, 1, 1), (0, 2, 1), pod(card_mib=100, card_core=10)), "n")
    assert walk == [0], where
