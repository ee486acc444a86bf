"""Volcano v1.15.1's own MIG-mode tests (pkg/scheduler/api/devices/nvidia/vgpu/mig_test.go),
replayed on `advisor.core.profiles.volcano_mig`: each table row as Go writes it."""

from __future__ import annotations

import pytest

from advisor.core.profiles.volcano_mig import (
    Geometry,
    Match,
    MigTemplate,
    MigUse,
    find_match,
    instance_id,
    parse_instance_id,
    release,
    take,
    try_add,
)
from tests.advisor.core.profile_helpers import VOLCANO, Upstream

TAG = "v1.15.1"
MIG_TEST = "pkg/scheduler/api/devices/nvidia/vgpu/mig_test.go"
FIND = Upstream(VOLCANO, TAG, MIG_TEST, "TestFindMatch")
ADD_SUB = Upstream(VOLCANO, TAG, MIG_TEST, "TestAddAndSubMigUsed")
TRY_FACTOR = Upstream(VOLCANO, TAG, MIG_TEST, "TestMIGFactory_TryAddPod_WithMemoryFactor")
ADD_FACTOR = Upstream(VOLCANO, TAG, MIG_TEST, "TestMIGFactory_AddPod_WithMemoryFactor")
SUB_FACTOR = Upstream(VOLCANO, TAG, MIG_TEST, "TestMIGFactory_SubPod_WithMemoryFactor")


def group(name: str, *templates: tuple[str, int, int]) -> Geometry:
    return Geometry(name, tuple(MigTemplate(n, m, c) for n, m, c in templates))


def held(
    *entries: tuple[str, int, tuple[int, ...]],
) -> tuple[tuple[str, int, tuple[int, ...]], ...]:
    return entries


ONE_TWO = group("group1", ("1g.10gb", 10240, 2), ("2g.20gb", 20480, 1))

# name, uuid, request, usage, groups, (fit, uuid, memory): TestFindMatch's rows
FIND_ROWS = [
    (
        "Match 1g.10gb and available",
        "gpu-1234",
        10,
        MigUse(0, held(("1g.10gb", 10240, ()))),
        (group("default", ("1g.10gb", 10240, 2)),),
        (True, "gpu-1234[default-0]", 10240),
    ),
    (
        "No match due to memory too high",
        "gpu-1234",
        20000,
        MigUse(0, held(("1g.10gb", 10, ()))),
        (group("default", ("1g.10gb", 10, 1)),),
        (False, "", 0),
    ),
    (
        "Empty geometry list",
        "gpu-1234",
        10,
        MigUse(0, ()),
        (Geometry("", ()),),
        (False, "", 0),
    ),
    (
        "No matching MIG template in geometry",
        "gpu-0002",
        20,
        MigUse(0, held(("1g.10gb", 10, ()))),
        (group("default", ("2g.20gb", 20, 1)),),
        (False, "", 0),
    ),
    (
        "MIG instance already in use",
        "gpu-0003",
        10,
        MigUse(0, held(("1g.10gb", 10, (0,)))),
        (group("default", ("1g.10gb", 10, 1)),),
        (False, "", 0),
    ),
    (
        "Multiple templates, pick first matching and available",
        "gpu-1234",
        20,
        MigUse(None, ()),
        (group("group1", ("1g.10gb", 10, 1)), group("group2", ("2g.20gb", 24, 1))),
        (True, "gpu-1234[group2-0]", 24),
    ),
    (
        "Request memory smaller than template, still match",
        "gpu-0005",
        5,
        MigUse(0, ()),
        (group("default", ("1g.10gb", 10, 1)),),
        (True, "gpu-0005[default-0]", 10),
    ),
]


@pytest.mark.parametrize("row", FIND_ROWS, ids=[r[0] for r in FIND_ROWS])
def test_find_match_upstream(row: tuple[object, ...]) -> None:
    name, uuid, request, usage, groups, want = row
    assert isinstance(uuid, str)
    assert isinstance(request, int)
    assert isinstance(usage, MigUse)
    assert isinstance(groups, tuple)
    found = find_match(groups, usage, request)
    got = (
        (False, "", 0)
        if found is None
        else (True, instance_id(uuid, groups[found.group].group, found.position), found.memory_mib)
    )
    assert got == want, FIND.cite(str(name))


