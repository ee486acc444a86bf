"""Right-sizing from history: per workload and vGPU, what it uses against what it is allotted.

Input is a pandas DataFrame with one row per vGPU and sample (`HISTORY_COLUMNS`; another part
of the advisor builds it from Prometheus range queries). A workload is the pod's controller
(`owner`), or `namespace/pod` for a pod without one; its vGPUs (every replica's, on every card)
are pooled per container, since the replicas of one workload ask the same.

A workload is advised only from enough history (`RightsizingSettings.min_history_s`, 24 h,
and `min_samples`, 288 sample times): a young or bursty pod seen for a few minutes says
nothing of its peak, and advice from it runs the pod out of memory. Such a workload is listed
with `not_advised` ("not enough history (3 samples over 15 m; need 288 over 24 h)") and no
recommendation. The history a workload covers is its first to last sample time plus one
step (the median gap between its sample times): 288 samples 5 minutes apart cover 24 h.

Recommended request per card: the used memory's peak (or p95) and the used core's p95 (or
peak) × (1 + headroom), never below the observed peak × (1 + peak margin), rounded UP to
128 MiB and to 5 %, at least one unit, at most the card. Memory defaults to the peak because
running out of GPU memory kills the process, core to p95 because too little core only slows
it. Memory-isolation vGPUs (no core allotted) keep their mode: they get no core
recommendation. Each entry's `evidence` says what it stands on: the history covered, the
sample count, the peaks, the percentile used (100 for the peak) and the floor.

Overcommit (1.2–1.5×, e.g. HAMi's device-memory scaling) is suggested for a workload only when
its history supports it (`RightsizingSettings`): enough samples, covering most of the window,
p95 of used / allotted memory at most 0.6 and its peak at most 0.9. The ratio is
1 / (p95 ratio × (1 + headroom)), rounded down to 0.1 and capped at 1.5; below 1.2, none.

"How many Pending pods would fit" shrinks every running pod of a workload to the recommendation
(never grows it: it already runs where it is) and diagnoses the cluster again (simulated).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import asdict
from types import MappingProxyType
from typing import Any

import pandas as pd

from advisor.core.diagnose import diagnose
from advisor.core.history import History, duration_text, not_enough
from advisor.core.model import CORE_STEP, MAX_MEMORY_UNITS, MIB_PER_UNIT, Cluster, Pod, Request
from advisor.core.profiles import profile_of
from advisor.core.whatif import held_mib
from advisor.defaults import Basis, RightsizingSettings
from advisor.errors import known
from advisor.schemas import RIGHTSIZING_SCHEMA

MIB = 1024 * 1024

HISTORY_COLUMNS: Mapping[str, str] = MappingProxyType(
    {
        "timestamp": "float: the sample's time, unix seconds",
        "namespace": "str: the pod's namespace",
        "pod": "str: the pod's name",
        "container": "str: the container holding the vGPU",
        "owner": "str: controller as Kind/namespace/name; empty when the pod has none",
        "node": "str: the node's name",
        "gpu_index": "int: the card's index on the node",
        "memory_allotted_bytes": "float: card memory allotted to this vGPU",
        "memory_used_bytes": "float: card memory the container's processes use",
        "core_allotted_percent": "float: core % allotted; 0 for memory isolation",
        "core_used_percent": "float: % of the card's SMs the container's processes use",
    }
)
TEXT_COLUMNS = ("namespace", "pod", "container", "owner", "node")
NUMERIC_COLUMNS = tuple(c for c in HISTORY_COLUMNS if c not in TEXT_COLUMNS)
GROUP = ["workload", "container"]

PERCENTILE: Mapping[Basis, int] = MappingProxyType({"p95": 95, "peak": 100})


class HistoryError(ValueError):
    """The history DataFrame does not follow HISTORY_COLUMNS; str() says how."""


def validate_history(history: object) -> pd.DataFrame:
    """A clean copy: text columns as str ('' for missing), numbers as float (a datetime
    `timestamp` becomes unix seconds; missing allotted core 0); HistoryError otherwise."""
    if not isinstance(history, pd.DataFrame):
        raise HistoryError(f"history must be a pandas DataFrame, got {type(history).__name__}")
    missing = [c for c in HISTORY_COLUMNS if c not in history.columns]
    if missing:
        raise HistoryError(
            f"history is missing columns {', '.join(missing)} "
            f"(expected {', '.join(HISTORY_COLUMNS)})"
        )
    clean = pd.DataFrame(index=history.index)
    for column in TEXT_COLUMNS:
        clean[column] = history[column].fillna("").astype(str)
    for column in NUMERIC_COLUMNS:
        raw = history[column]
        if column == "timestamp" and pd.api.types.is_datetime64_any_dtype(raw):
            raw = (raw - pd.Timestamp(0, tz=getattr(raw.dt, "tz", None))).dt.total_seconds()
        values = pd.to_numeric(raw, errors="coerce")
        bad = values.isna() & raw.notna()
        if bad.any():
            raise HistoryError(
                f"history column {column} has a non-numeric value {raw[bad].iloc[0]!r}"
            )
        if (values < 0).any():
            raise HistoryError(f"history column {column} has a negative value {values.min()}")
        clean[column] = values.astype(float)
    # A memory-isolated vGPU has no core series at all: missing allotted core means 0.
    clean["core_allotted_percent"] = clean["core_allotted_percent"].fillna(0.0)
    if clean["timestamp"].isna().any():
        raise HistoryError("history column timestamp has missing values")
    return clean


def rightsize(
    history: object, cluster: Cluster | None = None, settings: RightsizingSettings | None = None
) -> dict[str, Any]:
    """Recommendations per workload and container, and (with `cluster`) the simulated effect
    on the Pending pods. `cluster` also gives the card sizes that cap the recommendations."""
    settings = settings or RightsizingSettings()
    frame = validate_history(history)
    card_mib = _card_sizes(cluster)
    start = float(frame["timestamp"].min()) if len(frame) else 0.0
    end = float(frame["timestamp"].max()) if len(frame) else 0.0
    workloads = _workloads(frame, card_mib, start, end, settings) if len(frame) else []
    result: dict[str, Any] = {
        "schema": RIGHTSIZING_SCHEMA,
        "window": {"start": start, "end": end, "seconds": end - start},
        "settings": asdict(settings),
        "workloads": workloads,
    }
    if cluster is not None:
        result["pending_fit"] = pending_fit(cluster, workloads)
    return result


def _card_sizes(cluster: Cluster | None) -> dict[tuple[str, int], int]:
    if cluster is None:
        return {}
    return {(n.name, c.index): c.memory_mib for n in cluster.nodes for c in n.cards}


def _workloads(
    frame: pd.DataFrame,
    card_mib: dict[tuple[str, int], int],
    start: float,
    end: float,
    settings: RightsizingSettings,
) -> list[dict[str, Any]]:
    frame = frame.assign(
        workload=frame["owner"].where(
            frame["owner"] != "", frame["namespace"] + "/" + frame["pod"]
        ),
        used_mib=frame["memory_used_bytes"] / MIB,
        allotted_mib=frame["memory_allotted_bytes"] / MIB,
    )
    allotted = frame["memory_allotted_bytes"]
    frame["ratio"] = (frame["memory_used_bytes"] / allotted).where(allotted > 0)
    entries = []
    for key, group in frame.groupby(GROUP, sort=True):
        workload, container = (str(k) for k in key)
        entries.append(_entry(workload, container, group, card_mib, end - start, settings))
    return entries


def _entry(
    workload: str,
    container: str,
    group: pd.DataFrame,
    card_mib: dict[tuple[str, int], int],
    window: float,
    settings: RightsizingSettings,
) -> dict[str, Any]:
    latest = group[group["timestamp"] == group["timestamp"].max()]
    allotted_mib = _round_mib(float(latest["allotted_mib"].max()))
    allotted_core = float(latest["core_allotted_percent"].max())
    memory_isolation = allotted_core == 0
    cards = {(str(n), int(i)) for n, i in zip(latest["node"], latest["gpu_index"], strict=True)}
    known = [card_mib[c] for c in cards if c in card_mib]
    ceiling = min(known) if known else MAX_MEMORY_UNITS * MIB_PER_UNIT
    used = group["used_mib"].dropna()
    core = group["core_used_percent"].dropna()
    memory_stats = _stats(used)
    core_stats = _stats(core)
    history = History.of(group["timestamp"].to_numpy(dtype=float))
    short = not_enough(history, settings.min_samples, settings.min_history_s)
    memory_rec = None
    if used.size and short is None:
        wanted = _wanted(memory_stats, settings.memory_basis, settings)
        memory_rec = min(max(ceil_to(wanted, MIB_PER_UNIT), MIB_PER_UNIT), ceiling)
    core_rec = None
    if not memory_isolation and core.size and short is None:
        wanted = _wanted(core_stats, settings.core_basis, settings)
        core_rec = min(max(ceil_to(wanted, CORE_STEP), CORE_STEP), 100)
    vgpus = group[["namespace", "pod", "node", "gpu_index"]].drop_duplicates()
    span = float(group["timestamp"].max() - group["timestamp"].min())
    return {
        "workload": workload,
        "container": container,
        "pods": int(group[["namespace", "pod"]].drop_duplicates().shape[0]),
        "vgpus": int(vgpus.shape[0]),
        "samples": int(used.size),
        "mode": "memory" if memory_isolation else "memory+core",
        "memory_mib": {
            "allotted": allotted_mib,
            "used_peak": round(memory_stats["peak"], 1),
            "used_p95": round(memory_stats["p95"], 1),
            "recommended": memory_rec,
        },
        "core_percent": {
            "allotted": allotted_core,
            "used_peak": round(core_stats["peak"], 2),
            "used_p95": round(core_stats["p95"], 2),
            "recommended": core_rec,
        },
        "overcommit": _overcommit(group["ratio"].dropna(), span, window, settings),
        "advised": short is None,
        "not_advised": short,
        "evidence": _evidence(history, memory_stats, core_stats, memory_isolation, settings),
    }


def _wanted(stats: dict[str, float], basis: Basis, settings: RightsizingSettings) -> float:
    """The basis plus headroom, but never below the peak plus the margin."""
    return max(stats[basis] * (1 + settings.headroom), stats["peak"] * (1 + settings.peak_margin))


def history_evidence(history: History) -> dict[str, Any]:
    """The history an advice stands on, as its JSON `evidence` opens with it (right-sizing's
    and the autoscaler targets', `advisor.hpatargets`)."""
    return {
        "first": history.first,
        "last": history.last,
        "window_seconds": history.covered_s,
        "window": duration_text(history.covered_s),
        "step_seconds": history.step,
        "samples": history.samples,
    }


def _evidence(
    history: History,
    memory: dict[str, float],
    core: dict[str, float],
    memory_isolation: bool,
    settings: RightsizingSettings,
) -> dict[str, Any]:
    """What a recommendation stands on (and what a missing one lacked)."""

    def basis(stats: dict[str, float], which: Basis, digits: int) -> dict[str, Any]:
        return {
            "percentile": PERCENTILE[which],
            "basis": round(stats[which], digits),
            "peak": round(stats["peak"], digits),
            "floor": round(stats["peak"] * (1 + settings.peak_margin), digits),
        }

    return {
        **history_evidence(history),
        "headroom": settings.headroom,
        "peak_margin": settings.peak_margin,
        "memory_mib": basis(memory, settings.memory_basis, 1),
        "core_percent": None if memory_isolation else basis(core, settings.core_basis, 2),
    }


def _stats(values: pd.Series[float]) -> dict[str, float]:
    if not values.size:
        return {"peak": 0.0, "p95": 0.0}
    return {"peak": float(values.max()), "p95": float(values.quantile(0.95))}


def ceil_to(value: float, step: int) -> int:
    # Round off float noise first: 1000 MiB × 1.2 must give 1280, not 1408.
    return math.ceil(round(value / step, 9)) * step


def _round_mib(value: float) -> int:
    return round(value) if not math.isnan(value) else 0


def _overcommit(
    ratios: pd.Series[float], span: float, window: float, settings: RightsizingSettings
) -> dict[str, Any]:
    def no(reason: str) -> dict[str, Any]:
        return {"ratio": None, "reason": reason}

    if ratios.size < settings.overcommit_min_samples:
        samples = "sample" if ratios.size == 1 else "samples"
        return no(f"{ratios.size} {samples}, {settings.overcommit_min_samples} needed")
    coverage = span / window if window > 0 else 0.0
    if coverage < settings.overcommit_min_coverage:
        return no(f"history covers {coverage:.0%} of the window")
    p95, peak = float(ratios.quantile(0.95)), float(ratios.max())
    if p95 > settings.overcommit_max_p95_ratio:
        return no(f"p95 use is {p95:.0%} of the allotment")
    if peak > settings.overcommit_max_peak_ratio:
        return no(f"peak use is {peak:.0%} of the allotment")
    raw = math.inf if p95 == 0 else 1 / (p95 * (1 + settings.headroom))
    ratio = min(1.5, math.floor(round(raw * 10, 9)) / 10)
    if ratio < 1.2:
        return no(f"with {settings.headroom:.0%} headroom only {ratio:.1f}x would be safe")
    return {"ratio": ratio, "reason": f"p95 use {p95:.0%}, peak {peak:.0%} of the allotment"}


# -- simulated effect on the Pending pods ------------------------------------------------------


def shrunk_cluster(cluster: Cluster, workloads: list[dict[str, Any]]) -> Cluster:
    """Running pods with their per-card request lowered to their workload's recommendation
    (containers of one pod add up per card, as the pod parser models them); never raised."""
    memory: dict[str, int] = {}
    core: dict[str, int | None] = {}
    for entry in workloads:
        name, rec = entry["workload"], entry["memory_mib"]["recommended"]
        # No samples, no recommendation: a huge figure leaves the pod as it is (min below).
        memory[name] = memory.get(name, 0) + (rec if rec is not None else 1 << 40)
        core_rec = entry["core_percent"]["recommended"]
        previous = core.get(name, 0)
        core[name] = None if previous is None or core_rec is None else previous + core_rec
    held = _held_per_card(cluster)
    pods = tuple(_shrunk(p, memory, core, held) if p.running else p for p in cluster.pods)
    return dataclasses.replace(cluster, pods=pods)


def _held_per_card(cluster: Cluster) -> dict[str, int]:
    """Memory each running pod holds per card under the cluster's profile: its memory per
    card, or for a share or a whole card (hami, volcano-vgpu) what the profile gives it of
    the smallest of its cards."""
    rules = profile_of(cluster.scheduler)
    sizes = _card_sizes(cluster)
    held = {}
    for pod in cluster.running:
        placement = known(pod.placement, f"the placement of running pod {pod.name}")
        keys = [(placement.node, i) for i in placement.cards]
        cards = [sizes[key] for key in keys if key in sizes]
        held[pod.name] = held_mib(rules, pod, cards)
    return held


def _shrunk(
    pod: Pod, memory: dict[str, int], core: dict[str, int | None], held: dict[str, int]
) -> Pod:
    key = pod.owner or pod.name
    if key not in memory:
        return pod
    r = pod.request
    holds = held.get(pod.name, r.card_memory_mib)
    card_memory = min(holds, memory[key])
    card_core = r.card_core_percent
    recommended_core = core[key]
    if card_core > 0 and recommended_core is not None:
        card_core = min(card_core, recommended_core)
    if card_memory < holds:
        # An absolute request (in volcano-vgpu a share would win over it, so none is kept).
        request = Request(r.gpus, card_memory * r.gpus, card_core * r.gpus)
    else:  # memory as it was asked: a share or a whole card keeps its form
        request = dataclasses.replace(r, core_percent=card_core * r.gpus)
    # only the GPU request shrinks: cpu, memory and node constraints stay the pod's own
    return dataclasses.replace(pod, request=request)


def pending_fit(cluster: Cluster, workloads: list[dict[str, Any]]) -> dict[str, Any]:
    """Pending pods schedulable now, and if the recommendations were applied (simulated)."""
    shrunk = shrunk_cluster(cluster, workloads)
    before = {d.pod.name for d in diagnose(cluster, node_detail_limit=0).pods if d.placement}
    after = {d.pod.name for d in diagnose(shrunk, node_detail_limit=0).pods if d.placement}
    held, now_held = _held_per_card(cluster), _held_per_card(shrunk)
    freed = sum(
        (held[old.name] - now_held[new.name]) * old.request.gpus
        for old, new in zip(cluster.pods, shrunk.pods, strict=True)
        if old.running
    )
    return {
        "pending": len(cluster.pending),
        "schedulable_now": len(before),
        "schedulable_after": len(after),
        "newly_schedulable": sorted(after - before),
        "no_longer_schedulable": sorted(before - after),  # greedy placement can shift
        "running_shrunk": sum(
            1 for old, new in zip(cluster.pods, shrunk.pods, strict=True) if old != new
        ),
        "memory_freed_mib": freed,
    }
