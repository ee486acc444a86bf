"""Autoscaler targets from history (docs/design.md §12.2): what the HPA saw, the target and
max_replicas advised from it, capped by the replicas the cluster places, gated by history."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pandas as pd

from advisor import schemas
from advisor.defaults import RightsizingSettings
from advisor.hpatargets import autoscaler_targets
from advisor.render.report.markdown import render_report_markdown
from advisor.render.report.read import read_report
from advisor.report import ReportInputs, ReportOptions, build_report
from tests.advisor.core.scenario_dicts import GiB, build, node, running
from tests.advisor.test_schemas import conforms

MiB = 2**20
FIVE_MINUTES = 300.0
DAY = 288  # sample times 5 minutes apart: right-sizing's default minimum
OWNER = "ReplicaSet/web/infer-7d9f8"  # a Deployment's pods name their ReplicaSet
CORE = "xgpu_core_percentage_used"


def rows(
    pod: str, core_used: Sequence[float | None], *, owner: str = OWNER, gpu_index: int = 0
) -> list[dict[str, Any]]:
    """One vGPU of `pod` (50 % core, 8 GiB allotted), a sample each 5 minutes; None: the
    pod was not there at that step."""
    return [
        {
            "timestamp": i * FIVE_MINUTES,
            "namespace": "web",
            "pod": pod,
            "container": "main",
            "owner": owner,
            "node": "n0",
            "gpu_index": gpu_index,
            "memory_allotted_bytes": 8 * GiB * MiB,
            "memory_used_bytes": 2 * GiB * MiB,
            "core_allotted_percent": 50.0,
            "core_used_percent": used,
        }
        for i, used in enumerate(core_used)
        if used is not None
    ]


def history(*parts: list[dict[str, Any]]) -> pd.DataFrame:
    return pd.DataFrame([r for part in parts for r in part])


def replica(name: str, card: int) -> dict[str, Any]:
    return {**running(f"web/{name}", "n0", [card], 8, 50), "owner": OWNER}


def hpa(max_replicas: int = 4, metrics: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "name": "web/infer-hpa",
        "target": "Deployment/web/infer",
        "min_replicas": 1,
        "max_replicas": max_replicas,
        "replicas": 2,
        "metrics": [{"pod_metric": CORE, "target_average": 60}] if metrics is None else metrics,
    }


def only(
    frame: pd.DataFrame,
    *,
    room: int = 2,
    autoscaler: dict[str, Any] | None = None,
    settings: RightsizingSettings | None = None,
) -> dict[str, Any]:
    """Two replicas (8 GiB, 50 % core each) on card 0 of a node with two 16 GiB cards; card 1
    has room for `room` more (another workload holds the rest)."""
    pods = [replica("infer-1", 0), replica("infer-2", 0)]
    if room < 2:
        pods.append(running("x/other", "n0", [1], 8 * (2 - room), 50 * (2 - room)))
    cluster = build([node("n0", 16, 16)], pods, autoscalers=[autoscaler or hpa()])
    (entry,) = autoscaler_targets(frame, cluster, settings=settings)
    return entry


def test_steady_load_keeps_two_replicas_at_seventy_percent() -> None:
    """Each pod uses 30 of its 50 % core all day: the HPA saw 30 with 2 replicas. Aim at
    70 % of the allotment: 35; the p95 and the peak demand (60) need ceil(60 / 35) = 2."""
    entry = only(history(rows("infer-1", [30.0] * DAY), rows("infer-2", [30.0] * DAY)))
    assert (entry["status"], entry["reason"]) == ("advised", None)
    assert entry["recommended"] == {"target_average": 35.0, "max_replicas": 2}
    assert entry["current"] == {
        "target_average": 60.0,
        "min_replicas": 1,
        "max_replicas": 4,
        "replicas": 2,
    }
    assert entry["observed"] == {
        "per_pod_allotted": 50.0,
        "average_p95": 30.0,
        "average_peak": 30.0,
        "demand_p95": 60.0,
        "demand_peak": 60.0,
        "replicas_min": 2,
        "replicas_max": 2,
    }
    assert entry["confidence"] == {"level": "high", "why": []}
    assert (entry["notes"], entry["reachable_replicas"]) == ([], 4)
    assert entry["evidence"] == {
        "first": 0.0,
        "last": 287 * FIVE_MINUTES,
        "window_seconds": 86400.0,
        "window": "24 h",
        "step_seconds": FIVE_MINUTES,
        "samples": DAY,
    }
    series = entry["series"]
    assert (len(series["timestamps"]), set(series["average"]), set(series["replicas"])) == (
        DAY,
        {30.0},
        {2},
    )


def test_spiky_load_sets_max_replicas_by_the_peak() -> None:
    """Two pods at 20 but for 10 steps where a third joins and all three run at 45: demand
    40 at p95 (the 10 spikes are under 5 % of 288 steps), 135 at the peak. At 35 the peak
    needs ceil(135 / 35) = ceil(3.86) = 4 replicas, which the cluster places."""
    spike = range(100, 110)
    first = [45.0 if i in spike else 20.0 for i in range(DAY)]
    third: list[float | None] = [45.0 if i in spike else None for i in range(DAY)]
    entry = only(history(rows("infer-1", first), rows("infer-2", first), rows("infer-3", third)))
    assert entry["recommended"] == {"target_average": 35.0, "max_replicas": 4}
    observed = entry["observed"]
    assert (observed["demand_p95"], observed["demand_peak"]) == (40.0, 135.0)
    assert (observed["replicas_min"], observed["replicas_max"]) == (2, 3)
    assert entry["series"]["replicas"][100] == 3
    assert entry["series"]["average"][100] == 45.0
    assert entry["confidence"] == {"level": "high", "why": []}


def test_max_replicas_capped_by_what_the_cluster_places() -> None:
    """Card 1 has room for one more replica only: 2 + 1 = 3 reachable. Spikes of three pods
    at 50 make 150 at the peak, ceil(150 / 35) = 5 replicas: capped at 3, with why."""
    spike = range(100, 110)
    heavy = [50.0 if i in spike else 20.0 for i in range(DAY)]
    third: list[float | None] = [50.0 if i in spike else None for i in range(DAY)]
    entry = only(
        history(rows("infer-1", heavy), rows("infer-2", heavy), rows("infer-3", third)), room=1
    )
    assert entry["reachable_replicas"] == 3
    assert entry["recommended"] == {"target_average": 35.0, "max_replicas": 3}
    (note,) = entry["notes"]
    assert note == (
        "the peak needs 5 replicas at this target; capped at the 3 the cluster places "
        "(the next stays Pending: capacity)"
    )


def test_load_the_cluster_cannot_hold_raises_the_target_to_its_most() -> None:
    """Three pods at their full 50 % all day: demand 150 at p95. At 35 that needs 5
    replicas, the cluster places 3: the target rises to 150 / 3 = 50, past 90 % of the
    allotment (45), so 45, where the load still needs ceil(150 / 45) = 4."""
    full = [50.0] * DAY
    frame = history(rows("infer-1", full), rows("infer-2", full), rows("infer-3", full))
    entry = only(frame, room=1, autoscaler=hpa(max_replicas=3))
    assert entry["recommended"] == {"target_average": 45.0, "max_replicas": 3}
    assert entry["notes"][0] == (
        "at p95 the load needs 4 replicas even at the highest target (90% of a pod's "
        "allotment); the cluster places 3"
    )
    # the peak ran at max_replicas: the HPA could add none, the load may have been higher
    assert entry["confidence"]["level"] == "low"
    assert entry["confidence"]["why"] == [
        "at its peak the target ran at max_replicas (3): the load may have been higher than seen"
    ]


def test_a_higher_max_replicas_only_where_the_cluster_places_it() -> None:
    """max_replicas 2, but the peak needs 4: the reach is tried up to 4, which card 1
    holds (2 + 2), so 4 is advised."""
    spike = range(100, 110)
    first = [45.0 if i in spike else 20.0 for i in range(DAY)]
    third: list[float | None] = [45.0 if i in spike else None for i in range(DAY)]
    frame = history(rows("infer-1", first), rows("infer-2", first), rows("infer-3", third))
    entry = only(frame, autoscaler=hpa(max_replicas=2))
    assert entry["recommended"] == {"target_average": 35.0, "max_replicas": 4}
    assert entry["reachable_replicas"] == 4


def test_too_little_history_is_refused_with_what_is_missing() -> None:
    """52 hourly samples cover 51 h + one 1 h step = 2 d 4 h; a week is asked."""
    hourly = [
        {**r, "timestamp": i * 3600.0}
        for pod in ("infer-1", "infer-2")
        for i, r in enumerate(rows(pod, [30.0] * 52))
    ]
    week = RightsizingSettings(min_history_s=7 * 86400, min_samples=168)
    entry = only(pd.DataFrame(hourly), settings=week)
    assert entry["status"] == "not-advised"
    assert entry["reason"] == "not enough history (52 samples over 2 d 4 h; need 168 over 7 d)"
    assert (entry["recommended"], entry["confidence"]) == (None, None)
    # what was seen is given all the same
    assert entry["evidence"]["window"] == "2 d 4 h"
    assert entry["observed"]["average_peak"] == 30.0


def test_an_hpa_without_an_exporter_pods_metric_is_not_applicable() -> None:
    frame = history(rows("infer-1", [30.0] * DAY))
    other = [{"pod_metric": "http_requests_per_second", "target_average": 100}]
    for metrics in ([], other):
        entry = only(frame, autoscaler=hpa(metrics=metrics))
        assert (entry["status"], entry["metric"], entry["recommended"]) == (
            "not-applicable",
            None,
            None,
        )
        assert entry["reason"] == (
            "no Pods metric on an exporter per-pod series "
            "(xgpu_core_percentage_used, xgpu_memory_used)"
        )


def test_other_workloads_and_a_pods_cards() -> None:
    """A pod's two vGPUs add up (20 + 20 of 50 + 50: 40 of 100), as the adapter sums a
    pod's series; another workload's pod is not the target's."""
    two_cards = history(
        rows("infer-1", [20.0] * DAY),
        rows("infer-1", [20.0] * DAY, gpu_index=1),
        rows("batch-1", [50.0] * DAY, owner="Job/web/batch"),
    )
    entry = only(two_cards)
    observed = entry["observed"]
    assert (observed["average_peak"], observed["per_pod_allotted"]) == (40.0, 100.0)
    assert observed["replicas_max"] == 1
    assert entry["recommended"] == {"target_average": 70.0, "max_replicas": 1}


