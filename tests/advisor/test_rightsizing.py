"""Right-sizing on synthetic histories: statistics, rounding, modes, overcommit, simulation."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import pandas as pd
import pytest

from advisor.core.model import Cluster
from advisor.defaults import RightsizingSettings
from advisor.rightsizing import (
    HISTORY_COLUMNS,
    HistoryError,
    pending_fit,
    shrunk_cluster,
    validate_history,
)
from advisor.rightsizing import rightsize as gated_rightsize
from advisor.scenario import scenario_from_data

MiB = 1024 * 1024
GiB = 1024


def samples(
    used_mib: Sequence[float],
    *,
    pod: str = "infer-1",
    owner: str = "Deployment/ml/infer",
    container: str = "main",
    node: str = "n1",
    gpu_index: int = 0,
    allotted_mib: float = 4096,
    core_allotted: float = 0,
    core_used: Sequence[float] | None = None,
    start: float = 0,
    step: float = 60,
) -> list[dict[str, Any]]:
    """One vGPU's samples, one per `step` seconds from `start`."""
    core_used = core_used if core_used is not None else [0.0] * len(used_mib)
    return [
        {
            "timestamp": start + i * step,
            "namespace": "ml",
            "pod": pod,
            "container": container,
            "owner": owner,
            "node": node,
            "gpu_index": gpu_index,
            "memory_allotted_bytes": allotted_mib * MiB,
            "memory_used_bytes": used * MiB,
            "core_allotted_percent": core_allotted,
            "core_used_percent": core,
        }
        for i, (used, core) in enumerate(zip(used_mib, core_used, strict=True))
    ]


def rightsize(
    history: object, cluster: Cluster | None = None, settings: RightsizingSettings | None = None
) -> dict[str, Any]:
    """Right-sizing with the history gate off: these tests judge the arithmetic on short
    histories; test_rightsizing_history.py judges the gate."""
    ungated = dataclasses.replace(settings or RightsizingSettings(), min_history_s=0, min_samples=1)
    return gated_rightsize(history, cluster, ungated)