# name, groups, group name, position, (add memory, position held), sub memory
ADD_SUB_ROWS = [
    ("Add then Sub with valid position", group("group-a", ("1g.10gb", 10240, 2)), "group-a", 1,
     (10240, 1), 10240),
    ("Add twice same instance, then sub once", group("group-b", ("2g.20gb", 20480, 3)),
     "group-b", 1, (20480, 1), 20480),
    ("Sub from unused slot returns 0", group("group-c", ("3g.30gb", 30720, 1)), "group-c", 0,
     (30720, 0), 30720),
    ("Invalid group name should return 0", group("group-d", ("1g.10gb", 10240, 1)),
     "nonexistent-group", 0, (0, None), 0),
]  # fmt: skip


@pytest.mark.parametrize(
    ("name", "geometry", "group_name", "position", "added", "sub_mem"),
    ADD_SUB_ROWS,
    ids=[r[0] for r in ADD_SUB_ROWS],
)
def test_add_and_sub_mig_used_upstream(
    name: str,
    geometry: Geometry,
    group_name: str,
    position: int,
    added: tuple[int, int | None],
    sub_mem: int,
) -> None:
    add_mem, pos = added
    after_add, memory = take((geometry,), MigUse(), group_name, position)
    assert memory == add_mem, ADD_SUB.cite(name)
    positions = [i for _, _, idx in after_add.used for i in idx]
    assert (pos in positions) if pos is not None else not positions, ADD_SUB.cite(name)
    after_sub, memory = release((geometry,), after_add, group_name, position)
    assert memory == sub_mem, ADD_SUB.cite(name)
    assert after_sub.used == (), ADD_SUB.cite(name)  # wantAfterSubLen 0 in every row


@pytest.mark.parametrize(
    ("name", "factor", "asked", "returned", "recorded"),
    [
        ("MemoryFactor=1, request 10MB matches 1g.10gb", 1, 10, 10240, 10240),
        ("MemoryFactor=2, request 6GB matches 1g.10gb", 2, 6144, 20480, 10240),
    ],
)
def test_try_add_pod_with_memory_factor_upstream(
    name: str, factor: int, asked: int, returned: int, recorded: int
) -> None:
    found = try_add((ONE_TWO,), MigUse(), asked, factor)
    assert found is not None, TRY_FACTOR.cite(name)
    match, used = found
    assert used == recorded, TRY_FACTOR.cite(name)  # expectedDeviceMem
    # The Go test then decodes the id and calls addMigUsed: the template's raw memory.
    group_name, position = parse_instance_id(instance_id("gpu-1234", ONE_TWO.group, match.position))
    assert group_name == "group1", TRY_FACTOR.cite(name)
    assert take((ONE_TWO,), MigUse(), group_name, position)[1] == returned, TRY_FACTOR.cite(name)


@pytest.mark.parametrize(
    ("name", "factor", "recorded"),
    [
        ("AddPod with MemoryFactor=1, request 10MB matches 1g.10gb", 1, 10240),
        ("AddPod with MemoryFactor=2, request 6GB matches 1g.10gb", 2, 5120),
    ],
)
def test_add_pod_with_memory_factor_upstream(name: str, factor: int, recorded: int) -> None:
    """AddPod of `gpu-1234[group1-0]`: the card counts the instance's memory over the factor
    (expectedUsedMem), whatever the pod's request, and holds one template (expectedUsageLen)."""
    group_name, position = parse_instance_id("gpu-1234[group1-0]")
    use, memory = take((ONE_TWO,), MigUse(), group_name, position)
    assert (memory // factor if factor > 1 else memory) == recorded, ADD_FACTOR.cite(name)
    assert len(use.used) == 1, ADD_FACTOR.cite(name)
    assert use.group == 0, ADD_FACTOR.cite(name)


@pytest.mark.parametrize(
    "name",
    [
        "SubPod with MemoryFactor=1, request 10MB from 1g.10gb",
        "SubPod with MemoryFactor=2, request 6GB from 1g.10gb",
    ],
)
def test_sub_pod_with_memory_factor_upstream(name: str) -> None:
    """SubPod after AddPod gives back exactly what AddPod counted: used memory 0 again."""
    use, added = take((ONE_TWO,), MigUse(), "group1", 0)
    left, removed = release((ONE_TWO,), use, "group1", 0)
    assert added == removed, SUB_FACTOR.cite(name)
    assert left.used == (), SUB_FACTOR.cite(name)


def test_match_is_a_value() -> None:
    assert find_match((ONE_TWO,), MigUse(), 1) == Match(0, 0, 10240)