def test_memory_metric_targets_in_bytes() -> None:
    """xgpu_memory_used: 2 GiB used of 8 GiB per pod; 70 % of 8192 MiB = 5734.4, rounded up
    to a whole MiB, in bytes."""
    frame = history(rows("infer-1", [30.0] * DAY), rows("infer-2", [30.0] * DAY))
    memory = [{"pod_metric": "xgpu_memory_used", "target_average": 4 * GiB * MiB}]
    entry = only(frame, autoscaler=hpa(metrics=memory))
    assert entry["metric"] == "xgpu_memory_used"
    assert entry["recommended"] == {"target_average": 5735.0 * MiB, "max_replicas": 1}


def report_of(frame: pd.DataFrame, autoscaler: dict[str, Any]) -> dict[str, Any]:
    pods = [replica("infer-1", 0), replica("infer-2", 0)]
    cluster = build([node("n0", 16, 16)], pods, autoscalers=[autoscaler])
    inputs = ReportInputs(cluster, "scenario", 1_764_491_400.0, history=frame)
    return build_report(inputs, ReportOptions(time_budget_s=10), lambda: 0.0).data


def test_the_report_carries_them_and_its_markdown_says_them() -> None:
    frame = history(rows("infer-1", [30.0] * DAY), rows("infer-2", [30.0] * DAY))
    data = report_of(frame, hpa())
    (entry,) = data["autoscaler_targets"]
    assert entry["recommended"] == {"target_average": 35.0, "max_replicas": 2}
    assert conforms(data, schemas.REPORT_SCHEMA) == []
    assert conforms(read_report(data), schemas.REPORT_SCHEMA) == []
    markdown = render_report_markdown(data)
    assert (
        "## Autoscaler targets\n\n- web/infer-hpa on xgpu_core_percentage_used: "
        "target_average 60 % → 35 %, max_replicas 4 → 2; the HPA saw 30 % at p95 (peak 30 %) "
        "over 2–2 replicas; 24 h, 288 samples; confidence high\n"
    ) in markdown
    short = report_of(history(rows("infer-1", [30.0] * 3)), hpa())
    assert (
        "- web/infer-hpa on xgpu_core_percentage_used: not advised: not enough history "
        "(3 samples over 15 m; need 288 over 24 h)\n"
    ) in render_report_markdown(short)


