"""The report's findings as rows both renderers lay out: fragmentation, usage over time and
right-sizing, from the report's typed form (`report.read`). The scaling advice is the plan's
(`render.plan.scaling`)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from advisor.core.history import duration_text
from advisor.render.common.values import (
    GIB,
    fmt_int,
    fmt_mib,
    fmt_num,
    fmt_pct,
)
from advisor.render.report.data import MAX_RIGHTSIZING_ROWS, fmt_time
from advisor.schemas import (
    ReportFragmentationJson,
    ReportJson,
    RightsizingJson,
    WorkloadSizingJson,
)
from advisor.words import plural


def cluster_fragmentation(frag: ReportFragmentationJson) -> list[tuple[str, str]]:
    """(figure, value) pairs for the cluster."""

    def amount(mib: float | None, gpus: float | None) -> str:
        return f"{fmt_mib(mib)} ({fmt_num(gpus)} GPUs of memory)"

    return [
        ("Free memory on healthy cards", amount(frag["free_mib"], frag["free_gpus"])),
        (
            "Unusable by the typical requests (FGD)",
            f"{amount(frag['fragment_mib'], frag['fragment_gpus'])}, "
            f"{fmt_pct(frag['ratio'])} of free",
        ),
        (
            "Stranded: usable by no Pending pod",
            f"{amount(frag['stranded_mib'], frag['stranded_gpus'])}, "
            f"{fmt_pct(frag['stranded_ratio'])} of free",
        ),
    ]


def shape_rows(frag: ReportFragmentationJson) -> list[list[str]]:
    """Typical request shapes: per-card request, share of the workload, pods."""
    rows = []
    for shape in frag["shapes"]:
        text = f"{shape['gpus']} × {fmt_mib(shape['card_memory_mib'])}"
        if shape["card_core_percent"]:
            text += f" + {shape['card_core_percent']} % core"
        rows.append([text, fmt_pct(shape["share"]), str(shape["pods"])])
    return rows


def fragmented_node_rows(frag: ReportFragmentationJson) -> list[tuple[str, list[str], float]]:
    """(node, cells, ratio) for the most fragmented nodes, as the report lists them."""
    rows = []
    for node in frag["nodes"]:
        cells = [
            fmt_int(node["free_mib"]),
            fmt_int(node["fragment_mib"]),
            fmt_int(node["stranded_mib"]),
            fmt_pct(node["ratio"]),
        ]
        rows.append((node["node"], cells, node["ratio"] or 0.0))
    return rows


NO_HISTORY = "No history: this run had no usage series (a scenario file, or no range data)."


@dataclass(frozen=True, slots=True)
class Usage:
    """Cluster totals per step, in GiB, time-ordered; only steps with every figure known."""

    times: list[float]
    allotted_gib: list[float]
    used_gib: list[float]

    def summary(self) -> str:
        peak_allotted, peak_used = max(self.allotted_gib), max(self.used_gib)
        shares = [u / a for u, a in zip(self.used_gib, self.allotted_gib, strict=True) if a > 0]
        mean = f"; used is {sum(shares) / len(shares):.0%} of allotted on average" if shares else ""
        return (
            f"{plural(len(self.times), 'sample')} from {fmt_time(self.times[0])} to "
            f"{fmt_time(self.times[-1])}: allotted peaks at {peak_allotted:,.1f} GiB, "
            f"used at {peak_used:,.1f} GiB{mean}."
        )


def usage_of(report: ReportJson) -> Usage | None:
    usage = report["usage"]
    if usage is None:
        return None
    points = sorted(
        zip(usage["timestamps"], usage["allotted_bytes"], usage["used_bytes"], strict=True),
        key=lambda p: p[0],
    )
    return Usage(
        [p[0] for p in points],
        [p[1] / GIB for p in points],
        [p[2] / GIB for p in points],
    )


@dataclass(frozen=True, slots=True)
class SizingRow:
    workload: str
    container: str
    vgpus: str  # "2 pods, 4 vGPUs"
    mode: str
    allotted_mib: float | None
    peak_mib: float | None
    p95_mib: float | None
    recommended_mib: float | None
    core: str  # "60 → 55 % (p95 46)": allotted → recommended; "" for memory isolation
    overcommit: str
    saving_mib: float | None  # (allotted - recommended) × vGPUs; negative: raise it
    not_advised: str = ""  # why there is no recommendation ("not enough history (...)")
    evidence: str = ""  # what the recommendation stands on ("24 h, 288 samples; ...")

    def memory_cells(self) -> list[str]:
        """Allotted, peak, p95, recommended MiB per vGPU; the recommendation is the reason
        there is none when the workload is not advised."""
        figures = (self.allotted_mib, self.peak_mib, self.p95_mib)
        recommended = self.not_advised or fmt_int(self.recommended_mib)
        return [*(fmt_int(v) for v in figures), recommended]

    def recommended_text(self) -> str:
        """The recommendation with its evidence in brackets, on one line (Markdown)."""
        cell = self.memory_cells()[3]
        return f"{cell} ({self.evidence})" if self.evidence else cell

    def saving_text(self) -> str:
        """MiB the recommendation frees over the workload's vGPUs ("raise N" if it grows)."""
        if self.saving_mib is None:
            return "?"
        if self.saving_mib < 0:
            return f"raise {fmt_int(-self.saving_mib)}"
        return fmt_int(self.saving_mib)


