"""The report's JSON (`advisor.report.build_report`): its own sections around the
diagnosis, the plan and the right-sizing."""

from __future__ import annotations

from typing import NotRequired

from typing_extensions import TypedDict  # pydantic writes the JSON Schemas from these (3.11)

from advisor.schemas.parts import AutoscalerTargetJson, CardViewJson, DiagnosisJson
from advisor.schemas.plan import PlanJson
from advisor.schemas.sizing import RightsizingJson

# -- report (`advisor.report.build_report`) ----------------------------------------------------
# The sections are always written; `NotRequired` marks those a hand-edited file may lack (the
# pages then say so), and numbers a file may lack are `| None` (shown as "?").


class StaleJson(TypedDict):
    """A series left out of the model because it was too old (`advisor.sources`)."""

    subject: str
    metric: str
    age_s: NotRequired[float | None]  # absent: the file's entry was not an object
    ended: bool


class FragmentationShapeJson(TypedDict):
    gpus: int
    card_memory_mib: float | None
    card_core_percent: int
    share: float | None
    pods: int


class FragmentedNodeJson(TypedDict):
    node: str
    free_mib: float | None
    fragment_mib: float | None
    stranded_mib: float | None
    ratio: float | None


class ReportFragmentationJson(TypedDict):
    """`output.fragmentation.fragmentation_json`: the cluster's figures, shapes and nodes."""

    free_mib: float | None
    fragment_mib: float | None
    stranded_mib: float | None
    ratio: float | None
    stranded_ratio: float | None
    free_gpus: float | None
    fragment_gpus: float | None
    stranded_gpus: float | None
    shapes: list[FragmentationShapeJson]
    nodes: list[FragmentedNodeJson]
    nodes_omitted: int


class HeadroomJson(TypedDict):
    """`output.scaling.headroom_json` of `core.scaling.headroom.Headroom`."""

    capacity_gpus: float | None
    peak_allotted_gpus: float | None
    needed_gpus: float | None
    spare_gpus: float | None
    target_utilisation: float | None
    redundancy: float | None
    peak_used_gpus: float | None
    needed_by_use_gpus: float | None


class UsageJson(TypedDict):
    """Cluster totals per step (`advisor.report.usage_series`), as long as each other."""

    timestamps: list[float]
    allotted_bytes: list[float]
    used_bytes: list[float]


class RunJson(TypedDict):
    duration_seconds: float | None
    phases: dict[str, float]


class ReportJson(TypedDict):
    schema: str
    generated_at: str  # ISO 8601
    source: str
    warnings: list[str]
    stale: list[StaleJson]
    diagnosis: NotRequired[DiagnosisJson]
    view: NotRequired[CardViewJson]
    plan: NotRequired[PlanJson]
    fragmentation: NotRequired[ReportFragmentationJson]
    headroom: NotRequired[HeadroomJson]
    rightsizing: RightsizingJson | None  # None: no history
    usage: UsageJson | None
    # where the cluster lists autoscalers and history was read (§12.2)
    autoscaler_targets: NotRequired[list[AutoscalerTargetJson]]
    run: NotRequired[RunJson]  # added when the run is over
