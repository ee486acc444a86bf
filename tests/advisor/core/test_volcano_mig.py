"""Volcano's vGPU MIG mode, by hand (docs/design.md §13.1): the rules of
pkg/scheduler/api/devices/nvidia/vgpu/mig.go and utils.go at v1.15.1 that mig_test.go does
not pin down."""

from __future__ import annotations

import pytest

from advisor.core.profiles.volcano_mig import (
    HAMI_CORE,
    MIG,
    Geometry,
    KnownGeometries,
    Match,
    MigTemplate,
    MigUse,
    card_mode,
    find_match,
    geometries_for,
    node_mode,
    parse_instance_id,
    release,
    take,
    try_add,
)

SEVEN = Geometry("seven", (MigTemplate("1g.10gb", 10240, 7),))
TWO_BIG = Geometry("two", (MigTemplate("3g.40gb", 40960, 2),))
MIXED = Geometry("mixed", (MigTemplate("2g.20gb", 20480, 3), MigTemplate("1g.10gb", 10240, 1)))
A100 = KnownGeometries(("A100-SXM4-80GB", "A100 80GB PCIe"), (SEVEN, TWO_BIG))
H100 = KnownGeometries(("H100",), (TWO_BIG,))


def test_unused_card_tries_groups_in_order() -> None:
    assert find_match((SEVEN, TWO_BIG), MigUse(), 5000) == Match(0, 0, 10240)
    # 20 GiB: no template of the first group holds it, the second group's does.
    assert find_match((SEVEN, TWO_BIG), MigUse(), 20480) == Match(1, 0, 40960)


def test_group_is_fixed_once_an_instance_is_held() -> None:
    use, _ = take((SEVEN, TWO_BIG), MigUse(), "seven", 0)
    assert use.group == 0
    # The other group would hold 20 GiB; the card keeps its group, so nothing fits.
    assert find_match((SEVEN, TWO_BIG), use, 20480) is None
    assert find_match((SEVEN, TWO_BIG), use, 100) == Match(0, 1, 10240)


def test_group_stays_after_the_last_pod_leaves() -> None:
    use, _ = take((SEVEN, TWO_BIG), MigUse(), "seven", 3)
    empty, memory = release((SEVEN, TWO_BIG), use, "seven", 3)
    assert memory == 10240
    assert empty.used == ()
    assert empty.group == 0
    assert find_match((SEVEN, TWO_BIG), empty, 20480) is None
    # Nothing held: the group's templates are all open again (len(usage) == 0).
    assert find_match((SEVEN, TWO_BIG), empty, 1) == Match(0, 0, 10240)


def test_smallest_template_first_and_its_position() -> None:
    # 1g.10gb comes after three 2g.20gb in the group: its position is 3.
    assert find_match((MIXED,), MigUse(), 5000) == Match(0, 3, 10240)
    assert find_match((MIXED,), MigUse(), 15000) == Match(0, 0, 20480)


def test_card_in_use_takes_only_templates_it_already_holds() -> None:
    """mig.go:194-203 only looks at templates in the usage list once it is not empty."""
    use, _ = take((MIXED,), MigUse(), "mixed", 0)  # one 2g.20gb held
    # The 1g.10gb is free and would hold 5000 MiB, but the card holds no 1g: a 2g is taken.
    assert find_match((MIXED,), use, 5000) == Match(0, 1, 20480)
    for position in (1, 2):
        use, _ = take((MIXED,), use, "mixed", position)
    assert use.held("2g.20gb") == (0, 1, 2)
    assert find_match((MIXED,), use, 5000) is None


def test_first_free_index_fills_a_gap() -> None:
    use = MigUse()
    for position in (0, 2):
        use, _ = take((SEVEN,), use, "seven", position)
    assert use.held("1g.10gb") == (0, 2)
    assert find_match((SEVEN,), use, 1) == Match(0, 1, 10240)


