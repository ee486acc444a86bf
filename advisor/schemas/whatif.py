"""The what-if JSON: each policy and scheduler profile judged on the same cluster."""

from __future__ import annotations

from typing import NotRequired

from typing_extensions import TypedDict  # pydantic writes the JSON Schemas from these (3.11)

from advisor.schemas.parts import PlacementJson, PolicyJson, SchedulerJson

# -- what-if -----------------------------------------------------------------------------------


class FragmentationSummaryJson(TypedDict):
    """The cluster's figures (`output.fragmentation.summary_json`)."""

    free_mib: int
    fragment_mib: float
    stranded_mib: int
    ratio: float
    stranded_ratio: float
    free_gpus: float
    fragment_gpus: float
    stranded_gpus: float


class RelativeRequestsJson(TypedDict, total=False):
    pending_relative: int  # Pending pods asking a share or a whole card; only when some do


class WhatIfNowJson(RelativeRequestsJson):
    policy: PolicyJson
    scheduler: SchedulerJson
    running: int
    pending: int
    pending_mib: int
    fragmentation: FragmentationSummaryJson


class RepackJson(TypedDict):
    pods: int
    placed: int
    placed_mib: int
    running_placed: int
    running_lost: int
    pending_placed: int
    fragmentation: FragmentationSummaryJson
    on_unhealthy: NotRequired[int]  # pods placed on cards reported unhealthy; only when some


class PolicyOutcomeJson(TypedDict):
    node: str
    card: str
    pending_placed: int
    pending_placed_mib: int
    fragmentation: FragmentationSummaryJson
    repack: RepackJson
    pending_on_unhealthy: NotRequired[int]  # placed on cards reported unhealthy; when some


class WhatIfJson(TypedDict):
    """`xgpu-advisor whatif`: one profile under each node × card policy."""

    schema: str
    current: WhatIfNowJson
    policies: list[PolicyOutcomeJson]


class SchedulerOutcomeJson(TypedDict):
    profile: str
    scheduler: SchedulerJson
    policy: PolicyJson
    max_vgpus_per_card: int
    pending: dict[str, int]  # per cause
    placed: int
    placed_mib: int
    random_ties: int
    running_invalid: int
    fragmentation_now: FragmentationSummaryJson
    fragmentation: FragmentationSummaryJson
    placements: dict[str, PlacementJson | None]
    causes: dict[str, str]
    on_unhealthy: NotRequired[list[str]]  # Pending pods placed on unhealthy cards; when some


class SchedulersJson(TypedDict):
    """`xgpu-advisor whatif --scheduler A,B`: the profiles side by side."""

    schema: str
    running: int
    pending: int
    schedulers: list[SchedulerOutcomeJson]
