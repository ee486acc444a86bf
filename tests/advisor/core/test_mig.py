"""MIG profile tables and placement rule (advisor.core.mig, docs/design.md §13).

The tables are held to the exporter test's hand-written table of NVIDIA's MIG user guide,
"Supported MIG Profiles" (tests/exporter/test_fakenvml_mig.py GUIDE: names, instances per
card, GPU slices, memory from `nvidia-smi mig -lgip`, starts and memory slices from
`nvidia-smi mig -lgipp`), which the fake NVML's tables are held to as well.
"""

from __future__ import annotations

import re

import pytest

from advisor.core.mig import (
    TABLES,
    MigInstance,
    MigTable,
    fits_in,
    layout_problem,
    mig_resource,
    profile_of_resource,
    slices_of,
    table_of,
)
from tests.exporter.test_fakenvml_mig import GUIDE


@pytest.mark.parametrize("table", TABLES, ids=lambda t: t.model)
def test_tables_match_the_guide(table: MigTable) -> None:
    rows = GUIDE[table.model]
    assert [p.name for p in table.profiles] == [r[0] for r in rows]
    for p, (name, _id, most, compute, mib, starts, span) in zip(table.profiles, rows, strict=True):
        assert (p.name, p.most, p.compute, p.memory_mib, p.starts, p.span) == (
            name,
            most,
            compute,
            mib,
            starts,
            span,
        )


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB"),
        ("NVIDIA A100-PCIE-40GB", "A100-SXM4-40GB"),
        ("NVIDIA A100 80GB PCIe", "A100-SXM4-80GB"),
        ("NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"),
        ("NVIDIA H100 80GB HBM3", "H100-SXM5-80GB"),
        ("NVIDIA H200", "H200-SXM5-141GB"),
        ("Tesla T4", None),
        ("NVIDIA H100 NVL", None),  # 94 GB: profiles of its own, not tabled here
    ],
)
def test_table_of_a_model(model: str, expected: str | None) -> None:
    table = table_of(model)
    assert (table.model if table else None) == expected


A100 = TABLES[0]


def test_a_profile_starts_only_where_its_table_allows() -> None:
    # 3g.20gb: starts {0, 4}, 4 memory slices (the guide's -lgipp: {0,4}:4)
    assert layout_problem(A100, [MigInstance("3g.20gb", 4)]) is None
    problem = layout_problem(A100, [MigInstance("3g.20gb", 2)])
    assert problem == "3g.20gb may start only at slice 0, 4, not 2"
    assert layout_problem(A100, [MigInstance("7g.40gb", 0)]) is None
    assert layout_problem(A100, [MigInstance("1g.5gb", 7)]) is not None  # {0..6} only


def test_instances_may_not_overlap_nor_exceed_their_count() -> None:
    overlap = [MigInstance("4g.20gb", 0), MigInstance("1g.5gb", 3)]
    assert layout_problem(A100, overlap) == "1g.5gb at slice 3 overlaps another instance"
    # the guide's full layouts: 4g + 3g, 3g + 3g, seven 1g
    assert layout_problem(A100, [MigInstance("4g.20gb", 0), MigInstance("3g.20gb", 4)]) is None
    assert layout_problem(A100, [MigInstance("1g.5gb", s) for s in range(7)]) is None
    two_me = [MigInstance("1g.5gb+me", 0), MigInstance("1g.5gb+me", 1)]
    assert layout_problem(A100, two_me) == "a card holds at most 1 1g.5gb+me"
    unknown = layout_problem(A100, [MigInstance("1g.10gb+me", 0)])
    assert unknown is not None
    assert unknown.startswith("profile 1g.10gb+me is not one of")


def test_fits_in_takes_consecutive_slices_at_an_allowed_start() -> None:
    three = A100.profile("3g.20gb")
    assert three is not None
    assert slices_of(three, 4) == 0b11110000
    # slices 2 and 5 taken: four 1g slices free on each side, yet no 3g fits
    assert fits_in(three, (1 << 2) | (1 << 5)) is None
    assert fits_in(three, (1 << 0) | (1 << 1)) == 4
    assert fits_in(three, 0, held=2) is None  # two per card at most


def test_each_profile_is_advertised_under_a_valid_resource_name_and_read_back() -> None:
    """The device plugin writes a profile's `+` as `.` (a resource name allows no `+`:
    NVIDIA/k8s-device-plugin internal/rm/rm.go); reading the name gives the profile back."""
    names = {p.name for table in TABLES for p in table.profiles}
    assert "1g.10gb+me" in names  # the case this is about
    for name in names:
        resource = mig_resource(name)
        assert re.fullmatch(r"nvidia\.com/mig-[a-z0-9.]+", resource), resource
        assert profile_of_resource(resource.removeprefix("nvidia.com/mig-")) == name
    assert mig_resource("1g.10gb+me") == "nvidia.com/mig-1g.10gb.me"
