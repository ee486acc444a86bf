"""A pod asking MIG instances (docs/design.md §13): `nvidia.com/mig-<profile>: N` in a
container's limits (or requests), the device plugin's mixed-strategy resources (a profile's
`+` written `.`: `nvidia.com/mig-1g.10gb.me` asks "1g.10gb+me", `core.mig.mig_resource`).
The pod asks N instances of the profile in all, summed over its containers; a pod asking
several profiles is not modelled. A node's allocatable names the same resources: the
instances its device plugin advertises, per profile."""

from __future__ import annotations

from collections.abc import Mapping

from advisor.core.mig import MIG_RESOURCE_PREFIX as MIG_PREFIX
from advisor.core.mig import mig_resource, profile_of_resource
from advisor.core.model import Request
from advisor.core.quantity import MAX_COUNT, quantity_int

__all__ = ["MIG_DIALECT", "MIG_PREFIX", "mig_allocatable", "mig_asks", "mig_request"]
MIG_DIALECT = "mig"  # `PodGpu.dialect` of such a pod: no shared-GPU scheduler's


def mig_asks(
    limits: Mapping[object, object], requests: Mapping[object, object]
) -> dict[str, object]:
    """profile -> the value asked, limits before requests (extended resources are asked in
    limits; a request alone must equal it), each profile as named (`profile_of_resource`)."""
    found: dict[str, object] = {}
    for source in (requests, limits):
        for key, value in source.items():
            if isinstance(key, str) and key.startswith(MIG_PREFIX) and len(key) > len(MIG_PREFIX):
                found[profile_of_resource(key[len(MIG_PREFIX) :])] = value
    return found


def mig_request(asked: list[tuple[str, dict[str, object]]], problems: list[str]) -> Request | None:
    """The pod's MIG request from each container's asks (name, profile -> value); None,
    with the reason in `problems`, when it cannot be read or is not modelled."""
    totals: dict[str, int] = {}
    for name, asks in asked:
        where = f"container {name}"
        for profile, value in asks.items():
            try:
                count = quantity_int(value)
            except ValueError as error:
                problems.append(f"{where}: {mig_resource(profile)} {error}")
                return None
            if count:
                totals[profile] = totals.get(profile, 0) + count
    if not totals:
        return None
    if len(totals) > 1:
        listed = ", ".join(mig_resource(p) for p in sorted(totals))
        problems.append(f"the pod asks several MIG profiles ({listed}), which is not modelled")
        return None
    ((profile, count),) = totals.items()
    if count > MAX_COUNT:
        problems.append(f"the pod asks {count} MIG instances, more than {MAX_COUNT:,}")
        return None
    return Request(gpus=count, memory_mib=0, mig_profile=profile)


def mig_allocatable(allocatable: Mapping[object, object], problems: list[str]) -> dict[str, int]:
    """profile -> the instances a node's allocatable advertises (`nvidia.com/mig-<P>`, the
    mixed strategy's); one that cannot be read is left out, said in `problems`."""
    found: dict[str, int] = {}
    for profile, value in mig_asks({}, allocatable).items():
        try:
            found[profile] = quantity_int(value)
        except ValueError as error:
            problems.append(f"allocatable {mig_resource(profile)}: {error}")
    return found