def frame(*rows: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame([r for part in rows for r in part])


def only(result: dict[str, Any]) -> dict[str, Any]:
    [entry] = result["workloads"]
    assert isinstance(entry, dict)
    return entry


RAMP = [100.0 * i for i in range(1, 21)]  # 100..2000 MiB: peak 2000, p95 1905 (linear)


def test_peak_p95_and_rounding_up_to_128_mib() -> None:
    entry = only(rightsize(frame(samples(RAMP))))
    assert entry["workload"] == "Deployment/ml/infer"
    assert entry["mode"] == "memory"
    assert entry["memory_mib"] == {
        "allotted": 4096,
        "used_peak": 2000.0,
        "used_p95": 1905.0,
        "recommended": 2432,  # 2000 x 1.2 = 2400 -> 19 x 128
    }
    assert entry["core_percent"]["recommended"] is None  # memory isolation keeps its mode
    p95 = only(rightsize(frame(samples(RAMP)), settings=RightsizingSettings(memory_basis="p95")))
    assert p95["memory_mib"]["recommended"] == 2304  # 1905 x 1.2 = 2286 -> 18 x 128


def test_exact_multiples_and_bounds() -> None:
    assert only(rightsize(frame(samples([640.0]))))["memory_mib"]["recommended"] == 768
    assert only(rightsize(frame(samples([0.0]))))["memory_mib"]["recommended"] == 128
    cluster = scenario_from_data(
        {"nodes": [{"name": "n1", "cards": [{"index": 0, "memory_mib": 16 * GiB}]}]}, "c.yaml"
    )
    full = rightsize(frame(samples([15 * 1024.0], allotted_mib=16 * 1024)), cluster)
    assert only(full)["memory_mib"]["recommended"] == 16 * GiB  # never above the card


def test_core_recommendation_for_memory_core_isolation() -> None:
    cores = [float(i) for i in range(1, 21)]  # p95 19.05 -> x 1.2 = 22.86 -> 25
    entry = only(rightsize(frame(samples(RAMP, core_allotted=30, core_used=cores))))
    assert entry["mode"] == "memory+core"
    assert entry["core_percent"] == {
        "allotted": 30.0,
        "used_peak": 20.0,
        "used_p95": 19.05,
        "recommended": 25,
    }
    idle = only(rightsize(frame(samples([100.0], core_allotted=30, core_used=[0.0]))))
    assert idle["core_percent"]["recommended"] == 5  # at least one step


def test_workloads_pool_replicas_and_split_containers() -> None:
    history = frame(
        samples([1000.0, 3000.0], pod="infer-1"),
        samples([2000.0, 500.0], pod="infer-2", gpu_index=1),
        samples([300.0, 300.0], pod="infer-1", container="sidecar"),
        samples([50.0], pod="solo", owner=""),
    )
    result = rightsize(history)
    keys = [(w["workload"], w["container"], w["pods"], w["vgpus"]) for w in result["workloads"]]
    assert keys == [
        ("Deployment/ml/infer", "main", 2, 2),
        ("Deployment/ml/infer", "sidecar", 1, 1),
        ("ml/solo", "main", 1, 1),
    ]
    assert result["workloads"][0]["memory_mib"]["used_peak"] == 3000.0
    assert result["window"] == {"start": 0.0, "end": 60.0, "seconds": 60.0}


def test_latest_allotment_is_the_current_one() -> None:
    history = frame(
        samples([100.0], allotted_mib=8192), samples([100.0], allotted_mib=2048, start=60)
    )
    assert only(rightsize(history))["memory_mib"]["allotted"] == 2048


def long_history(ratio: float, n: int = 100, **kw: Any) -> list[dict[str, Any]]:
    return samples([4096 * ratio] * n, allotted_mib=4096, **kw)


@pytest.mark.parametrize(
    ("ratio", "expected"),
    [(0.5, 1.5), (0.6, 1.3), (0.25, 1.5)],  # 1/(0.5 x 1.2) = 1.67 -> cap; 1/(0.72) = 1.39 -> 1.3
)
def test_overcommit_when_history_supports_it(ratio: float, expected: float) -> None:
    overcommit = only(rightsize(frame(long_history(ratio))))["overcommit"]
    assert overcommit["ratio"] == expected


def test_no_overcommit_without_support() -> None:
    def ratio_of(history: pd.DataFrame, **kw: Any) -> Any:
        result = rightsize(history, settings=RightsizingSettings(**kw))
        return {w["workload"]: w["overcommit"] for w in result["workloads"]}

    busy = ratio_of(frame(long_history(0.7)))["Deployment/ml/infer"]
    assert busy["ratio"] is None
    assert "p95" in busy["reason"]
    few = ratio_of(frame(long_history(0.3, n=10)))["Deployment/ml/infer"]
    assert (few["ratio"], few["reason"]) == (None, "10 samples, 60 needed")
    # A spike above 90% of the allotment, however rare, rules it out.
    spiky = samples([1000.0] * 99 + [4000.0], allotted_mib=4096)
    assert ratio_of(frame(spiky))["Deployment/ml/infer"]["ratio"] is None
    # Samples over only the second half of the window do not speak for all of it.
    partial = frame(long_history(0.3, start=6000), long_history(0.9, pod="x", owner="other"))
    assert "covers 50%" in ratio_of(partial)["Deployment/ml/infer"]["reason"]
    # Much headroom leaves less than 1.2x.
    assert ratio_of(frame(long_history(0.5)), headroom=1.0)["Deployment/ml/infer"]["ratio"] is None


def cluster_for_fit() -> Cluster:
    """One 16 GiB card held by two 8 GiB replicas of ml/infer; a 4 GiB pod waits."""
    owner = "Deployment/ml/infer"
    pods = [
        {
            "name": f"ml/infer-{i}",
            "node": "n1",
            "cards": [0],
            "owner": owner,
            "request": {"gpus": 1, "memory_mib": 8 * GiB},
        }
        for i in (1, 2)
    ]
    pods.append({"name": "ml/wait", "request": {"gpus": 1, "memory_mib": 4 * GiB}})
    nodes = [{"name": "n1", "cards": [{"index": 0, "memory_mib": 16 * GiB}]}]
    return scenario_from_data({"nodes": nodes, "pods": pods}, "c.yaml")


def test_pending_pods_that_would_fit_after_right_sizing() -> None:
    history = frame(
        samples(RAMP, pod="infer-1", allotted_mib=8192),
        samples(RAMP, pod="infer-2", allotted_mib=8192),
    )
    result = rightsize(history, cluster_for_fit())
    assert result["pending_fit"] == {
        "pending": 1,
        "schedulable_now": 0,
        "schedulable_after": 1,
        "newly_schedulable": ["ml/wait"],
        "no_longer_schedulable": [],
        "running_shrunk": 2,
        "memory_freed_mib": 2 * (8192 - 2432),
    }


def test_requests_are_never_grown_and_containers_add_up() -> None:
    cluster = cluster_for_fit()
    workloads = [
        {
            "workload": "Deployment/ml/infer",
            "memory_mib": {"recommended": 1024},
            "core_percent": {"recommended": None},
        },
        {
            "workload": "Deployment/ml/infer",
            "memory_mib": {"recommended": 512},
            "core_percent": {"recommended": None},
        },
    ]
    shrunk = shrunk_cluster(cluster, workloads)
    assert [p.request.memory_mib for p in shrunk.pods] == [1536, 1536, 4 * GiB]
    grown = [
        {
            "workload": "Deployment/ml/infer",
            "memory_mib": {"recommended": 12288},
            "core_percent": {"recommended": None},
        }
    ]
    assert shrunk_cluster(cluster, grown) == cluster
    assert pending_fit(cluster, grown)["running_shrunk"] == 0


def test_empty_history_gives_no_workloads() -> None:
    empty = pd.DataFrame({c: [] for c in HISTORY_COLUMNS})
    assert rightsize(empty)["workloads"] == []


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (
            lambda df: df.drop(columns=["memory_used_bytes", "node"]),
            "missing columns node, memory_used_bytes",
        ),
        (lambda df: df.assign(gpu_index="zero"), "gpu_index has a non-numeric value 'zero'"),
        (lambda df: df.assign(memory_used_bytes=-1.0), "memory_used_bytes has a negative value"),
        (lambda df: df.assign(timestamp=float("nan")), "timestamp has missing values"),
        (lambda df: df.to_dict(), "must be a pandas DataFrame, got dict"),
    ],
)
def test_bad_schema_is_a_clear_error(mutate: Any, message: str) -> None:
    with pytest.raises(HistoryError, match=message):
        rightsize(mutate(frame(samples([100.0]))))


def test_validate_fills_missing_owner() -> None:
    history = frame(samples([100.0], owner=""))
    history["owner"] = None
    clean = validate_history(history)
    assert clean["owner"].tolist() == [""]
    assert only(rightsize(history))["workload"] == "ml/infer-1"


def test_datetime_timestamps_and_missing_core_series() -> None:
    """Memory-isolated vGPUs have no core series (NaN): still memory isolation."""
    history = frame(samples([100.0, 200.0]))
    history["timestamp"] = pd.to_datetime(history["timestamp"], unit="s", utc=True)
    history["core_allotted_percent"] = float("nan")
    history["core_used_percent"] = float("nan")
    history["gpu_index"] = "0"
    result = rightsize(history)
    assert result["window"] == {"start": 0.0, "end": 60.0, "seconds": 60.0}
    assert only(result)["mode"] == "memory"
    assert only(result)["core_percent"]["recommended"] is None
