"""Live sources: the only place Prometheus and Kubernetes clients live in the advisor.

`gather(SourceConfig)` reads Prometheus (or the exporters directly) and optionally Kubernetes,
and assembles an `advisor.core.model.Cluster`; `advisor.sources.history.usage_history` gives
right-sizing its time series (a module of its own, so that only its users import pandas).
"""

from __future__ import annotations

from advisor.sources.gather import Gathered, SourceConfig, gather
from advisor.sources.values import Stale

__all__ = ["Gathered", "SourceConfig", "Stale", "gather"]
