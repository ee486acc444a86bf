"""Fragmentation figures per MIG profile (docs/design.md §13): for each profile a card holds
or a Pending pod asks, its free instances, the Pending pods asking it and those left
waiting, and the instances a re-partition of the cards could hold.

Counted on the scenario as it is, before this cycle places anything, by the cycle's own
`core.mig_cycle.MigBook`: `free` are the instances of the profile a pod may take (no bound
pod holds them, on healthy cards whose node's device plugin offers the profile, less those
held on the node's unhealthy cards: `MigBook.free`); `room` the most the same cards would
hold of it were their free instances destroyed (`could_hold`). `room` above `free` is what
re-partitioning adds.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.core.diagnosis import Diagnosis
from advisor.core.mig import table_of
from advisor.core.mig_cycle import MigBook
from advisor.core.model import Cluster
from advisor.core.state import CardState


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
    names = {
        m.profile
        for node in cluster.nodes
        for card in node.cards
        if card.mig is not None and table_of(card.model) is not None
        for m in card.mig
    }
    asked = [d for d in diagnosis.pods if d.pod.request.mig_profile]
    names.update(d.pod.request.mig_profile for d in asked)
    if not names:
        return ()
    book = MigBook(cluster, CardState(cluster))  # the cycle's own count, before it places
    out = []
    for name in sorted(names):
        mine = [d for d in asked if d.pod.request.mig_profile == name]
        out.append(
            ProfileFigures(
                name,
                sum(len(f) for f in book.free(name)),
                sum(max(0, n) for n in book.could_hold(name)),
                len(mine),
                sum(d.pod.request.gpus for d in mine),
                sum(1 for d in mine if d.cause != "schedulable"),
            )
        )
    return tuple(out)
