"""The JSON outputs' schema ids and shapes, in one package: the producers (`advisor.output`,
`advisor.report`) build these forms, the renderers (`advisor.render`) read them, and mypy
checks both sides against the same keys (docs/design.md §5, §8).

The schema id is each output's `schema` field. The TypedDicts say what the advisor writes;
a renderer that reads a saved file first reads it tolerantly into the same form
(`render.diagnose.data.read_diagnosis`), so a hand-edited file cannot crash a cron run.
"""

from __future__ import annotations

from advisor.schemas.parts import (
    AllotmentJson,
    CardJson,
    CardViewJson,
    DiagnosisJson,
    NodeFitJson,
    NodeResourcesJson,
    NodeViewJson,
    PlacementJson,
    PodDiagnosisJson,
    PolicyJson,
    RemedyJson,
    RequestJson,
    SchedulerJson,
    SchedulerPartJson,
)
from advisor.schemas.plan import (
    EvictionCostJson,
    HeldBackJson,
    HeldNodeJson,
    IdealJson,
    LimitsJson,
    NodeShapeJson,
    NotTriggeredJson,
    NotTriggeredPartJson,
    PlanCostJson,
    PlanEntryJson,
    PlanJson,
    PlanSearchJson,
    PlanSummaryJson,
    ScaleDownJson,
    ScaleUpJson,
    TaintJson,
    UnresolvedJson,
)
from advisor.schemas.report import (
    FragmentationShapeJson,
    FragmentedNodeJson,
    HeadroomJson,
    ReportFragmentationJson,
    ReportJson,
    RunJson,
    StaleJson,
    UsageJson,
)
from advisor.schemas.sizing import (
    OvercommitJson,
    PendingFitJson,
    RightsizingJson,
    SizingBasisJson,
    SizingEvidenceJson,
    SizingFiguresJson,
    SizingSettingsJson,
    SizingWindowJson,
    WorkloadSizingJson,
)
from advisor.schemas.whatif import (
    FragmentationSummaryJson,
    PolicyOutcomeJson,
    RelativeRequestsJson,
    RepackJson,
    SchedulerOutcomeJson,
    SchedulersJson,
    WhatIfJson,
    WhatIfNowJson,
)

DIAGNOSIS_SCHEMA = "xgpu-advisor/diagnosis/v1"
WHATIF_SCHEMA = "xgpu-advisor/whatif/v1"
PLAN_SCHEMA = "xgpu-advisor/plan/v1"
REPORT_SCHEMA = "xgpu-advisor/report/v1"
RIGHTSIZING_SCHEMA = "xgpu-advisor/rightsizing/v1"
REPLAY_SCHEMA = "xgpu-advisor/replay/v1"

__all__ = [
    "DIAGNOSIS_SCHEMA",
    "PLAN_SCHEMA",
    "REPLAY_SCHEMA",
    "REPORT_SCHEMA",
    "RIGHTSIZING_SCHEMA",
    "WHATIF_SCHEMA",
    "AllotmentJson",
    "CardJson",
    "CardViewJson",
    "DiagnosisJson",
    "EvictionCostJson",
    "FragmentationShapeJson",
    "FragmentationSummaryJson",
    "FragmentedNodeJson",
    "HeadroomJson",
    "HeldBackJson",
    "HeldNodeJson",
    "IdealJson",
    "LimitsJson",
    "NodeFitJson",
    "NodeResourcesJson",
    "NodeShapeJson",
    "NodeViewJson",
    "NotTriggeredJson",
    "NotTriggeredPartJson",
    "OvercommitJson",
    "PendingFitJson",
    "PlacementJson",
    "PlanCostJson",
    "PlanEntryJson",
    "PlanJson",
    "PlanSearchJson",
    "PlanSummaryJson",
    "PodDiagnosisJson",
    "PolicyJson",
    "PolicyOutcomeJson",
    "RelativeRequestsJson",
    "RemedyJson",
    "RepackJson",
    "ReportFragmentationJson",
    "ReportJson",
    "RequestJson",
    "RightsizingJson",
    "RunJson",
    "ScaleDownJson",
    "ScaleUpJson",
    "SchedulerJson",
    "SchedulerOutcomeJson",
    "SchedulerPartJson",
    "SchedulersJson",
    "SizingBasisJson",
    "SizingEvidenceJson",
    "SizingFiguresJson",
    "SizingSettingsJson",
    "SizingWindowJson",
    "StaleJson",
    "TaintJson",
    "UnresolvedJson",
    "UsageJson",
    "WhatIfJson",
    "WhatIfNowJson",
    "WorkloadSizingJson",
]
