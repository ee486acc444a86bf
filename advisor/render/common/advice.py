"""Each Pending pod's advice key and the cause label that goes with it, in one place for the
diagnose, plan and report pages.

Every `diagnose`, `plan` and `report` output carries each pod's `advice`
(`advisor.core.remedy`), decided together with its scale-up so that the two agree; the pages
show it. Only a file saved by an older version has none: its capacity pods then read
`cluster_free_sufficient`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.render.common.mig import read_repartition
from advisor.render.common.values import as_map, as_str
from advisor.schemas import PodDiagnosisJson, RemedyJson, UnresolvedJson

# What the label adds to the cause for the advice keys that are not a cause themselves.
LABEL_SUFFIX: Mapping[str, str] = {
    "capacity-consolidate": "consolidate",
    "capacity-scale-up": "scale up",
    "no-plan": "no plan, scale up",
    "rebalance": "a plan makes room",
    "mig-no-repartition": "no re-partition found",
}


def read_remedy(value: Any) -> RemedyJson | None:
    """A saved file's `advice`, or None when it has none with a key."""
    raw = as_map(value)
    key = as_str(raw.get("key"))
    if not key:
        return None
    out: RemedyJson = {
        "key": key,
        "scale_up": raw.get("scale_up") is True,
        "why": as_str(raw.get("why")),
    }
    if (cut := read_repartition(raw.get("repartition"))) is not None:
        out["repartition"] = cut
    return out


def advice_key(entry: PodDiagnosisJson | UnresolvedJson) -> str:
    """The entry's advice key: its `advice` when it has one, else from its cause."""
    if "advice" in entry:
        return entry["advice"]["key"]
    cause = entry["cause"]
    if cause == "capacity" and "cluster_free_sufficient" in entry:
        return "capacity-consolidate" if entry["cluster_free_sufficient"] else "capacity-scale-up"
    return cause


def cause_label(entry: PodDiagnosisJson | UnresolvedJson) -> str:
    """The cause, with what its advice adds: "capacity (consolidate)", "fragmentation (no
    plan, scale up)"."""
    cause, suffix = entry["cause"], LABEL_SUFFIX.get(advice_key(entry))
    return f"{cause} ({suffix})" if suffix else cause
