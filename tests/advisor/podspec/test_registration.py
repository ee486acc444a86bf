"""The schedulers' card registrations on the Node object, read as their decoders read them.

HAMi v2.10.0: `UnMarshalNodeDevices` (JSON) and `DecodeNodeDevices` (the colon form) in
pkg/device/devices.go. Volcano v1.15.0: `decodeNodeDevices` in
pkg/scheduler/api/devices/nvidia/vgpu/utils.go.
"""

from __future__ import annotations

import pytest

from advisor.podspec.registration import RegisteredCard, parse_registration


def test_hami_json_as_upstream_unmarshals_it() -> None:
    # HAMi v2.10.0 pkg/device/devices_test.go, TestUnMarshalNodeDevices "test two": health
    # false and numa 0 are left out of the JSON (omitempty) and read as false and 0.
    value = (
        '[{"index":1,"id":"id-1","count":1,"devmem":1024,"devcore":10,"type":"type",'
        '"health":true},{"index":2,"id":"id-2","count":2,"devmem":4096,"devcore":20,'
        '"type":"type2","health":false}]'
    )
    assert parse_registration("hami", value) == (
        RegisteredCard("id-1", 1, 1, 1024, 10, 0, True, "type"),
        RegisteredCard("id-2", 2, 2, 4096, 20, 0, False, "type2"),
    )


def test_hami_json_from_its_device_tests() -> None:
    # HAMi v2.10.0 pkg/device/nvidia/device_test.go (GetNodeDevices case, line 675).
    value = (
        '[{"id":"GPU-0","count":5,"devmem":8192,"devcore":100,"type":"NVIDIA-Tesla P4",'
        '"numa":0,"health":true,"index":0}]'
    )
    (card,) = parse_registration("hami", value)
    assert card == RegisteredCard("GPU-0", 0, 5, 8192, 100, 0, True, "NVIDIA-Tesla P4")


def test_hami_json_keys_match_without_case_as_go_does() -> None:
    # HAMi v2.10.0 pkg/device/ascend/device_test.go writes the keys capitalised.
    value = (
        '[{"ID":"GPU-0","Count":4,"Devmem":8738,"Devcore":8,"Type":"A910","Numa":1,"Health":true}]'
    )
    (card,) = parse_registration("hami", value)
    assert (card.uuid, card.slots, card.memory_mib, card.cores, card.numa) == (
        "GPU-0",
        4,
        8738,
        8,
        1,
    )


def test_hami_json_without_health_is_an_unhealthy_card() -> None:
    (card,) = parse_registration("hami", '[{"id":"GPU-0","count":10,"devmem":16384}]')
    assert card.healthy is False
    assert (card.index, card.cores, card.numa, card.model) == (0, 0, 0, "")


def test_hami_colon_form_from_its_protocol_document() -> None:
    # HAMi v2.10.0 docs/develop/protocol.md: id,count,devmem,devcore,type,numa,health:
    value = (
        "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,"
        "true:GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448,10,32768,100,"
        "NVIDIA-Tesla V100-PCIE-32GB,0,true:"
    )
    cards = parse_registration("hami", value)
    assert [c.uuid for c in cards] == [
        "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec",
        "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448",
    ]
    assert {(c.index, c.slots, c.memory_mib, c.cores, c.numa, c.healthy) for c in cards} == {
        (None, 10, 32768, 100, 0, True)
    }


def test_hami_colon_form_with_index_and_mode() -> None:
    # EncodeNodeDevices (v2.10.0): ...,numa,health,index,mode:
    (card,) = parse_registration("hami", "GPU-a,10,16384,100,T4,1,False,3,hami-core:")
    assert card == RegisteredCard("GPU-a", 3, 10, 16384, 100, 1, False, "T4")