def test_taking_a_held_instance_again_changes_nothing() -> None:
    use, _ = take((SEVEN,), MigUse(), "seven", 4)
    again, memory = take((SEVEN,), use, "seven", 4)
    assert again == use
    assert memory == 10240


def test_memory_factor_scales_request_and_recorded_memory() -> None:
    # Factor 4: 3000 asked is 12000 MiB of the card, past a 1g.10gb; the card counts 40960/4.
    found = try_add((SEVEN, TWO_BIG), MigUse(), 3000, 4)
    assert found == (Match(1, 0, 40960), 10240)
    assert try_add((SEVEN, TWO_BIG), MigUse(), 3000, 1) == (Match(0, 0, 10240), 10240)


def test_position_past_the_group_is_an_error() -> None:
    with pytest.raises(ValueError, match="past group"):
        take((SEVEN,), MigUse(), "seven", 7)


def test_card_mode_reads_mig_only() -> None:
    assert card_mode(MIG) == MIG
    assert card_mode("mps") == HAMI_CORE
    assert card_mode("") == HAMI_CORE


def test_geometries_by_substring_first_entry_wins() -> None:
    assert geometries_for("NVIDIA A100-SXM4-80GB", (A100, H100)) == (SEVEN, TWO_BIG)
    assert geometries_for("NVIDIA H100 80GB HBM3", (A100, H100)) == (TWO_BIG,)
    assert geometries_for("NVIDIA L40S", (A100, H100)) is None
    both = KnownGeometries(("NVIDIA",), (SEVEN,))
    assert geometries_for("NVIDIA H100 80GB HBM3", (both, H100)) == (SEVEN,)


def test_node_mode_is_the_last_cards() -> None:
    known = (A100, H100)
    mode, groups = node_mode([(MIG, "NVIDIA H100 80GB HBM3"), ("hami-core", "NVIDIA L40S")], known)
    assert mode == HAMI_CORE
    assert groups == ((TWO_BIG,), ())
    # The last card registers hami-core: the node is hami-core though its type has groups.
    mode, groups = node_mode([(MIG, "NVIDIA H100"), ("hami-core", "NVIDIA H100")], known)
    assert mode == HAMI_CORE
    assert groups == ((TWO_BIG,), ())
    mode, groups = node_mode([("hami-core", "NVIDIA L40S"), (MIG, "NVIDIA H100")], known)
    assert mode == MIG
    assert groups == ((), (TWO_BIG,))
    # A mig card with no known geometry falls back to hami-core.
    assert node_mode([(MIG, "NVIDIA L40S")], known) == (HAMI_CORE, ((),))
    assert node_mode([], known) == (HAMI_CORE, ())


@pytest.mark.parametrize(
    ("device_id", "error"),
    [
        ("GPU-1", "invalid format"),
        ("GPU-1]x[", "invalid format"),
        ("GPU-1[a-b-1]", "inside brackets"),
        ("GPU-1[a-x]", "invalid index"),
    ],
)
def test_instance_id_errors(device_id: str, error: str) -> None:
    with pytest.raises(ValueError, match=error):
        parse_instance_id(device_id)


def test_instance_id_reads_group_and_position() -> None:
    assert parse_instance_id("GPU-0fc3eda5-e98b[group2-3]") == ("group2", 3)


def test_two_templates_of_one_name_share_the_first_memory() -> None:
    """addMigUsed keeps one usage entry per name and returns its memory (mig.go:279-283):
    the second template of the name counts the first one's memory."""
    twin = Geometry("twin", (MigTemplate("1g.10gb", 10240, 1), MigTemplate("1g.10gb", 40960, 1)))
    use, first = take((twin,), MigUse(), "twin", 0)
    use, second = take((twin,), use, "twin", 1)
    assert (first, second) == (10240, 10240)
    # Position 1 is index 0 of the second template: the entry already holds index 0.
    assert use.used == (("1g.10gb", 10240, (0,)),)
    # Both templates read the one entry, so neither has an index left.
    assert find_match((twin,), use, 1) is None
