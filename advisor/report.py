"""One advisor run as data: diagnose, plan, measure fragmentation, advise (docs/design.md §3–§8).

`build_report` is pure apart from the clock it is handed (the plan search's time budget);
the `report` command does the I/O around it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from advisor.core.autoscalers import judged
from advisor.core.diagnosis import Diagnosis
from advisor.core.fragmentation import fragmentation
from advisor.core.model import Cluster, reference_card_mib
from advisor.core.occupancy import forget_built_state
from advisor.core.plan import PlanOptions, plan
from advisor.core.profiles import profile_of
from advisor.core.scaling import (
    allotted_gpus,
    capacity_gpus,
    headroom,
    pod_remedies,
    scaling_advice,
)
from advisor.core.scaling.replicas import replica_trial
from advisor.core.waiting import pending_ages, run_time, scheduling_latencies
from advisor.defaults import DEFAULT_WORK, RightsizingSettings
from advisor.metrics import RunFigures
from advisor.output import cluster_view, diagnosis_json
from advisor.output.fragmentation import fragmentation_json
from advisor.output.mig import add_mig_profiles
from advisor.output.plan import add_advice, add_room, plan_json
from advisor.output.scaling import headroom_json
from advisor.schemas import (
    REPORT_SCHEMA,
    AutoscalerTargetJson,
    ReportJson,
    RightsizingJson,
    StaleJson,
    UsageJson,
)

# pandas (and right-sizing, the HPA targets, which read history with it) loads only for a run
# with history: most of a scenario run's imports otherwise (README "Start-up").
if TYPE_CHECKING:
    import pandas as pd

NODE_DETAIL = 20
MIB = 2**20


@dataclass(frozen=True, slots=True)
class ReportOptions:
    time_budget_s: float = 60.0
    plan_work: int = DEFAULT_WORK  # the plan search's bound (`PlanOptions.work`)
    scale_down_threshold: float = 0.3
    target_utilisation: float = 0.7
    redundancy: float = 0.2
    rightsizing: RightsizingSettings = field(default_factory=RightsizingSettings)


@dataclass(frozen=True, slots=True)
class ReportInputs:
    cluster: Cluster
    source: str
    generated_at: float  # unix seconds
    warnings: tuple[str, ...] = ()
    stale: tuple[dict[str, Any], ...] = ()
    history: pd.DataFrame | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class Report:
    # JSON-ready, schema REPORT_SCHEMA: built as a ReportJson (advisor.schemas), kept as a
    # plain dict for the callers that add to it (the `report` command's render phase).
    data: dict[str, Any]
    figures: RunFigures  # the advisor's own series for this run


def usage_series(history: pd.DataFrame) -> dict[str, list[float]]:
    """Cluster totals per step: allotted and used vGPU memory in bytes."""
    import pandas as pd

    frame = history.copy()
    stamps = frame["timestamp"]
    if pd.api.types.is_datetime64_any_dtype(stamps):
        frame["timestamp"] = stamps.astype("int64") / 1e9
    totals = (
        frame.groupby("timestamp")[["memory_allotted_bytes", "memory_used_bytes"]]
        .sum()
        .sort_index()
    )
    return {
        "timestamps": [float(t) for t in totals.index],
        "allotted_bytes": [float(v) for v in totals["memory_allotted_bytes"]],
        "used_bytes": [float(v) for v in totals["memory_used_bytes"]],
    }


def history_peaks(history: pd.DataFrame, cluster: Cluster) -> tuple[float, float | None]:
    """Observed peaks of allotted and used memory in GPUs of memory (`model.gpu_mib`: bytes
    over the commonest card's, summed per step), for the headroom advice. Cards the model
    does not know (gone since) are left out."""
    import pandas as pd

    cards = pd.DataFrame(
        [(n.name, c.index) for n in cluster.nodes for c in n.cards], columns=["node", "gpu_index"]
    )
    frame = history.merge(cards, on=["node", "gpu_index"], how="inner")
    if frame.empty:
        return 0.0, None
    gpu_bytes = reference_card_mib(cluster) * MIB
    frame["allotted"] = frame["memory_allotted_bytes"] / gpu_bytes
    frame["used"] = frame["memory_used_bytes"] / gpu_bytes
    per_step = frame.groupby("timestamp")[["allotted", "used"]].sum()
    return float(per_step["allotted"].max()), float(per_step["used"].max())


class PhaseClock:
    """Seconds per phase of one run, read off the caller's clock.

    Each phase ends where the next begins, on boundaries rounded to the millisecond, so the
    phases are never negative and add up to the rounded duration (a phase named twice adds).
    """

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self.started = clock()
        self._last = 0.0
        self.phases: dict[str, float] = {}

    def end(self, phase: str) -> None:
        """The phase that ran since the last boundary is over now."""
        boundary = round(self._clock() - self.started, 3)
        spent = round(max(boundary - self._last, 0.0), 3)
        self._last = max(boundary, self._last)
        self.phases[phase] = round(self.phases.get(phase, 0.0) + spent, 3)

    @property
    def duration(self) -> float:
        return self._last


def ages_by_cause(diagnosis: Diagnosis, ages: Mapping[str, float]) -> dict[str, list[float]]:
    """The known Pending ages, grouped by each pod's cause (§12.3)."""
    grouped: dict[str, list[float]] = {}
    for d in diagnosis.pods:
        if d.pod.name in ages:
            grouped.setdefault(d.cause, []).append(ages[d.pod.name])
    return grouped


def build_report(
    inputs: ReportInputs, options: ReportOptions, clock: Callable[[], float]
) -> Report:
    timer = PhaseClock(clock)
    cluster = inputs.cluster
    diagnosis, reaches = judged(cluster, node_detail_limit=NODE_DETAIL)  # and the HPAs' (§12.2)
    now = run_time(cluster, inputs.generated_at)
    ages = pending_ages(cluster, now)
    timer.end("diagnose")
    budget = PlanOptions(time_budget_s=options.time_budget_s, work=options.plan_work)
    plans = plan(cluster, budget, clock=clock, diagnosis=diagnosis)
    trial = replica_trial(cluster, reaches, budget, clock)  # the HPAs' replicas that do not fit
    timer.end("plan")
    frag = fragmentation(cluster)
    timer.end("fragmentation")
    decided = pod_remedies(diagnosis, plans, cluster)  # what every output says of each pod
    ups, downs = scaling_advice(cluster, plans, diagnosis, options.scale_down_threshold, decided)
    # volcano-vgpu has no health check: its unhealthy cards still take pods
    capacity = capacity_gpus(cluster, healthy_only=profile_of(cluster.scheduler).checks_health)
    peak_allotted, peak_used = allotted_gpus(cluster), None
    if inputs.history is not None:
        history_allotted, peak_used = history_peaks(inputs.history, cluster)
        peak_allotted = max(peak_allotted, history_allotted)
    room = headroom(
        capacity,
        peak_allotted,
        peak_used,
        target_utilisation=options.target_utilisation,
        redundancy=options.redundancy,
    )
    forget_built_state()  # the cluster's card state is not built again: its memory goes
    timer.end("scaling")
    usage, rightsizing = None, None
    if inputs.history is not None:
        from advisor.rightsizing import rightsize

        usage = usage_series(inputs.history)
        rightsizing = rightsize(inputs.history, cluster, options.rightsizing)
    targets = None
    if inputs.history is not None and cluster.autoscalers:  # gated as right-sizing is (§12.2)
        from advisor.hpatargets import autoscaler_targets

        targets = autoscaler_targets(inputs.history, cluster, reaches, options.rightsizing)
    timer.end("rightsizing")
    # Right-sizing's and the sources' JSON forms are plain dicts; their shapes are the
    # TypedDicts named here (advisor.schemas), which the report's readers check against.
    data: ReportJson = {
        "schema": REPORT_SCHEMA,
        "generated_at": datetime.fromtimestamp(inputs.generated_at, UTC).isoformat(),
        "source": inputs.source,
        "warnings": list(inputs.warnings),
        "stale": [cast(StaleJson, entry) for entry in inputs.stale],
        "diagnosis": diagnosis_json(diagnosis, cluster.scheduler, ages, reaches),
        "view": cluster_view(cluster, diagnosis),
        "plan": plan_json(plans, cluster, ups, downs),
        "fragmentation": fragmentation_json(frag, node_limit=NODE_DETAIL),
        "headroom": headroom_json(room),
        "rightsizing": cast(RightsizingJson | None, rightsizing),
        "usage": cast(UsageJson | None, usage),
    }
    if targets is not None:
        data["autoscaler_targets"] = cast(list[AutoscalerTargetJson], targets)
    add_mig_profiles(data["diagnosis"], cluster, diagnosis)
    add_advice(
        [*data["diagnosis"]["pods"], *data["plan"]["unresolved"]],
        decided,
    )
    add_room(data["diagnosis"].get("autoscalers", []), trial)
    timer.end("assemble")  # the JSON-ready tables above
    duration = timer.duration
    # The `report` command adds its own phases (rendering) after these.
    data["run"] = {"duration_seconds": duration, "phases": dict(timer.phases)}
    figures = RunFigures(
        pending_by_cause=diagnosis.summary,
        stranded_memory_bytes=frag.stranded_mib * MIB,
        fragmentation_ratio=frag.ratio,
        plans_by_kind={
            "rebalance": len(plans.plans),
            "scale_up": len(ups),
            "scale_down": len(downs.steps),
        },
        rescuable_pods=plans.rescued_pods,
        finished_at=inputs.generated_at + duration,
        duration_seconds=duration,
        pending_ages=ages_by_cause(diagnosis, ages),
        latencies={cluster.scheduler.profile: scheduling_latencies(cluster, now)},
        autoscalers=reaches,
    )
    return Report(dict(data), figures)
