"""`--scheduler auto`: the profile from the cluster's own marks, and each profile's settings."""

from __future__ import annotations

from types import MappingProxyType

import pytest

from advisor.core.model import Policy, Scheduler
from advisor.errors import InputError
from advisor.podspec.registration import HAMI_REGISTER, VOLCANO_REGISTER
from advisor.sources.profile_detect import choose_profile, detect_profile, scheduler_settings
from advisor.sources.values import KubeNode, KubeState
from tests.advisor.sources.builders import cce_pod, parsed, per_card_pod

HAMI_ALLOCATED = "hami.io/vgpu-devices-allocated"
VOLCANO_ALLOCATED = "volcano.sh/vgpu-ids-new"


def hami(key: str, node: str | None = "n1") -> object:
    return parsed(
        per_card_pod(key, {"nvidia.com/gpu": 1}, node=node, allocated=(("GPU-a", 1024, 0),))
    )


def volcano(key: str) -> object:
    limits: dict[str, str | int] = {"volcano.sh/vgpu-number": 1}
    allocated = (("GPU-b", 1024, 0),)
    return parsed(
        per_card_pod(key, limits, node="n2", allocated=allocated, allocation=VOLCANO_ALLOCATED)
    )


def cce(key: str) -> object:
    return parsed(cce_pod(key, node="n3", cards=(0,)))


def state(*pods: object, nodes: tuple[KubeNode, ...] = ()) -> KubeState:
    return KubeState("kubernetes test", tuple(pods), nodes)  # type: ignore[arg-type]


def registered(name: str, *keys: str) -> KubeNode:
    return KubeNode(name, registrations=MappingProxyType(dict.fromkeys(keys, "x")))


def test_each_schedulers_allocation_annotation_names_its_profile() -> None:
    assert detect_profile(state(hami("ml/a"), hami("ml/b"))).profile == "hami"
    assert detect_profile(state(volcano("ml/a"))).profile == "volcano-vgpu"
    assert detect_profile(state(cce("ml/a"))).profile == "cce"
    found = detect_profile(state(hami("ml/a"), hami("ml/b")))
    assert found.evidence == f"{HAMI_ALLOCATED} on 2 pods"


def test_no_mark_is_cce() -> None:
    assert detect_profile(None).profile == "cce"
    assert detect_profile(state()).profile == "cce"
    # A Pending pod bound nowhere is no evidence, whatever it carries.
    assert detect_profile(state(hami("ml/a", node=None))).profile == "cce"


def test_without_placed_pods_the_nodes_registrations_decide() -> None:
    nodes = (registered("n1", HAMI_REGISTER), registered("n2"))
    found = detect_profile(state(nodes=nodes))
    assert (found.profile, found.evidence) == ("hami", f"{HAMI_REGISTER} on 1 node")
    # Placed pods outrank the nodes' registrations.
    assert detect_profile(state(volcano("ml/a"), nodes=nodes)).profile == "volcano-vgpu"


def test_two_schedulers_marks_are_an_input_error_naming_both() -> None:
    with pytest.raises(InputError) as caught:
        detect_profile(state(hami("ml/p"), hami("ml/a"), cce("web/q")))
    assert str(caught.value) == (
        f"--scheduler auto: pods carry both {HAMI_ALLOCATED} (hami, e.g. ml/a) and "
        "volcano.sh/gpu-index (cce, e.g. web/q); pass --scheduler to choose"
    )


def test_three_schedulers_marks() -> None:
    # The most carried first, then by annotation name.
    with pytest.raises(InputError) as caught:
        detect_profile(state(cce("a/x"), hami("b/y"), volcano("c/z"), volcano("c/w")))
    assert str(caught.value) == (
        f"--scheduler auto: pods carry {VOLCANO_ALLOCATED} (volcano-vgpu, e.g. c/w), "
        f"{HAMI_ALLOCATED} (hami, e.g. b/y) and volcano.sh/gpu-index (cce, e.g. a/x); "
        "pass --scheduler to choose"
    )


def test_two_registrations_are_an_input_error_too() -> None:
    nodes = (registered("n1", HAMI_REGISTER), registered("n2", VOLCANO_REGISTER))
    with pytest.raises(InputError, match=r"^--scheduler auto: nodes carry both "):
        detect_profile(state(nodes=nodes))


def test_a_named_profile_is_taken_as_given() -> None:
    mixed = state(hami("ml/p"), cce("web/q"))
    assert choose_profile("cce", mixed).profile == "cce"
    assert choose_profile("volcano-vgpu", None).profile == "volcano-vgpu"
    assert choose_profile(None, state(hami("ml/p"))).profile == "hami"
    with pytest.raises(InputError, match=r"^--scheduler: expected one of auto, cce, hami, "):
        choose_profile("yarn", None)


@pytest.mark.parametrize(
    ("profile", "policy", "limit"),
    [
        ("cce", Policy("binpack", "binpack"), 20),
        ("hami", Policy("binpack", "spread"), 10),
        ("volcano-vgpu", Policy("binpack", "legacy"), 10),
    ],
)
def test_each_profiles_defaults(profile: str, policy: Policy, limit: int) -> None:
    assert scheduler_settings(profile) == (Scheduler(profile), policy, limit)


def test_given_settings_win() -> None:
    assert scheduler_settings("hami", "spread", "binpack", 4) == (
        Scheduler("hami"),
        Policy("spread", "binpack"),
        4,
    )
    assert scheduler_settings("volcano-vgpu", None, "spread")[1] == Policy("binpack", "spread")


def test_a_card_policy_the_profile_lacks_is_an_input_error() -> None:
    with pytest.raises(InputError) as caught:
        scheduler_settings("hami", card_policy="legacy")
    assert str(caught.value) == (
        "--card-policy legacy is not a card policy of hami (one of binpack, spread)"
    )
    with pytest.raises(InputError, match="volcano-vgpu only"):
        scheduler_settings("volcano-vgpu", node_policy="legacy")
