"""Allocation annotations: HAMi / Volcano vGPU entries, CCE indices, container alignment."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor.podspec import AllocatedCard, parse_allocation
from advisor.podspec.allocation import align_allocation, parse_gpu_index

A = AllocatedCard("GPU-aaa", 4096, 30)
B = AllocatedCard("GPU-bbb", 4096, 30)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", ()),
        ("  ", ()),
        ("GPU-aaa,NVIDIA,4096,30:GPU-bbb,NVIDIA,4096,30:;", ((A, B),)),  # HAMi, one container
        ("GPU-aaa,NVIDIA,4096,30:GPU-bbb,NVIDIA,4096,30", ((A, B),)),  # no terminators
        ("GPU-aaa,NVIDIA,4096,30:;GPU-bbb,NVIDIA,4096,30:", ((A,), (B,))),  # Volcano join
        (";;GPU-aaa,NVIDIA,4096,30:;", ((), (), (A,))),  # HAMi: init, sidecar, GPU container
        ("GPU-aaa,NVIDIA,4096,30:;;", ((A,), ())),  # last container empty
        (";", ((),)),
        ("GPU-aaa,NVIDIA,4096,30::", ((A,),)),
        (" GPU-aaa , NVIDIA , 4096 , 30 :", ((A,),)),
        ("GPU-aaa,NVIDIA,4096,30,extra,fields:", ((A,),)),  # room for newer writers
        (",,0,0:;GPU-aaa,NVIDIA,4096,30:;", ((), (A,))),  # padding entry of some HAMi versions
    ],
)
def test_parse_allocation(value: str, expected: tuple[tuple[AllocatedCard, ...], ...]) -> None:
    assert parse_allocation(value) == expected


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("GPU-aaa", "card entry 'GPU-aaa' has 1 field, expected UUID,Type,memMiB,cores"),
        ("GPU-aaa,NVIDIA,-1,0", "card entry 'GPU-aaa,NVIDIA,-1,0': '-1' is negative"),
        ("GPU-aaa,NVIDIA,1,", "card entry 'GPU-aaa,NVIDIA,1,': '' is not an integer"),
        (",NVIDIA,1,0", "card entry ',NVIDIA,1,0' has an empty UUID"),
    ],
)
def test_parse_allocation_errors(value: str, message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        parse_allocation(value)


def test_parse_allocation_rejects_non_strings() -> None:
    with pytest.raises(ValueError, match="is not a string"):
        parse_allocation(None)  # type: ignore[arg-type]


uuids = (
    st.text(
        alphabet=st.characters(
            codec="ascii", exclude_characters=",:;", categories=("L", "N", "P", "S", "Zs")
        ),
        min_size=1,
        max_size=40,
    )
    .map(str.strip)
    .filter(bool)
)
cards = st.builds(
    AllocatedCard,
    card=uuids,
    memory_mib=st.integers(0, 2**31 - 1),
    core_percent=st.integers(0, 100),
)
pods = st.lists(st.lists(cards, max_size=8).map(tuple), max_size=6).map(tuple)
card_types = st.sampled_from(["NVIDIA", "Tesla T4", "NVIDIA-A100-SXM4-80GB"])


def encode_hami(pod: tuple[tuple[AllocatedCard, ...], ...], card_type: str) -> str:
    """HAMi's layout: every card followed by ':', every container by ';'."""
    return "".join(
        "".join(f"{c.card},{card_type},{c.memory_mib},{c.core_percent}:" for c in container) + ";"
        for container in pod
    )


def encode_volcano(pod: tuple[tuple[AllocatedCard, ...], ...]) -> str:
    """Volcano's layout: containers joined by ';' with no terminator."""
    return ";".join(
        "".join(f"{c.card},NVIDIA,{c.memory_mib},{c.core_percent}:" for c in container)
        for container in pod
    )


@given(pods, card_types)
def test_hami_encoding_round_trips(pod: tuple[tuple[AllocatedCard, ...], ...], kind: str) -> None:
    assert parse_allocation(encode_hami(pod, kind)) == pod


@given(pods.filter(lambda p: bool(p) and bool(p[-1])))
def test_volcano_encoding_round_trips(pod: tuple[tuple[AllocatedCard, ...], ...]) -> None:
    # A join cannot tell a last empty container from none; such pods are left out.
    assert parse_allocation(encode_volcano(pod)) == pod


def test_parse_gpu_index() -> None:
    assert parse_gpu_index("2, 0,") == (
        AllocatedCard("2", None, None),
        AllocatedCard("0", None, None),
    )
    with pytest.raises(ValueError, match="listed twice"):
        parse_gpu_index("0,00")


X = (A,)


@pytest.mark.parametrize(
    ("entries", "n_init", "n_containers", "gpu", "expected"),
    [
        (((), (), X), 1, 2, [1], {1: X}),  # current HAMi: init first
        (((), X), 0, 2, [1], {1: X}),  # older HAMi: every container
        ((X,), 0, 3, [2], {2: X}),  # Volcano: GPU containers only
        ((X, (B,)), 0, 3, [0, 2], {0: X, 2: (B,)}),
        ((X, ()), 0, 1, [0], {0: X}),  # a trailing empty entry too many
        ((), 0, 2, [0], {}),
        (((), (), ()), 0, 1, [0], {}),
    ],
)
def test_align_allocation(
    entries: tuple[tuple[AllocatedCard, ...], ...],
    n_init: int,
    n_containers: int,
    gpu: list[int],
    expected: dict[int, tuple[AllocatedCard, ...]],
) -> None:
    assert align_allocation(entries, n_init, n_containers, gpu) == expected


def test_align_allocation_refuses_cards_on_init_containers() -> None:
    with pytest.raises(ValueError, match="2 container entries do not match"):
        align_allocation((X, (B,)), 1, 1, [0])
