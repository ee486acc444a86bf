"""HAMi v2.10.0's own policy and device tests, replayed on the `hami` profile.

pkg/scheduler/policy (gpu_policy_test.go, node_policy_test.go) and pkg/device/nvidia
(device_test.go): the float32 card and node scores, the card order, and NvidiaGPUDevices.Fit's
checks, each case converted into scenario data and judged on the model. The scheduler-level
tables (score_test.go, scheduler_test.go, numa_sort_test.go) are in
test_profile_hami_upstream.py; how values are encoded is in profile_helpers.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from advisor.core.model import Card, Cluster, Node, Pod, Request, Scheduler
from advisor.core.occupancy import build_state
from advisor.core.profiles.hami import node_scores
from tests.advisor.core.profile_helpers import (
    Data,
    card,
    fit_reason,
    hami_card_scores,
    hami_node_score,
    hami_source,
    load,
    node,
    pod,
    scenario,
    used,
    walk_on,
)

SCORE = hami_source("pkg/scheduler/policy/gpu_policy_test.go", "TestComputeScore")
WEIGHTS = hami_source(
    "pkg/scheduler/policy/gpu_policy_test.go", "TestComputeScoreWithResourceWeights"
)
LESS = hami_source("pkg/scheduler/policy/gpu_policy_test.go", "TestDeviceUsageList_Less")
NODE_SCORE = hami_source("pkg/scheduler/policy/node_policy_test.go", "TestComputeDefaultScore")
DEVICES_FIT = hami_source("pkg/device/nvidia/device_test.go", "TestDevices_Fit")
NUMA_SWITCH = hami_source("pkg/device/nvidia/device_test.go", "TestFit_NumaSwitching")
NUMA_BIND = {"nvidia.com/numa-bind": "true"}


# -- gpu_policy_test.go ----------------------------------------------------------------------------


def one_card(memory: int, running: list[Data], request: Data, **settings: Any) -> Cluster:
    return load(scenario("hami", [node("n", card(0, memory))], [*running, request], **settings))


def test_compute_score() -> None:
    # Totalcore 4, Used 2 of Count 10, Usedcores 1 (25 %), Usedmem 2048 of 8192.
    state = used("n", 0, 2, 2048, 25)
    # "Filter other device types and ignore Nums for slots": type1 asks 1024 MiB and 1 core on
    # each of 4 cards; the slot term counts the request once:
    # 10 · ((1+2)/10 + (25+25)/100 + (1024+2048)/8192) = 11.75
    nums_4 = one_card(8192, state, pod(gpus=4, card_mib=1024, card_core=25))
    assert hami_card_scores(nums_4, "n") == [11.75], SCORE.cite("ignore Nums for slots")
    # "ContainerDeviceRequests has no data": 10 · (2/10 + 25/100 + 2048/8192) = 7.0. The model
    # always scores a request; with none the same sum is the node score of this one-card node.
    assert hami_node_score(nums_4, "n") == np.float32(7.0), SCORE.cite("has no data")
    # "MemPercentagereq calculation evaluates correctly": idle 10000 MiB card, 50 %, 2 of 10
    # cores (20 %): 10 · (1/10 + 20/100 + 5000/10000) = 8.0
    share = one_card(10000, [], pod(percent=50, card_core=20))
    assert hami_card_scores(share, "n") == [8.0], SCORE.cite("MemPercentagereq")
    # Count 0 returns 0 before any division ("Zero capacity device ...", "Partial zero
    # capacity (Count=0) ..."); Totalcore is always 100 in the model.
    for memory, name in ((0, "Zero capacity device"), (4096, "Partial zero capacity")):
        cluster = Cluster(
            (Node("n", (Card(0, memory, max_vgpus=0),)),),
            (Pod("default/test", Request(1, 1)),),
            scheduler=Scheduler("hami"),
        )
        assert hami_card_scores(cluster, "n") == [0.0], SCORE.cite(name)
    # Not expressible: "Filter other device types and aggregate same device types" (two GPU
    # requests in one pod).


def weights_cluster(
    card_policy: str = "spread",
    annotations: Data | None = None,
    numa: tuple[int, int] | None = None,
    **settings: Any,
) -> Cluster:
    """gpu-a {Used 1, Usedcores 90, Usedmem 10} and gpu-b {Used 7, Usedcores 10, Usedmem 20}
    of Count 10, Totalcore 100, Totalmem 100; request 40 % and no cores."""
    a, b = (None, None) if numa is None else numa
    return load(
        scenario(
            "hami",
            [node("n", card(0, 100, numa=a), card(1, 100, numa=b))],
            [
                *used("n", 0, 1, 10, 90),
                *used("n", 1, 7, 20, 10),
                pod(percent=40, annotations=annotations),
            ],
            card_policy=card_policy,
            **settings,
        )
    )


def test_compute_score_with_resource_weights() -> None:
    # a: 10 · (2/10 + 90/100 + 50/100) = 16; b: 10 · (8/10 + 10/100 + 60/100) = 15
    assert hami_card_scores(weights_cluster(), "n") == [16, 15], WEIGHTS.cite("default weights")
    # memory 3: a 10 · (0.2 + 0.9 + 1.5) = 26, b 10 · (0.8 + 0.1 + 1.8) = 27
    memory_3 = {"slot": 1, "core": 1, "memory": 3}
    ways: list[tuple[str, dict[str, Any], Data | None]] = [
        ("scenario weights", {"weights": memory_3}, None),
        ("pod annotation", {}, {"hami.io/device-scoring-weights": "slot=1,core=1,memory=3"}),
    ]
    for how, settings, annotated in ways:
        where = WEIGHTS.cite(f"memory weight changes the device preference ({how})")
        cluster = weights_cluster(annotations=annotated, **settings)
        assert hami_card_scores(cluster, "n") == [26, 27], where
        binpack = weights_cluster("binpack", annotations=annotated, **settings)
        assert walk_on(binpack, "n") == [1], where  # gpu-b
        assert walk_on(cluster, "n") == [0], where  # spread: gpu-a
    # core 3: a 10 · (0.2 + 2.7 + 0.5) = 34, b 10 · (0.8 + 0.3 + 0.6) = 17
    core_3 = weights_cluster("binpack", weights={"slot": 1, "core": 3, "memory": 1})
    where = WEIGHTS.cite("core weight can independently change the device preference")
    assert hami_card_scores(core_3, "n") == [34, 17], where
    assert walk_on(core_3, "n") == [0], where
    # numa-bind, binpack: NUMA first (lowest NUMA taken first), so gpu-a despite 26 < 27
    numa = weights_cluster("binpack", NUMA_BIND, (0, 1), weights=memory_3)
    assert walk_on(numa, "n") == [0], WEIGHTS.cite("NUMA ordering remains independent")


# TestDeviceUsageList_Less, single binpack / spread policies with and without NumaBind (the
# mutex, bare numa and chain cases are not modelled). Cards 0 and 1 are the pair (i, j); a
# card's score rises with the 512-MiB pods on it, ordered as the upstream scores are. Go's
# sort keeps a 2-card list when Less(1, 0) is false and Fit takes the last card first, so
# a strict order with Less(0, 1) true picks card 1, and false picks card 0.
LESS_CASES = (  # name, policy, numa bind, (NUMA, pods) of card 0 and 1, Less(0, 1)
    ("Binpack policy with same Numa", "binpack", False, (0, 1), (0, 2), True),
    ("Binpack: score primary, lower score sorts first across NUMA", "binpack", False,
     (1, 1), (0, 2), True),
    ("Binpack: score primary, higher score sorts last even on lower NUMA", "binpack", False,
     (0, 1), (1, 2), True),
    ("Binpack: NUMA tiebreaker when scores equal", "binpack", False, (0, 1), (1, 1), True),
    ("Binpack: score primary over NUMA, high-NUMA high-score sorts last", "binpack", False,
     (1, 2), (0, 1), False),
    ("Spread: score primary, higher score sorts first", "spread", False, (0, 1), (0, 2), False),
    ("Spread: score primary, lower score sorts last across NUMA", "spread", False,
     (1, 1), (0, 2), False),
    ("Spread: score primary over NUMA, high-NUMA high-score sorts first", "spread", False,
     (1, 2), (0, 1), True),
    ("Spread: NUMA tiebreaker when scores equal", "spread", False, (0, 1), (1, 1), True),
    ("Binpack+NumaBind: NUMA primary, higher NUMA sorts first regardless of Score", "binpack",
     True, (1, 0), (0, 3), True),
    ("Binpack+NumaBind: same NUMA falls back to lower Score first", "binpack", True,
     (0, 1), (0, 2), True),
    ("Spread+NumaBind: NUMA primary, lower NUMA sorts first regardless of Score", "spread",
     True, (0, 0), (1, 3), True),
    ("Spread+NumaBind: same NUMA falls back to higher Score first", "spread", True,
     (0, 2), (0, 1), True),
)  # fmt: skip


@pytest.mark.parametrize(("name", "policy", "bind", "first", "second", "less"), LESS_CASES)
def test_device_usage_list_less(
    name: str,
    policy: str,
    bind: bool,
    first: tuple[int, int],
    second: tuple[int, int],
    less: bool,
) -> None:
    cards = [card(i, 8192, numa=numa) for i, (numa, _) in enumerate((first, second))]
    running = [p for i, (_, n) in enumerate((first, second)) if n for p in used("n", i, n, 512 * n)]
    request = pod(card_mib=512, annotations=NUMA_BIND if bind else None)
    cluster = load(scenario("hami", [node("n", *cards)], [*running, request], card_policy=policy))
    assert walk_on(cluster, "n") == [1 if less else 0], LESS.cite(name)


# -- node_policy_test.go TestComputeDefaultScore ---------------------------------------------------


def test_compute_default_score() -> None:
    # device1: Used 50 of 100, Usedmem 100 of 100, cores all used; device2 (unhealthy, counted
    # all the same): Used 75 of 150, Usedmem 200 of 200, cores all used (200 of 200 upstream).
    # 10 · (125/250 + 200/200 + 300/300) = 25, for "Test with no devices" and "Test with
    # devices" alike (they differ in card scores, which the node score does not read).
    cluster = load(
        scenario(
            "hami",
            [
                node(
                    "node1", card(0, 100, max_vgpus=100), card(1, 200, max_vgpus=150, healthy=False)
                )
            ],
            [*used("node1", 0, 50, 100, 100), *used("node1", 1, 75, 200, 100)],
        )
    )
    assert hami_node_score(cluster, "node1") == np.float32(25), NODE_SCORE.cite("Test with devices")
    # "Zero capacity devices ..." (Count, Totalmem 0) and "Empty device list ...": 0.
    zero = Cluster(
        (Node("node-zero", (Card(0, 0, max_vgpus=0),)), Node("node-empty", ())),
        scheduler=Scheduler("hami"),
    )
    st = build_state(zero)
    assert node_scores(st, np.arange(2)).tolist() == [0.0, 0.0], NODE_SCORE.cite("zero, empty")


# -- device_test.go TestDevices_Fit, TestFit_NumaSwitching -----------------------------------------
# Count 100 and Totalcore 100 on every card. A state with Used > 0 but Usedmem 0 becomes pods
# of 1 MiB each, and "core not enough" (Usedcores 100 with Used 0) one such pod holding the
# cores: no case's verdict turns on that memory or that slot.
DEVICES_FIT_CASES = (  # name, cards (MiB, healthy), (used, MiB, cores) on card 0, request, want
    ("fit success", ((128, True), (128, True)), None, pod(card_mib=64, card_core=50), "", [1]),
    ("fit fail: memory not enough", ((128, True),), None, pod(card_mib=512, card_core=50),
     "1/1 CardInsufficientMemory", None),
    ("fit fail: core not enough", ((1024, True),), (1, 1, 100), pod(card_mib=512, card_core=50),
     "1/1 CardInsufficientCore", None),
    ("fit fail: card overused", ((1280, True),), (100, 100, 0), pod(card_mib=512, card_core=50),
     "1/1 CardTimeSlicingExhausted", None),
    ("fit success: but core limit can't exceed 100", ((1280, True),), None,
     pod(card_mib=512, card_core=120), "", [0]),
    ("fit fail:  card exclusively", ((1280, True),), (20, 20, 0),
     pod(card_mib=512, card_core=100), "1/1 ExclusiveDeviceAllocateConflict", None),
    ("fit fail:  CardComputeUnitsExhausted", ((1280, True),), (20, 20, 100),
     pod(card_mib=512), "1/1 CardComputeUnitsExhausted", None),
    ("fit fail:  AllocatedCardsInsufficientRequest", ((1280, True),), (20, 20, 10),
     pod(gpus=2, card_mib=512, card_core=20), "1/1 AllocatedCardsInsufficientRequest", None),
    ("fit fail: partial allocation AllocatedCardsInsufficientRequest for multiple cards",
     ((1280, True), (1280, True)), None, pod(gpus=3, card_mib=512, card_core=20),
     "2/2 AllocatedCardsInsufficientRequest", None),
    ("fit success:  memory percentage", ((1280, True),), (20, 20, 10),
     pod(percent=10, card_core=20), "", [0]),
    ("fit fail:  CardNotHealth", ((1280, False),), (20, 20, 10), pod(percent=10, card_core=20),
     "1/1 CardNotHealth", None),
)  # fmt: skip
# Not expressible: "fit fail: type mismatch", the two UUID cases.


@pytest.mark.parametrize(
    ("name", "cards", "state", "asks", "reason", "walk"),
    DEVICES_FIT_CASES,
    ids=[c[0] for c in DEVICES_FIT_CASES],
)
def test_devices_fit(
    name: str,
    cards: tuple[tuple[int, bool], ...],
    state: tuple[int, int, int] | None,
    asks: Data,
    reason: str,
    walk: list[int] | None,
) -> None:
    built = [card(i, mib, max_vgpus=100, healthy=ok) for i, (mib, ok) in enumerate(cards)]
    running = used("n", 0, *state) if state else []
    cluster = load(scenario("hami", [node("n", *built)], [*running, asks]))
    assert fit_reason(cluster, "n") == reason, DEVICES_FIT.cite(name)
    assert walk_on(cluster, "n") == walk, DEVICES_FIT.cite(name)


def test_fit_numa_switching() -> None:
    # dev-0 and dev-1 on NUMA 1, dev-2 on NUMA 0, idle; 2 cards, 100 MiB and 10 % each,
    # numa-bind. Upstream hands Fit the list unsorted: it collects dev-2, and the switch to
    # NUMA 1 at dev-1 discards it. The model sorts first (NUMA-grouped, spread: the higher
    # NUMA walked first, equal scores the later card first); either way [dev-1, dev-0].
    cluster = load(
        scenario(
            "hami",
            [node("n", card(0, 8192, numa=1), card(1, 8192, numa=1), card(2, 8192, numa=0))],
            [pod(gpus=2, card_mib=100, card_core=10, annotations=NUMA_BIND)],
        )
    )
    assert walk_on(cluster, "n") == [1, 0], NUMA_SWITCH.cite()
