"""Assembling a HAMi or Volcano vGPU cluster: the profile, its defaults, and the cards as the
scheduler registered them on the node, joined to what the exporter reports."""

from __future__ import annotations

import json
from types import MappingProxyType
from typing import Any

from advisor.core.model import Card, Placement, Policy, Request, Scheduler
from advisor.podspec.registration import HAMI_REGISTER, VOLCANO_REGISTER
from advisor.sources.assemble import Assembled, assemble
from advisor.sources.profile_detect import SchedulerChoice
from advisor.sources.values import KubeNode, KubeState, Sample
from tests.advisor.sources.builders import card, node_info, parsed, per_card_pod, vgpu


def hami_json(*devices: dict[str, Any]) -> str:
    return json.dumps(list(devices))


def device(uuid: str, index: int, **fields: Any) -> dict[str, Any]:
    base = {"id": uuid, "index": index, "count": 10, "devmem": 16384, "devcore": 100}
    return {**base, "type": "NVIDIA-Tesla T4", "numa": 0, "health": True, **fields}


def kube(registration: dict[str, str], *pods: dict[str, Any]) -> KubeState:
    node = KubeNode("n1", registrations=MappingProxyType(registration))
    return KubeState("kubernetes test", tuple(parsed(p) for p in pods), (node,))


def two_cards() -> list[Sample]:
    return [node_info("n1"), *card("n1", 0), *card("n1", 1)]


def run(samples: list[Sample], state: KubeState, scheduler: SchedulerChoice = "hami") -> Assembled:
    return assemble(samples, state, scheduler=scheduler)


def test_hami_cards_are_the_registered_ones() -> None:
    unhealthy = device("GPU-n1-1", 1, count=4, numa=1)
    del unhealthy["health"]  # left out when false (omitempty): unhealthy
    registration = hami_json(device("GPU-n1-0", 0, devmem=15360, numa=0), unhealthy)
    result = run(two_cards(), kube({HAMI_REGISTER: registration}))
    assert result.warnings == ()
    cluster = result.cluster
    assert (cluster.scheduler, cluster.policy, cluster.max_vgpus_per_card) == (
        Scheduler("hami"),
        Policy("binpack", "spread"),
        10,
    )
    (node,) = cluster.nodes
    assert node.cards == (
        Card(0, 15360, "Tesla T4", True, "GPU-n1-0", numa=0, max_vgpus=10),
        Card(1, 16384, "Tesla T4", False, "GPU-n1-1", numa=1, max_vgpus=4),
    )


def test_volcano_cards_are_the_registered_ones() -> None:
    value = "GPU-n1-0,4,16000,T4,true,hami-core:GPU-n1-1,8,16384,T4,false,hami-core:"
    result = run(two_cards(), kube({VOLCANO_REGISTER: value}), "volcano-vgpu")
    assert result.warnings == ()
    assert result.cluster.policy == Policy("binpack", "legacy")
    assert result.cluster.nodes[0].cards == (
        Card(0, 16000, "Tesla T4", True, "GPU-n1-0", max_vgpus=4),
        Card(1, 16384, "Tesla T4", False, "GPU-n1-1", max_vgpus=8),
    )


def test_a_card_in_volcanos_mig_mode_is_warned_about() -> None:
    value = "GPU-n1-0,4,16384,T4,true,hami-core:GPU-n1-1,8,16384,T4,true,mig:"
    result = run(two_cards(), kube({VOLCANO_REGISTER: value}), "volcano-vgpu")
    (warning,) = result.warnings
    assert warning.startswith("node n1: card 1 (GPU-n1-1) registered in the scheduler's MIG mode")
    assert len(result.cluster.nodes[0].cards) == 2  # still judged, as vGPU cards


def test_another_profiles_registration_is_not_read() -> None:
    registration = {HAMI_REGISTER: hami_json(device("GPU-n1-0", 0, count=2))}
    for scheduler in ("cce", "volcano-vgpu"):
        cards = run(two_cards(), kube(registration), scheduler).cluster.nodes[0].cards
        assert cards == (
            Card(0, 16384, "Tesla T4", True, "GPU-n1-0"),
            Card(1, 16384, "Tesla T4", True, "GPU-n1-1"),
        )


def test_the_registration_is_joined_by_uuid_not_by_place() -> None:
    # Listed in the other order, with indices that do not tell the cards apart (all 0).
    registration = hami_json(device("GPU-n1-1", 0, count=3), device("GPU-n1-0", 0, count=5))
    cards = run(two_cards(), kube({HAMI_REGISTER: registration})).cluster.nodes[0].cards
    assert [(c.index, c.uuid, c.max_vgpus) for c in cards] == [
        (0, "GPU-n1-0", 5),
        (1, "GPU-n1-1", 3),
    ]


def test_a_card_the_scheduler_does_not_see_is_left_out_with_its_pods() -> None:
    samples = [*two_cards(), *vgpu("n1", "ml/a", 1, 4096)]
    state = kube({HAMI_REGISTER: hami_json(device("GPU-n1-0", 0))})
    result = run(samples, state)
    assert [c.index for c in result.cluster.nodes[0].cards] == [0]
    assert result.cluster.pods == ()
    assert result.warnings == (
        "node n1: card 1 (GPU-n1-1) not registered to the scheduler, which never uses them; "
        "left out",
        "pod ml/a on node n1: holds a card the model left out; pod left out",
    )


def test_a_card_only_the_registration_lists_is_modelled_from_it() -> None:
    registration = hami_json(device("GPU-n1-0", 0), device("GPU-x", 2, devmem=8192, numa=1))
    result = run([node_info("n1"), *card("n1", 0)], kube({HAMI_REGISTER: registration}))
    assert result.cluster.nodes[0].cards[1] == Card(
        2, 8192, "NVIDIA-Tesla T4", True, "GPU-x", numa=1, max_vgpus=10
    )
    assert result.warnings == (
        "node n1: card 2 (GPU-x) registered but not reported by the exporter: modelled "
        "from the registration, with no vGPU known on them",
    )


