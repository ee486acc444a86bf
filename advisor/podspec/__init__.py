"""The one parser of Kubernetes pod objects into GPU requests and allocations.

Reads the three dialects of docs/design.md §1 (CCE xGPU, Volcano vGPU, HAMi); shared by the
advisor (Pending and running pods) and the exporter (vGPU attribution). Only readability is
checked here; the even-split rules are each profile's `request_problem` (advisor.core.profiles).
"""

from __future__ import annotations

from advisor.podspec.allocation import parse_allocation
from advisor.podspec.pod import parse_pod
from advisor.podspec.values import AllocatedCard, ContainerGpu, PodGpu

__all__ = ["AllocatedCard", "ContainerGpu", "PodGpu", "parse_allocation", "parse_pod"]
