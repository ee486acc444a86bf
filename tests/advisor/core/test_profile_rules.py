"""Hand-computed cases for the profile rules the upstream tables leave out (docs/design.md
§9.2). Each case carries its calculation; the rule's source is HAMi v2.10.0
(pkg/device/nvidia/device.go Fit, pkg/scheduler/policy, pkg/scheduler/score.go) or Volcano
v1.15.0 (pkg/scheduler/api/devices/nvidia/vgpu/utils.go, plugins/deviceshare).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from advisor.core.diagnose import diagnose
from advisor.core.model import Cluster
from tests.advisor.core.profile_helpers import (
    Data,
    card,
    fit_reason,
    hami_card_scores,
    hami_node_score,
    load,
    node,
    pending_verdict,
    place,
    pod,
    scenario,
    used,
    walk_on,
)

GiB = 1024


def one_node(profile: str, cards: list[Data], pods: list[Data], **kw: Any) -> Cluster:
    return load(scenario(profile, [node("n", *cards)], pods, **kw))


# -- HAMi: Fit's checks ----------------------------------------------------------------------------


def test_hami_exclusive_core_wants_an_unused_card() -> None:
    # Card 0 hosts one pod (1 GiB, no core): all 100 % core is free, but Coresreq 100 with
    # Used 1 is ExclusiveDeviceAllocateConflict; card 1 is unused and takes it. (With a 10 %
    # pod there, CardInsufficientCore, checked first, would refuse it.)
    running = used("n", 0, 1, GiB)
    asks = pod(card_mib=GiB, card_core=100)
    two = one_node("hami", [card(0, 8 * GiB), card(1, 8 * GiB)], [*running, asks])
    assert walk_on(two, "n") == [1]
    alone = one_node("hami", [card(0, 8 * GiB)], [*running, asks])
    assert fit_reason(alone, "n") == "1/1 ExclusiveDeviceAllocateConflict"
    assert pending_verdict(alone).reason_counts == (("ExclusiveDeviceAllocateConflict", 1),)


def test_hami_zero_core_request_on_a_card_with_no_core_left() -> None:
    # Two pods of 50 % take all 100 %, 6 GiB memory still free: a 0-core request is refused
    # (CardComputeUnitsExhausted), a 1 % one for want of core (CardInsufficientCore).
    running = used("n", 0, 2, 2 * GiB, 100)
    zero = one_node("hami", [card(0, 8 * GiB)], [*running, pod(card_mib=GiB)])
    assert fit_reason(zero, "n") == "1/1 CardComputeUnitsExhausted"
    assert pending_verdict(zero).reason_counts == (("CardComputeUnitsExhausted", 1),)
    some = one_node("hami", [card(0, 8 * GiB)], [*running, pod(card_mib=GiB, card_core=1)])
    assert fit_reason(some, "n") == "1/1 CardInsufficientCore"
    # Volcano has the same rule (UsedCore == 100 && Coresreq == 0 → skip).
    volcano = one_node("volcano-vgpu", [card(0, 8 * GiB)], [*running, pod(card_mib=GiB)])
    assert pending_verdict(volcano).reason_counts == (("core-exhausted", 1),)


def test_hami_core_above_100_is_clamped_to_100() -> None:
    # 120 % is taken as 100 %: it fits an unused card and leaves exactly 0 % core, so a
    # following 0-core pod meets CardComputeUnitsExhausted (not a negative balance).
    cluster = one_node(
        "hami",
        [card(0, 8 * GiB)],
        [pod("default/a", card_mib=GiB, card_core=120), pod("default/b", card_mib=GiB)],
    )
    a, b = diagnose(cluster).pods
    assert a.cause == "schedulable"
    assert b.reason_counts == (("CardComputeUnitsExhausted", 1),)


def test_card_max_vgpus_overrides_the_cluster_limit() -> None:
    # Card 0 has 2 slots (max_vgpus 2) and 2 pods: CardTimeSlicingExhausted though the
    # cluster allows 10; card 1 falls back to the cluster's 10 and takes the pod.
    running = used("n", 0, 2, 2 * GiB)
    cards = [card(0, 16 * GiB, max_vgpus=2), card(1, 16 * GiB)]
    cluster = one_node("hami", cards, [*running, pod(card_mib=GiB)], card_policy="binpack")
    assert walk_on(cluster, "n") == [1]
    alone = one_node("hami", cards[:1], [*running, pod(card_mib=GiB)])
    assert fit_reason(alone, "n") == "1/1 CardTimeSlicingExhausted"
    # The slot count is also the score's denominator: card 1, idle, binpack, 1 GiB of 16:
    # 10 · (1/10 + 0/100 + 1024/16384) = 1.625 (card 0: 10 · (3/2 + 0 + 3072/16384) = 16.875)
    assert hami_card_scores(cluster, "n") == [16.875, 1.625]


def test_hami_default_memory_for_a_request_without_memory() -> None:
    # 5 GiB of 8 used: 3 GiB (3072 MiB) free. With default_memory_mib 3000 a pod asking no
    # memory asks 3000 MiB and fits; without it, the whole card (8192 MiB) does not.
    running = used("n", 0, 1, 5 * GiB)
    with_default = one_node("hami", [card(0, 8 * GiB)], [*running, pod()], default_memory_mib=3000)
    assert walk_on(with_default, "n") == [0]
    # Its card score counts the 3000 MiB: 10 · (2/10 + 0/100 + (3000 + 5120)/8192)
    # = 2 + 9.912109375 = 11.912109375 (float32 rounding aside)
    assert hami_card_scores(with_default, "n") == [pytest.approx(11.912109375, abs=1e-6)]
    whole = one_node("hami", [card(0, 8 * GiB)], [*running, pod()])
    assert fit_reason(whole, "n") == "1/1 CardInsufficientMemory"


@pytest.mark.parametrize("profile", ["hami", "volcano-vgpu"])
def test_whole_card_request(profile: str) -> None:
    # {gpus: 2} with no memory asks all of each card: card 1 holds a 1-MiB pod, so cards 0
    # and 2 (16 and 8 GiB, whatever their size).
    cards = [card(0, 16 * GiB), card(1, 16 * GiB), card(2, 8 * GiB)]
    cluster = one_node(profile, cards, [*used("n", 1, 1, 1), pod(gpus=2)])
    verdict = pending_verdict(cluster)
    assert verdict.placement is not None
    assert verdict.placement.cards == (0, 2)


# -- HAMi: card order and node pick ----------------------------------------------------------------


@pytest.mark.parametrize("policy", ["binpack", "spread"])
def test_hami_score_tie_goes_to_the_highest_index(policy: str) -> None:
    # Four idle equal cards score alike; Go's insertion sort keeps them in list order and
    # Fit walks from the end: card 3, then card 2.
    cards = [card(i, 8 * GiB) for i in range(4)]
    for gpus, want in ((1, [3]), (2, [3, 2])):
        cluster = one_node("hami", cards, [pod(gpus=gpus, card_mib=GiB)], card_policy=policy)
        assert walk_on(cluster, "n") == want


@pytest.mark.parametrize("policy", ["binpack", "spread"])
def test_hami_numa_breaks_score_ties(policy: str) -> None:
    # Equal scores: the higher NUMA node first (Less: ni < nj sorts it last), then the later
    # position. NUMA 1 holds cards 0 and 2: card 2, then card 0.
    cards = [card(i, 8 * GiB, numa=numa) for i, numa in enumerate((1, 0, 1, 0))]
    cluster = one_node("hami", cards, [pod(gpus=2, card_mib=GiB)], card_policy=policy)
    assert walk_on(cluster, "n") == [2, 0]


def test_hami_numa_bind_discards_cards_across_a_numa_change() -> None:
    # Card 3 (NUMA 1) is full. Spread with numa-bind sorts NUMA first and walks NUMA 1 first,
    # lowest score first: card 2 is collected, card 3 refused; at NUMA 0 card 2 is discarded
    # and the equal cards 1 and 0 (later first) make the pair: [1, 0].
    cards = [
        card(0, 8 * GiB, numa=0),
        card(1, 8 * GiB, numa=0),
        card(2, 8 * GiB, numa=1),
        card(3, 8 * GiB, numa=1),
    ]
    bind = {"nvidia.com/numa-bind": "true"}
    full = used("n", 3, 1, 8 * GiB)
    cluster = one_node("hami", cards, [*full, pod(gpus=2, card_mib=GiB, annotations=bind)])
    assert walk_on(cluster, "n") == [1, 0]
    # Without numa-bind the score leads: cards 0, 1 and 2 tie, the higher NUMA first (card
    # 2), then the later position (card 1).
    free = one_node("hami", cards, [*full, pod(gpus=2, card_mib=GiB)])
    assert walk_on(free, "n") == [2, 1]


def test_hami_node_score_is_taken_before_placement() -> None:
    # Pod: 4 GiB, 50 %. Binpack picks the highest node score.
    # a: one 8-GiB card with a 1-GiB pod.   before: 10 · (1/10 + 0 + 1024/8192) = 2.25
    #                                       after:  10 · (2/10 + 50/100 + 5120/8192) = 13.25
    # b: two 8-GiB cards, three 1-GiB pods. before: 10 · (3/20 + 0 + 3072/16384) = 3.375
    #                                       after:  10 · (4/20 + 50/200 + 7168/16384) = 8.875
    # HAMi scores before: b wins, though a would after.
    cluster = load(
        scenario(
            "hami",
            [node("a", card(0, 8 * GiB)), node("b", card(0, 8 * GiB), card(1, 8 * GiB))],
            [*used("a", 0, 1, GiB), *used("b", 0, 3, 3 * GiB), pod(card_mib=4 * GiB, card_core=50)],
        )
    )
    assert hami_node_score(cluster, "a") == np.float32(2.25)
    assert hami_node_score(cluster, "b") == np.float32(3.375)
    assert place(cluster) == ("b", [1], 1)  # spread on b: the idle card 1


@pytest.mark.parametrize("profile", ["hami", "volcano-vgpu"])
def test_random_node_tie_says_the_real_pick_may_differ(profile: str) -> None:
    # Two idle one-card nodes score the same; the model takes the first by name ("a") and
    # says the scheduler picks at random. CCE breaks the same tie by name, without a word.
    nodes = [node("b", card(0, 8 * GiB)), node("a", card(0, 8 * GiB))]
    verdict = pending_verdict(load(scenario(profile, nodes, [pod(card_mib=GiB)])))
    assert verdict.placement is not None
    assert verdict.placement.node == "a"
    assert verdict.message == (
        "fits on a cards 0 (2 nodes score the same and the scheduler picks one of them at "
        "random, so the real pick may differ)"
    )
    cce = pending_verdict(load(scenario("cce", nodes, [pod(card_mib=GiB)])))
    assert cce.message == "fits on a cards 0"


def test_hami_reasons_in_diagnose() -> None:
    # Three nodes, each refused by another check, counted as kube-scheduler's FitError.
    # n1: its card is unhealthy; n2: 2 of 2 slots taken; n3: 7 of 8 GiB taken (pod: 4 GiB).
    cluster = load(
        scenario(
            "hami",
            [
                node("n1", card(0, 8 * GiB, healthy=False)),
                node("n2", card(0, 8 * GiB, max_vgpus=2)),
                node("n3", card(0, 8 * GiB)),
            ],
            [*used("n2", 0, 2, 2 * GiB), *used("n3", 0, 1, 7 * GiB), pod(card_mib=4 * GiB)],
        )
    )
    verdict = pending_verdict(cluster)
    assert sorted(verdict.reason_counts) == [
        ("CardInsufficientMemory", 1),
        ("CardNotHealth", 1),
        ("CardTimeSlicingExhausted", 1),
    ]
    assert verdict.node_summary == (
        "0/3 nodes are available: 1 CardInsufficientMemory, 1 CardNotHealth, "
        "1 CardTimeSlicingExhausted."
    )
    details = dict(verdict.node_reasons)
    assert details["n2"] == ("CardTimeSlicingExhausted: card 0",)


@pytest.mark.parametrize(
    ("value", "bound"),
    [
        ("true", True),
        ("True", True),
        ("TRUE", True),
        ("false", False),
        ("yes", False),
        ("1", True),
        ("t", True),
        ("tRuE", False),
        (" true", False),
    ],
)
def test_hami_numa_bind_annotation_reads_as_parse_bool(value: str, bound: bool) -> None:
    # assertNuma: ParseBool(value) without error and true. Two cards on NUMA 0 and 1 pass for
    # a 2-card pod: bound, NumaNotFit; unbound, both cards.
    cards = [card(0, 8 * GiB, numa=0), card(1, 8 * GiB, numa=1)]
    asks = pod(gpus=2, card_mib=GiB, annotations={"nvidia.com/numa-bind": value})
    verdict = pending_verdict(one_node("hami", cards, [asks]))
    assert (verdict.placement is None) == bound
    if bound:
        assert verdict.reason_counts == (("NumaNotFit", 1),)


# -- Memory shares --------------------------------------------------------------------------------


@pytest.mark.parametrize("profile", ["hami", "volcano-vgpu"])
def test_share_rounds_down(profile: str) -> None:
    # 50 % of a 1001-MiB card: Volcano uint(float64(1001) · 50 / 100.0) = uint(500.5) = 500,
    # HAMi int32 1001 · 50 / 100 = 500. Two halves take 1000 MiB and leave 1 MiB, which a
    # 1-MiB pod takes; a second 1-MiB pod is refused (rounding up to 501 would refuse the
    # second half already).
    pods = [
        pod("default/h1", percent=50),
        pod("default/h2", percent=50),
        pod("default/m1", card_mib=1),
        pod("default/m2", card_mib=1),
    ]
    causes = [d.cause for d in diagnose(one_node(profile, [card(0, 1001)], pods)).pods]
    assert causes[:3] == ["schedulable"] * 3
    assert causes[3] != "schedulable"


def test_volcano_share_wins_over_memory_hami_memory_wins_over_share() -> None:
    # 10 % and 8000 MiB of a 4096-MiB card. Volcano takes the share when given
    # (MemPercentagereq != 101): 409 MiB, fits. HAMi's Fit takes Memreq when above 0:
    # 8000 MiB, CardInsufficientMemory.
    asks = {
        "name": "default/test",
        "request": {"gpus": 1, "memory_mib": 8000, "memory_percent": 10},
    }
    assert walk_on(one_node("volcano-vgpu", [card(0, 4096)], [asks]), "n") == [0]
    assert (
        fit_reason(one_node("hami", [card(0, 4096)], [asks]), "n") == "1/1 CardInsufficientMemory"
    )


def test_hami_score_reads_the_share_when_both_are_given() -> None:
    # HAMi ComputeScore takes the share when MemPercentagereq is set (not 0 or 101) even
    # when Memreq is too, while Fit takes Memreq. 1024 MiB and 50 %, binpack, no cores:
    # card 0 (32 GiB, one 1-MiB pod): 10 · (2/10 + (16384 + 1)/32768) = 7.0003 (share)
    #                                  10 · (2/10 + (1024 + 1)/32768)  = 2.3128 (memory)
    # card 1 (4 GiB, idle):           10 · (1/10 + 2048/4096) = 6.0 (share)
    #                                  10 · (1/10 + 1024/4096) = 3.5 (memory)
    # The share ranks card 0 first.
    asks = {
        "name": "default/test",
        "request": {"gpus": 1, "memory_mib": 1024, "memory_percent": 50},
    }
    cluster = one_node(
        "hami",
        [card(0, 32 * GiB), card(1, 4 * GiB)],
        [*used("n", 0, 1, 1), asks],
        card_policy="binpack",
    )
    assert hami_card_scores(cluster, "n") == [pytest.approx(7.0003, abs=1e-4), 6.0]
    assert walk_on(cluster, "n") == [0]


# -- Volcano: card order and node score -----------------------------------------------------------


def test_volcano_legacy_order_walks_from_the_last_card() -> None:
    # No deviceshare.SchedulePolicy: n-1 … 0 whatever the usage. Card 2 is full (4 slots of
    # 4), so 1 card goes to card 1 and 2 cards to [1, 0].
    cards = [card(i, 16 * GiB, max_vgpus=4) for i in range(3)]
    full = used("n", 2, 4, 4 * GiB)
    for gpus, want in ((1, [1]), (2, [1, 0])):
        cluster = one_node("volcano-vgpu", cards, [*full, pod(gpus=gpus, card_mib=GiB)])
        assert cluster.policy.card == "legacy"
        assert walk_on(cluster, "n") == want


def test_volcano_spread_orders_by_vgpus_on_the_card() -> None:
    # Spread: fewest UsedNum first, ties to the lowest index. Card 0: two 1-MiB pods; card 1:
    # one 8-GiB pod; card 2: two pods. Card 1 first (1 vGPU), though it holds the most memory.
    cards = [card(i, 16 * GiB) for i in range(3)]
    running = [*used("n", 0, 2, 2), *used("n", 1, 1, 8 * GiB), *used("n", 2, 2, 2)]
    cluster = one_node(
        "volcano-vgpu", cards, [*running, pod(gpus=2, card_mib=GiB)], card_policy="spread"
    )
    assert walk_on(cluster, "n") == [1, 0]


def test_volcano_weight_0_ties_every_node() -> None:
    # Binpack with deviceshare.ScheduleWeight 0 adds no score: nodes a (idle) and b (8 GiB of
    # 16 used) tie, the model takes a by name and says so. With weight 1, b scores
    # floor(100 · 9216/16384 + 0.5) = 56 against a's 6 and wins.
    nodes = [node("a", card(0, 16 * GiB)), node("b", card(0, 16 * GiB))]
    pods = [*used("b", 0, 1, 8 * GiB), pod(card_mib=GiB)]
    zero = load(scenario("volcano-vgpu", nodes, pods, card_policy="binpack"))
    verdict = pending_verdict(zero)
    assert verdict.placement is not None
    assert verdict.placement.node == "a"
    assert "2 nodes score the same" in verdict.message
    weighted = load(scenario("volcano-vgpu", nodes, pods, card_policy="binpack", schedule_weight=1))
    assert place(weighted) == ("b", [0], 1)


def test_volcano_node_score_rounds_as_go_does() -> None:
    # GPUScore is 100 · (UsedMem / Memory) in float64, then floor(s + 0.5). On a 200-MiB card
    # with 29 MiB used after the pod, 29/200 = 0.145 (float64 a hair under), times 100 is
    # 14.499999999999998, so 14, not 15. Node a scores exactly 28/200 → 14: a tie, which
    # the model breaks by name (a) and reports.
    nodes = [node("a", card(0, 200)), node("b", card(0, 200))]
    pods = [*used("a", 0, 1, 18), *used("b", 0, 1, 19), pod(card_mib=10)]
    cluster = load(scenario("volcano-vgpu", nodes, pods, card_policy="binpack", schedule_weight=1))
    assert place(cluster) == ("a", [0], 2)
