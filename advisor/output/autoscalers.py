"""The JSON form of reachable replicas (docs/design.md §12.2), in `diagnose` and `report`."""

from __future__ import annotations

from collections.abc import Sequence

from advisor import schemas
from advisor.core.autoscalers import Reach


def reach_json(r: Reach) -> schemas.AutoscalerJson:
    a = r.autoscaler
    blocked: schemas.BlockedReplicaJson | None = None
    if r.blocked is not None:
        blocked = {"cause": r.blocked.cause, "node_summary": r.blocked.node_summary}
    return {
        "name": a.name,
        "target": a.target,
        "replicas": a.replicas,
        "max_replicas": a.max_replicas,
        "template": r.template,
        "placeable": r.placeable,
        "blocked": blocked,
        "status": r.status,
    }


def autoscalers_json(reaches: Sequence[Reach]) -> schemas.AutoscalersPartJson:
    """The diagnosis's `autoscalers` key, where the cluster lists some."""
    return {"autoscalers": [reach_json(r) for r in reaches]} if reaches else {}
