"""A MIG card in the card view as its instances (docs/design.md §13): each instance's
profile, start and span, and the pod holding it."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from advisor import schemas
from advisor.core.diagnosis import Diagnosis
from advisor.core.mig import table_of
from advisor.core.mig_figures import profile_figures
from advisor.core.model import Cluster, Placement

Key = tuple[str, int]  # node, card index


def add_mig_profiles(data: schemas.DiagnosisJson, cluster: Cluster, diagnosis: Diagnosis) -> None:
    """The diagnosis's `mig_profiles` (`core.mig_figures`), only where the cluster has MIG."""
    figures = profile_figures(cluster, diagnosis)
    if figures:
        data["mig_profiles"] = [
            {
                "profile": f.profile,
                "free_instances": f.free,
                "room_if_repartitioned": f.room,
                "pending_pods": f.pending_pods,
                "pending_instances": f.pending_instances,
                "waiting_pods": f.waiting_pods,
            }
            for f in figures
        ]


def mig_slices(
    cluster: Cluster, where: Mapping[str, Placement], fresh: Collection[str] = ()
) -> dict[Key, list[schemas.MigSliceJson]]:
    """Each MIG card's instances by start. A bound pod holds the instances it names; a pod
    in `fresh` (placed by this cycle) the first free ones of its profile on each card of its
    placement, as the cycle hands them out (by card, then slice; by queue order between
    fresh pods, where which of two fresh pods holds which instance is not told)."""
    out: dict[Key, list[schemas.MigSliceJson]] = {}
    for node in cluster.nodes:
        for card in node.cards:
            table = table_of(card.model)
            if card.mig is None or table is None:
                continue
            slices: list[schemas.MigSliceJson] = []
            for m in sorted(card.mig, key=lambda m: m.start):
                known = table.profile(m.profile)
                span = known.span if known is not None else 1
                slices.append(
                    {"profile": m.profile, "start": m.start, "span": span, "pending": False}
                )
            out[(node.name, card.index)] = slices
    for pod in cluster.pods:
        placement = where.get(pod.name)
        if not pod.request.mig_profile or placement is None or pod.name in fresh:
            continue
        for index, start in pod.mig_instances:
            for s in out.get((placement.node, index), []):
                if s["start"] == start:
                    s["pod"] = pod.name
    for pod in cluster.pods:
        placement = where.get(pod.name)
        if not pod.request.mig_profile or placement is None or pod.name not in fresh:
            continue
        for index in placement.cards:
            free = [
                s
                for s in out.get((placement.node, index), [])
                if "pod" not in s and s["profile"] == pod.request.mig_profile
            ]
            if free:
                free[0]["pod"], free[0]["pending"] = pod.name, True
    return out
