"""`xgpu-advisor replay`'s JSON (`xgpu-advisor/replay/v1`, docs/design.md §7)."""

from __future__ import annotations

from typing import NotRequired

from typing_extensions import TypedDict  # pydantic writes the JSON Schemas from these (3.11)

from advisor.schemas.parts import PolicyJson


class ReplayProfileJson(TypedDict):
    profile: str


class CpuOnlyPodsJson(TypedDict):
    replayed: int
    placed: int
    pending: int


class NodeAllocationJson(TypedDict):
    cpu: float  # the share of the nodes' allocatable cpu requested, 0-1
    memory: float


class ReplayFragmentationJson(TypedDict):
    free_gpus: float
    fragment_gpus: float
    fragmentation_ratio: float
    stranded_gpus: float
    typical_shapes: int


class ReplayJson(TypedDict):
    schema: str
    resources: str  # "gpu" | "all"
    scheduler: ReplayProfileJson
    policy: PolicyJson
    pods: int
    capacity_gpus: int
    demand_gpus: float
    placed_gpus: float
    allocation_ratio: float
    failed: dict[str, int]  # cause -> Pending pods
    cpu_only_pods: NotRequired[CpuOnlyPodsJson]  # --resources all
    node_allocation: NotRequired[NodeAllocationJson]  # --resources all
    fragmentation: NotRequired[ReplayFragmentationJson]  # the command adds it
