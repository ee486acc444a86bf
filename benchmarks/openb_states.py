"""The openb end states the plan benchmarks start from: the default pod list replayed onto
the node list (card binpack), where `benchmarks.trace_dir` finds the trace.

Below `plan_bench`, `plan_ceiling` and `plan_queue_ceiling`, which all read them, so that
none of the three imports another to find the trace (the layers are in pyproject.toml).
"""

from __future__ import annotations

from pathlib import Path
from typing import cast

from advisor.core.model import Cluster, Policy, PolicyName
from advisor.replay import load_trace, replay
from benchmarks.trace_dir import NODES_CSV, candidates, find_openb

PODS_CSV = "openb_pod_list_default.csv"
__all__ = ["NODES_CSV", "PODS_CSV", "end_state", "openb_dir"]


def openb_dir() -> Path:
    """Where the trace lives (`benchmarks.trace_dir`); the first candidate when absent."""
    return find_openb() or candidates()[0]


def end_state(node_policy: str) -> Cluster:
    policy = Policy(node=cast(PolicyName, node_policy), card="binpack")
    trace = load_trace(openb_dir() / NODES_CSV, openb_dir() / PODS_CSV, policy)
    return replay(trace).end_state()