def test_no_history_no_targets_and_a_junk_file_reads() -> None:
    pods = [replica("infer-1", 0)]
    cluster = build([node("n0", 16, 16)], pods, autoscalers=[hpa()])
    inputs = ReportInputs(cluster, "scenario", 1_764_491_400.0)
    data = build_report(inputs, ReportOptions(time_budget_s=10), lambda: 0.0).data
    assert "autoscaler_targets" not in data
    assert "Autoscaler targets" not in render_report_markdown(data)
    junk = read_report({"autoscaler_targets": [None, {"recommended": 5, "notes": [1]}]})
    assert conforms(junk, schemas.REPORT_SCHEMA) == []
    assert [t["status"] for t in junk["autoscaler_targets"]] == ["?", "?"]


def test_a_replica_gone_since_counts_by_the_name_its_controller_gave_it() -> None:
    """Owners come from the pods there are now, so a replica scaled down since has none in
    the history: `infer-6c5b4-zzzzz` (an older rollout's ReplicaSet) is the Deployment's by
    its name; `inference-abcde`, and a namesake in another namespace, are not."""
    gone = rows("infer-6c5b4-zzzzz", [30.0] * DAY, owner="")
    other = rows("inference-abcde", [50.0] * DAY, owner="")
    elsewhere = [{**r, "namespace": "lab"} for r in rows("infer-6c5b4-yyyyy", [50.0] * DAY)]
    elsewhere = [{**r, "owner": ""} for r in elsewhere]
    frame = history(rows("infer-1", [30.0] * DAY), gone, other, elsewhere)
    observed = only(frame)["observed"]
    assert (observed["replicas_max"], observed["demand_peak"]) == (2, 60.0)