def test_volcano_form() -> None:
    # UUID,Number,Memory,Type,Health,Mode: ; a card's id is its place in the list.
    value = "GPU-a,10,32768,NVIDIA-Tesla V100S,true,hami-core:GPU-b,4,16384,T4,false,hami-core:"
    assert parse_registration("volcano-vgpu", value) == (
        RegisteredCard("GPU-a", 0, 10, 32768, None, None, True, "NVIDIA-Tesla V100S"),
        RegisteredCard("GPU-b", 1, 4, 16384, None, None, False, "T4"),
    )


@pytest.mark.parametrize(
    ("profile", "value", "message"),
    [
        ("hami", "[{oops", "not JSON: "),
        ("hami", '{"id":"GPU-0"}', "not a JSON list"),
        ("hami", "[]", "registers no card"),
        ("hami", '[{"id":"GPU-0","count":"10","devmem":1}]', "device [0]: count '10'"),
        ("hami", '[{"id":"GPU-0","count":1.5,"devmem":1}]', "device [0]: count 1.5"),
        ("hami", '[{"id":"GPU-0","count":10,"devmem":2147483648}]', "device [0]: devmem"),
        ("hami", '[{"count":10,"devmem":1024}]', "device [0]: id '' is not a card id"),
        ("hami", '[{"id":"GPU-0","count":10,"devmem":1024,"health":"yes"}]', "type or health"),
        ("hami", '["GPU-0"]', "device [0] is not an object"),
        (
            "hami",
            '[{"id":"A","count":1,"devmem":1},{"id":"A","count":1,"devmem":1}]',
            "card 'A' is registered twice",
        ),
        ("hami", '[{"id":"A","devmem":1024,"health":true}]', "card 'A' registers 0 vGPU slots"),
        ("hami", '[{"id":"A","count":10,"health":true}]', "card 'A' registers 0 MiB"),
        ("hami", "GPU-a,10,16384,100,T4,0,true", "no ':' after a card"),
        ("hami", "GPU-a,10,16384,100,T4,0,true,0:", "has 8 fields, expected 7 or 9"),
        ("hami", "GPU-a,ten,16384,100,T4,0,true:", "'ten' is not an integer"),
        ("hami", "GPU-a,10,16384,100,T4,0,yes:", "health 'yes' is not true or false"),
        ("hami", "GPU-a,10,16384,100,T4,0,true,-1,hami-core:", "'-1' is out of range"),
        ("volcano-vgpu", "GPU-a,10,16384,T4,true,hami-core", "no ':' after a card"),
        ("volcano-vgpu", "GPU-a,10,16384,T4,true:", "has 5 fields, expected 6"),
        ("volcano-vgpu", "GPU-a,10,16 GiB,T4,true,hami-core:", "'16 GiB' is not an integer"),
        ("volcano-vgpu", ":::", "registers no card"),
        ("cce", "anything", "profile cce registers no cards"),
    ],
)
def test_malformed_registrations(profile: str, value: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:  # noqa: PT011 (the message is checked below)
        parse_registration(profile, value)
    assert message in str(caught.value)


def test_mig_mode_is_read_from_each_form() -> None:
    # Volcano v1.15.1 getSharingMode (vgpu/utils.go:325): `mig`, anything else hami-core.
    value = "GPU-a,10,81920,NVIDIA H100,true,mig:GPU-b,10,81920,NVIDIA H100,true,mps:"
    assert [c.mig for c in parse_registration("volcano-vgpu", value)] == [True, False]
    # HAMi v2.10.0: the JSON `mode`, the colon form's ninth field (MigMode = "mig").
    value = '[{"id":"GPU-0","count":1,"devmem":1,"mode":"mig"},{"id":"GPU-1","count":1,"devmem":1}]'
    assert [c.mig for c in parse_registration("hami", value)] == [True, False]
    (card,) = parse_registration("hami", "GPU-a,10,16384,100,A100,1,true,3,mig:")
    assert card.mig
    (card,) = parse_registration("hami", "GPU-a,10,16384,100,A100,1,true:")
    assert not card.mig
