"""The right-sizing JSON (`advisor.rightsizing.rightsize`), with its evidence."""

from __future__ import annotations

from typing import NotRequired

from typing_extensions import TypedDict  # pydantic writes the JSON Schemas from these (3.11)

# -- right-sizing (`advisor.rightsizing.rightsize`) --------------------------------------------
# Numbers a saved file may lack are `| None`: the pages show "?" for them.


class SizingFiguresJson(TypedDict):
    """Per card, allotted against used (peak, p95) and the recommendation (None: none)."""

    allotted: float | None
    used_peak: float | None
    used_p95: float | None
    recommended: float | None


class OvercommitJson(TypedDict):
    ratio: float | None  # None: not suggested, `reason` says why
    reason: str


class SizingBasisJson(TypedDict):
    """What a recommendation rests on: the percentile used (100: the peak), its value, the
    peak, and the floor (peak × (1 + peak margin)) it never goes below."""

    percentile: int
    basis: float | None
    peak: float | None
    floor: float | None


class SizingEvidenceJson(TypedDict):
    first: float | None
    last: float | None
    window_seconds: float | None
    window: str  # "24 h"
    step_seconds: float | None
    samples: int
    headroom: float | None
    peak_margin: float | None
    memory_mib: SizingBasisJson
    core_percent: SizingBasisJson | None  # None: memory isolation, no core advice


class WorkloadSizingJson(TypedDict):
    workload: str
    container: str
    pods: int
    vgpus: int
    samples: int
    mode: str  # "memory" or "memory+core"
    memory_mib: SizingFiguresJson
    core_percent: SizingFiguresJson
    overcommit: OvercommitJson
    advised: NotRequired[bool]  # absent from older files: advised
    not_advised: NotRequired[str | None]  # why not ("not enough history (...)")
    evidence: NotRequired[SizingEvidenceJson]


class SizingWindowJson(TypedDict):
    start: float | None
    end: float | None
    seconds: float | None


class SizingSettingsJson(TypedDict):
    """`advisor.rightsizing.RightsizingSettings` as written; the pages read these."""

    headroom: float | None
    memory_basis: str
    core_basis: str
    min_history_s: NotRequired[float]  # absent from older files
    min_samples: NotRequired[int]
    peak_margin: NotRequired[float]
    # when overcommit is suggested (written; the pages do not read them)
    overcommit_max_p95_ratio: NotRequired[float]
    overcommit_max_peak_ratio: NotRequired[float]
    overcommit_min_samples: NotRequired[int]
    overcommit_min_coverage: NotRequired[float]


class PendingFitJson(TypedDict):
    pending: int
    schedulable_now: int
    schedulable_after: int
    newly_schedulable: list[str]
    no_longer_schedulable: list[str]
    running_shrunk: int
    memory_freed_mib: float | None


class RightsizingJson(TypedDict):
    schema: str
    window: SizingWindowJson
    settings: SizingSettingsJson
    workloads: list[WorkloadSizingJson]
    pending_fit: NotRequired[PendingFitJson]  # only when the cluster was given
