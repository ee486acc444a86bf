"""MIG geometry (docs/design.md §13): each card model's GPU instance profiles, where each may
start, and whether a set of instances is a layout the card accepts.

From NVIDIA's MIG user guide, "Supported MIG Profiles"
(https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html), with
the memory `nvidia-smi mig -lgip` lists (GiB there, MiB here) and the placements
`nvidia-smi mig -lgipp` lists (`{starts}:memory slices`), the same on every card below. A
placement is on the card's 8 memory slices: a profile starts only at one of its `starts` and
takes `span` consecutive slices. The test's fake NVML carries the same tables
(tests/advisor/core/test_mig.py holds the two to each other).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

SLICES = 8  # memory slices of every card below
MIG_RESOURCE_PREFIX = "nvidia.com/mig-"
_WITH_ATTRIBUTES = re.compile(r"(\d+g\.\d+gb)\.(.+)")  # "1g.10gb.me": "1g.10gb+me" as named


@dataclass(frozen=True, slots=True)
class MigProfile:
    name: str  # e.g. "3g.20gb": compute slices, then memory
    compute: int  # GPU (compute) slices
    span: int  # memory slices taken
    starts: tuple[int, ...]  # the memory slices a placement may start at
    memory_mib: int
    most: int  # instances of it one card holds at most


@dataclass(frozen=True, slots=True)
class MigTable:
    model: str  # the guide's name of the card
    profiles: tuple[MigProfile, ...]
    # by name: the cycle asks it per card and pod
    _by_name: dict[str, MigProfile] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_name", {p.name: p for p in reversed(self.profiles)})

    def profile(self, name: str) -> MigProfile | None:
        return self._by_name.get(name)


@dataclass(frozen=True, slots=True)
class MigInstance:
    """A GPU instance as created: its profile and the first memory slice it takes."""

    profile: str
    start: int


_ONE, _TWO, _TWO_G, _HALF, _WHOLE = (0, 1, 2, 3, 4, 5, 6), (0, 2, 4, 6), (0, 2, 4), (0, 4), (0,)


def _table(model: str, sizes: tuple[str, str, str, str, str], mib: tuple[int, ...]) -> MigTable:
    """The layout every card here shares: 1g (twice: alone and +me), 1g on two slices, 2g,
    3g, 4g and 7g; `sizes` the memory part of each name, `mib` their memory."""
    one, two, three, four, seven = sizes
    return MigTable(
        model,
        (
            MigProfile(f"1g.{one}", 1, 1, _ONE, mib[0], 7),
            MigProfile(f"1g.{one}+me", 1, 1, _ONE, mib[0], 1),  # with the media engines
            MigProfile(f"1g.{two}", 1, 2, _TWO, mib[1], 4),
            MigProfile(f"2g.{two}", 2, 2, _TWO_G, mib[1], 3),
            MigProfile(f"3g.{three}", 3, 4, _HALF, mib[2], 2),
            MigProfile(f"4g.{four}", 4, 4, _WHOLE, mib[2], 1),
            MigProfile(f"7g.{seven}", 7, 8, _WHOLE, mib[3], 1),
        ),
    )


TABLES: tuple[MigTable, ...] = (
    _table("A100-SXM4-40GB", ("5gb", "10gb", "20gb", "20gb", "40gb"), (4864, 9856, 19968, 40192)),
    _table("A100-SXM4-80GB", ("10gb", "20gb", "40gb", "40gb", "80gb"), (9728, 19968, 40192, 81152)),
    _table("H100-SXM5-80GB", ("10gb", "20gb", "40gb", "40gb", "80gb"), (9984, 20096, 40448, 81152)),
    # H200's 1g.35gb, 3g.71gb and 4g.71gb sizes: as the test's fake NVML infers them
    _table(
        "H200-SXM5-141GB", ("18gb", "35gb", "71gb", "71gb", "141gb"), (16384, 33280, 66816, 143360)
    ),
)


def table_of(model: str) -> MigTable | None:
    """The profile table of a card model as NVML or a scenario names it ("NVIDIA
    A100-SXM4-40GB", "NVIDIA A100 80GB PCIe", "NVIDIA H100 80GB HBM3", "NVIDIA H200"), or
    None for a card without one here (H100 NVL's 94 GB, A30, ...)."""
    name = model.upper()
    if "A100" in name and "40GB" in name:
        return TABLES[0]
    if "A100" in name and "80GB" in name:
        return TABLES[1]
    if "H100" in name and "80GB" in name:
        return TABLES[2]
    if "H200" in name:
        return TABLES[3]
    return None


def slices_of(profile: MigProfile, start: int) -> int:
    """The memory slices an instance at `start` takes, as a bit mask."""
    return ((1 << profile.span) - 1) << start


def layout_problem(table: MigTable, instances: Iterable[MigInstance]) -> str | None:
    """Why the card could not hold these instances together, or None: each profile known,
    at a start its table allows, no two on a slice, none beyond its count per card."""
    taken = 0
    count: dict[str, int] = {}
    for instance in instances:
        profile = table.profile(instance.profile)
        if profile is None:
            known = ", ".join(p.name for p in table.profiles)
            return f"profile {instance.profile} is not one of {table.model}'s ({known})"
        if instance.start not in profile.starts:
            allowed = ", ".join(map(str, profile.starts))
            return f"{profile.name} may start only at slice {allowed}, not {instance.start}"
        mask = slices_of(profile, instance.start)
        if taken & mask:
            return f"{profile.name} at slice {instance.start} overlaps another instance"
        taken |= mask
        count[profile.name] = count.get(profile.name, 0) + 1
        if count[profile.name] > profile.most:
            return f"a card holds at most {profile.most} {profile.name}"
    return None


def fits_in(profile: MigProfile, taken: int, held: int = 0) -> int | None:
    """The first start where `profile` fits beside slices `taken` (a mask), or None. `held`:
    how many of the profile the card holds already (against its count per card)."""
    if held >= profile.most:
        return None
    return next((s for s in profile.starts if not taken & slices_of(profile, s)), None)


def room_beside(table: MigTable, held: Iterable[tuple[str, int]], wanted: MigProfile) -> int:
    """How many `wanted` a card holds beside the instances `held` ((profile, start), kept
    where they are), each at the first start left: the most, since a profile's starts tile
    the card."""
    taken, count, room = 0, 0, 0
    for name, at in held:
        found = table.profile(name)
        if found is not None:
            taken |= slices_of(found, at)
            count += name == wanted.name
    while (start := fits_in(wanted, taken, count)) is not None:
        taken |= slices_of(wanted, start)
        count, room = count + 1, room + 1
    return room


def mig_resource(profile: str) -> str:
    """The extended resource the device plugin advertises a profile's instances as under
    the mixed strategy: `nvidia.com/mig-` and the profile, a `+` (its attributes:
    "1g.10gb+me") written as `.`, since a resource name allows no `+`
    (NVIDIA/k8s-device-plugin internal/rm/rm.go, AddDefaultResourcesToConfig)."""
    return MIG_RESOURCE_PREFIX + profile.replace("+", ".")


def profile_of_resource(suffix: str) -> str:
    """The profile a `nvidia.com/mig-<suffix>` resource names (`mig_resource` read back):
    "1g.10gb.me" is "1g.10gb+me", "3g.40gb" itself."""
    found = _WITH_ATTRIBUTES.fullmatch(suffix)
    return f"{found[1]}+{found[2]}" if found else suffix