def evidence_text(entry: WorkloadSizingJson) -> str:
    """ "24 h, 288 samples; peak 160 MiB, p100; floor 176": what an advised
    recommendation stands on; "" for an older file without evidence, or none advised."""
    evidence = entry.get("evidence")
    if evidence is None or entry.get("advised") is False:
        return ""
    memory = evidence["memory_mib"]
    return (
        f"{evidence['window']}, {plural(evidence['samples'], 'sample')}; "
        f"peak {fmt_int(memory['peak'])} MiB, p{memory['percentile']}; "
        f"floor {fmt_int(memory['floor'])}"
    )


def _sizing_row(entry: WorkloadSizingJson) -> SizingRow:
    memory, core = entry["memory_mib"], entry["core_percent"]
    allotted, recommended = memory["allotted"], memory["recommended"]
    vgpus = entry["vgpus"]
    saving = None if allotted is None or recommended is None else (allotted - recommended) * vgpus
    core_text = ""
    if entry["mode"] != "memory" and any(v is not None for v in core.values()):
        core_text = (
            f"{fmt_num(core['allotted'], 0)} → {fmt_num(core['recommended'], 0)} % "
            f"(p95 {fmt_num(core['used_p95'], 0)})"
        )
    ratio, reason = entry["overcommit"]["ratio"], entry["overcommit"]["reason"]
    overcommit = f"{ratio:.1f}× ({reason})" if ratio is not None else f"none: {reason or '?'}"
    not_advised = ""
    if entry.get("advised") is False:
        not_advised = entry.get("not_advised") or "not advised"
    return SizingRow(
        entry["workload"],
        entry["container"],
        f"{plural(entry['pods'], 'pod')}, {plural(vgpus, 'vGPU')}",
        entry["mode"],
        allotted,
        memory["used_peak"],
        memory["used_p95"],
        recommended,
        core_text,
        overcommit,
        saving,
        not_advised,
        evidence_text(entry),
    )


def sizing_rows(rightsizing: RightsizingJson) -> tuple[list[SizingRow], int]:
    """Workloads, the advised first (a recommendation, even one to raise, before a row that
    has none), then the largest saving first (ties by name), at most MAX_RIGHTSIZING_ROWS;
    and how many were left out."""
    rows = [_sizing_row(entry) for entry in rightsizing["workloads"]]
    rows.sort(key=lambda r: (bool(r.not_advised), -(r.saving_mib or 0.0), r.workload, r.container))
    return rows[:MAX_RIGHTSIZING_ROWS], max(len(rows) - MAX_RIGHTSIZING_ROWS, 0)


def sizing_window(rightsizing: RightsizingJson) -> str:
    """The history's span and how the recommendations are made, with the history a
    workload needs to be advised at all and the margin over its peak."""
    window, settings = rightsizing["window"], rightsizing["settings"]
    start, end = window["start"], window["end"]
    known = start is not None and end is not None
    span = f"{fmt_time(start or 0.0)} to {fmt_time(end or 0.0)}" if known else "an unknown window"
    text = (
        f"History from {span}. Recommended: {settings['memory_basis']} memory "
        f"and {settings['core_basis']} core use plus "
        f"{fmt_pct(settings['headroom'])} headroom, rounded up to 128 MiB and 5 % per card."
    )
    if "min_history_s" in settings and "min_samples" in settings:
        text += (
            f" Advised only from at least {duration_text(settings['min_history_s'])} and "
            f"{plural(settings['min_samples'], 'sample')} of history"
        )
        margin = settings.get("peak_margin")
        text += f", never below the peak plus {fmt_pct(margin)}." if margin is not None else "."
    return text


def pending_fit_text(rightsizing: RightsizingJson) -> str:
    fit = rightsizing.get("pending_fit")
    if fit is None:
        return "How many Pending pods would fit was not simulated (no cluster given)."
    now, after = fit["schedulable_now"], fit["schedulable_after"]
    newly, lost = fit["newly_schedulable"], fit["no_longer_schedulable"]
    text = (
        f"If applied (simulated): {after} of {fit['pending']} Pending pods would "
        f"be schedulable, against {now} now"
    )
    text += f"; newly: {', '.join(newly)}." if newly else "; no Pending pod newly fits."
    if lost:
        text += f" No longer (placement shifts): {', '.join(lost)}."
    text += (
        f" {plural(fit['running_shrunk'], 'running pod')} would shrink, freeing "
        f"{fmt_mib(fit['memory_freed_mib'])}."
    )
    return text


def sizing_scale(rows: Sequence[SizingRow]) -> list[float]:
    """Per row, the MiB the row's picture spans (its largest figure; at least 1)."""
    return [
        max([v for v in (r.allotted_mib, r.peak_mib, r.p95_mib, r.recommended_mib) if v] or [1.0])
        for r in rows
    ]
