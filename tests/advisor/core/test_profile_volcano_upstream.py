"""Volcano v1.15.0's own vGPU tests, replayed on the `volcano-vgpu` profile.

Sources: pkg/scheduler/api/devices/nvidia/vgpu/utils_test.go and
pkg/scheduler/plugins/deviceshare/deviceshare_test.go at tag v1.15.0 (the release whose
card orders, PR #5252, the profile models). Their helper `makeGPUDevices(name, n, 16384,
4)` gives n idle 16384-MiB cards with Number 4 (slots); `makeVGPUPod` asks 1 card, the
given memory and 25 % core. PodGroup anti-co-location (spread_integration_test.go) and
the UUID lists (added after v1.15.0) are not modelled.
"""

from __future__ import annotations

from advisor.core.diagnose import diagnose
from advisor.core.model import Cluster
from tests.advisor.core.profile_helpers import (
    VOLCANO,
    VOLCANO_TAG,
    Data,
    Upstream,
    card,
    load,
    node,
    place,
    pod,
    scaled,
    scenario,
    used,
    walk_on,
)

VGPU = "pkg/scheduler/api/devices/nvidia/vgpu/utils_test.go"
DEVICESHARE = "pkg/scheduler/plugins/deviceshare/deviceshare_test.go"
SORTED = Upstream(VOLCANO, VOLCANO_TAG, VGPU, "TestSortedDeviceIndicesByPolicy_PicksExpectedDevice")
STACKS = Upstream(VOLCANO, VOLCANO_TAG, VGPU, "TestBinpackStacksSequentialPods")
VGPU_SCORE = Upstream(VOLCANO, VOLCANO_TAG, DEVICESHARE, "TestVgpuScore")
FILTER_NODE = Upstream(VOLCANO, VOLCANO_TAG, DEVICESHARE, "Test_FilterNode")


def gpu_devices(n: int, running: list[Data], pods: list[Data], policy: str) -> Cluster:
    """makeGPUDevices("node-1", n, 16384, 4) with these pods."""
    cards = [card(i, 16384, max_vgpus=4) for i in range(n)]
    return load(
        scenario("volcano-vgpu", [node("node-1", *cards)], [*running, *pods], card_policy=policy)
    )


def vgpu_pod(name: str = "default/worker") -> Data:
    return pod(name, card_mib=4096, card_core=25)


def test_sorted_device_indices_by_policy_picks_expected_device() -> None:
    seeded = used("node-1", 0, 1, 4096)  # dev0: UsedMem 4096, UsedNum 1
    for name, n, running, policy, want in (
        ("binpack picks busier device", 2, seeded, "binpack", 0),
        ("spread picks idle device over shared one", 2, seeded, "spread", 1),
        # policy "": deviceshare.SchedulePolicy unset, the walk from the last card
        ("unset policy preserves legacy descending-index order", 3, [], "legacy", 2),
    ):
        cluster = gpu_devices(n, running, [vgpu_pod()], policy)
        assert walk_on(cluster, "node-1") == [want], SORTED.cite(name)


def test_binpack_stacks_sequential_pods() -> None:
    # The first pod meets three idle cards (UsedMem ties go to the lowest index: dev0); then
    # dev0 holds the most memory, so the next two follow it (upstream asserts "the same GPU").
    pods = [vgpu_pod(f"default/worker-{x}") for x in "abc"]
    verdicts = diagnose(gpu_devices(3, [], pods, "binpack")).pods
    assert [d.placement.cards if d.placement else None for d in verdicts] == [(0,)] * 3, (
        STACKS.cite()
    )


def scored(
    cards: dict[str, tuple[int, int]], weight: int, policy: str = "binpack"
) -> tuple[str, list[int], int] | None:
    """The pick among one-card nodes {name: (card MiB, MiB already used)} for a 1024-MiB pod
    (1000 MiB scaled), under deviceshare.ScheduleWeight `weight`."""
    nodes = [node(name, card(0, mib, max_vgpus=10)) for name, (mib, _) in cards.items()]
    running = [p for name, (_, mib) in cards.items() if mib for p in used(name, 0, 1, mib)]
    data = scenario(
        "volcano-vgpu",
        nodes,
        [*running, pod(card_mib=scaled(1000))],
        card_policy=policy,
        schedule_weight=weight,
    )
    return place(load(data))


def test_vgpu_score() -> None:
    # node1: one 30000-MiB card (30720), Number 10, UsedNum 1, UsedMem 3000 (3072); a 1000-MiB
    # pod (1024). Binpack: 100 · 4096/30720 = 13.33 (upstream: "≈ 4000·100/30000"), rounded
    # to 13 and times the weight. A reference node scoring exactly 13 (100 · 1300/10000)
    # ties with it, and one scoring 14 (100 · 1400/10000) beats it.
    upstream = (scaled(30000), scaled(3000))
    for weight in (1, 3):
        where = VGPU_SCORE.cite(f"binpack, deviceshare.ScheduleWeight {weight}")
        assert scored({"node1": upstream, "ref": (10000, 276)}, weight) == ("node1", [0], 2), where
        assert scored({"node1": upstream, "ref": (10000, 376)}, weight) == ("ref", [0], 1), where
        assert scored({"node1": upstream, "ref": (10000, 176)}, weight) == ("node1", [0], 1), where
    # node2 idle, spread: the upstream check (score - 100 > 0.05 fails) passes with 0, which is
    # what hami-core mode gives after TryAddPod: every node scores 0 and ties.
    where = VGPU_SCORE.cite("spread on an idle card")
    assert scored({"node2": (scaled(30000), 0), "ref": (10000, 376)}, 1, "spread") == (
        "node2",
        [0],
        2,
    ), where


def test_filter_node() -> None:
    # Cards of 30000, 20000 and 30000 MiB, Number 10; 3 cards at 100 % core each and no memory
    # (100 % of each card): fits, on all three.
    cluster = load(
        scenario(
            "volcano-vgpu",
            [
                node(
                    "node1",
                    *(
                        card(i, scaled(m), max_vgpus=10)
                        for i, m in enumerate((30000, 20000, 30000))
                    ),
                )
            ],
            [pod("ns/p1", gpus=3, card_core=100)],
            card_policy="binpack",
        )
    )
    where = FILTER_NODE.cite("case0, should allocated 3 card with diff memory for pod")
    walk = walk_on(cluster, "node1")
    assert walk is not None, where
    assert sorted(walk) == [0, 1, 2], where
    (verdict,) = diagnose(cluster).pods
    assert verdict.cause == "schedulable", where


def test_no_health_check() -> None:
    """Hand case: checkNodeGPUSharingPredicateAndScore never reads GPUDevice.Health (v1.15.0
    utils.go), so an unhealthy card takes a pod like any other. Legacy order walks from the
    last card: card 1 (unhealthy) first."""
    cluster = load(
        scenario(
            "volcano-vgpu",
            [node("n", card(0, 16384), card(1, 16384, healthy=False))],
            [vgpu_pod()],
        )
    )
    (verdict,) = diagnose(cluster).pods
    assert verdict.placement is not None
    assert (verdict.placement.node, verdict.placement.cards) == ("n", (1,))
    # The same cluster under HAMi refuses the card (CardNotHealth) and uses card 0.
    hami = load(
        scenario("hami", [node("n", card(0, 16384), card(1, 16384, healthy=False))], [vgpu_pod()])
    )
    assert walk_on(hami, "n") == [0]
