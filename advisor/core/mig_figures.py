"""Fragmentation figures per MIG profile (docs/design.md §13): for each profile a card holds
or a Pending pod asks, its free instances, the Pending pods asking it and those left
waiting, and the instances a re-partition of the cards could hold.

Counted on the scenario as it is, before this cycle places anything: `free` are the
instances of the profile no bound pod holds, on healthy cards whose node's device plugin
offers the profile (mixed: every profile; single: the node's one); `room` the most the
same cards would hold of it were their free instances destroyed (the unoccupied slices,
`core.mig_cycle`'s `could_hold` rule). `room` above `free` is what re-partitioning adds.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.core.diagnosis import Diagnosis
from advisor.core.mig import fits_in, slices_of, table_of
from advisor.core.model import Cluster


@dataclass(frozen=True, slots=True)
class ProfileFigures:
    profile: str
    free: int  # free instances now
    room: int  # instances the cards' unoccupied slices would hold, re-partitioned
    pending_pods: int  # Pending pods asking it
    pending_instances: int  # the instances they ask, together
    waiting_pods: int  # of those, the ones this cycle leaves Pending


def profile_figures(cluster: Cluster, diagnosis: Diagnosis) -> tuple[ProfileFigures, ...]:
    """Per profile, by name; empty when the cluster has no MIG card and no MIG pod."""
    held: set[tuple[str, int, int]] = {
        (p.placement.node, card, start)
        for p in cluster.running
        if p.placement is not None
        for card, start in p.mig_instances
    }
    free: dict[str, int] = {}
    room: dict[str, int] = {}
    names: set[str] = set()
    for node in cluster.nodes:
        single = {m.profile for c in node.cards for m in c.mig or ()}
        for card in node.cards:
            table = table_of(card.model)
            if card.mig is None or table is None:
                continue
            names.update(m.profile for m in card.mig)
            if not card.healthy or node.mig_strategy == "none":
                continue
            taken = 0
            kept: dict[str, int] = {}
            for m in card.mig:
                known = table.profile(m.profile)
                if (node.name, card.index, m.start) in held:
                    if known is not None:
                        taken |= slices_of(known, m.start)
                    kept[m.profile] = kept.get(m.profile, 0) + 1
                elif node.mig_strategy == "mixed" or len(single) == 1:
                    free[m.profile] = free.get(m.profile, 0) + 1
            for profile in table.profiles:
                if node.mig_strategy == "single" and single != {profile.name}:
                    continue
                mask, count, n = taken, kept.get(profile.name, 0), 0
                while (start := fits_in(profile, mask, count)) is not None:
                    mask |= slices_of(profile, start)
                    count, n = count + 1, n + 1
                room[profile.name] = room.get(profile.name, 0) + n
    asked = [d for d in diagnosis.pods if d.pod.request.mig_profile]
    names.update(d.pod.request.mig_profile for d in asked)
    out = []
    for name in sorted(names):
        mine = [d for d in asked if d.pod.request.mig_profile == name]
        out.append(
            ProfileFigures(
                name,
                free.get(name, 0),
                room.get(name, 0),
                len(mine),
                sum(d.pod.request.gpus for d in mine),
                sum(1 for d in mine if d.cause != "schedulable"),
            )
        )
    return tuple(out)