def test_malformed_registration_falls_back_to_the_exporter_cards() -> None:
    for value, why in (
        ("[{", "not JSON: "),
        (hami_json(device("GPU-n1-0", 0, count=0)), "card 'GPU-n1-0' registers 0 vGPU slots"),
        # index 1 is the exporter's GPU-n1-1: the registration names another card there
        (hami_json(device("GPU-zz", 1)), "card GPU-zz (index 1) is not the card the exporter"),
    ):
        result = run(two_cards(), kube({HAMI_REGISTER: value}))
        assert [c.max_vgpus for c in result.cluster.nodes[0].cards] == [None, None]
        (warning,) = result.warnings
        assert warning.startswith(f"node n1: annotation {HAMI_REGISTER}: {why}"), warning
        assert warning.endswith("; cards as the exporter reports them")


def test_core_scaling_is_said() -> None:
    registration = hami_json(device("GPU-n1-0", 0, devcore=200), device("GPU-n1-1", 1))
    result = run(two_cards(), kube({HAMI_REGISTER: registration}))
    assert result.warnings == (
        "node n1: cards register 200% cores (core scaling); the model holds 100% per card",
    )


def test_a_card_over_its_registered_slots_is_modelled_with_them_all() -> None:
    samples = [*two_cards()] + [s for p in "abc" for s in vgpu("n1", f"ml/{p}", 0, 1024)]
    registration = hami_json(device("GPU-n1-0", 0, count=2), device("GPU-n1-1", 1))
    result = run(samples, kube({HAMI_REGISTER: registration}))
    assert result.cluster.nodes[0].cards[0].max_vgpus == 3
    assert result.cluster.max_vgpus_per_card == 10
    assert result.warnings[0] == (
        "node n1 card 0 hosts 3 vGPUs, above its 2 registered slots; modelled with 3"
    )


def test_isolation_modes_mix_outside_cce() -> None:
    samples = [*two_cards(), *vgpu("n1", "ml/a", 0, 1024, 20), *vgpu("n1", "ml/b", 0, 1024)]
    state = KubeState("kubernetes test")
    assert len(run(samples, state).cluster.running) == 2
    cce = run(samples, state, "cce")
    assert [p.name for p in cce.cluster.running] == ["ml/a"]
    assert "card 0 mixes isolation modes" in cce.warnings[0]


def test_a_running_share_keeps_its_request_when_it_matches_the_allotment() -> None:
    share = per_card_pod(
        "ml/share",
        {"nvidia.com/gpu": 2, "nvidia.com/gpumem-percentage": 25},
        node="n1",
        allocated=(("GPU-n1-0", 4096, 0), ("GPU-n1-1", 4096, 0)),
    )
    whole = per_card_pod(
        "ml/whole",
        {"nvidia.com/gpu": 1, "nvidia.com/gpucores": 100},
        node="n2",
        allocated=(("GPU-n2-0", 16384, 100),),
    )
    odd = per_card_pod(
        "ml/odd",
        {"nvidia.com/gpu": 1, "nvidia.com/gpumem-percentage": 50},
        node="n2",
        allocated=(("GPU-n2-1", 4096, 0),),
    )
    samples = [*two_cards(), node_info("n2"), *card("n2", 0), *card("n2", 1)]
    samples += vgpu("n1", "ml/share", 0, 4096) + vgpu("n1", "ml/share", 1, 4096)
    samples += vgpu("n2", "ml/whole", 0, 16384, 100) + vgpu("n2", "ml/odd", 1, 4096)
    state = KubeState("kubernetes test", tuple(parsed(p) for p in (share, whole, odd)))
    pods = {p.name: p for p in run(samples, state).cluster.pods}
    # 25 % of 16384 MiB is the 4096 MiB reported on each card: the share stands.
    assert pods["ml/share"].request == Request(gpus=2, memory_mib=0, memory_percent=25)
    assert pods["ml/share"].placement == Placement("n1", (0, 1))
    assert pods["ml/whole"].request == Request(gpus=1, memory_mib=0, core_percent=100)
    # 50 % would be 8192 MiB, the exporter reports 4096: what it holds stands.
    assert pods["ml/odd"].request == Request(gpus=1, memory_mib=4096)
    # Judged as cce, only what the exporter reports.
    as_cce = {p.name: p for p in run(samples, state, "cce").cluster.pods}
    assert as_cce["ml/share"].request == Request(gpus=2, memory_mib=8192)


def test_a_pending_whole_card_or_share_is_invalid_under_cce_only() -> None:
    whole = per_card_pod("ml/whole", {"nvidia.com/gpu": 1})
    share = per_card_pod(
        "ml/share", {"volcano.sh/vgpu-memory-percentage": 50, "volcano.sh/vgpu-number": 1}
    )
    state = KubeState("kubernetes test", (parsed(whole), parsed(share)))
    pending = {p.name: p for p in run(two_cards(), state, "cce").cluster.pending}
    assert pending["ml/whole"].invalid == (
        "asks whole cards (hami resources), which CCE xGPU does not share; "
        "pass --scheduler hami if that scheduler places it"
    )
    assert pending["ml/share"].invalid == (
        "asks a share of each card (volcano-vgpu resources), which CCE xGPU does not share; "
        "pass --scheduler volcano-vgpu if that scheduler places it"
    )
    assert {p.invalid for p in run(two_cards(), state, "hami").cluster.pending} == {None}
