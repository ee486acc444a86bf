"""The report's advice sections as rows both renderers lay out: scaling, fragmentation,
usage over time and right-sizing (read tolerantly; see report_data)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from advisor.render._common import as_int, as_list, as_map, as_str, plural
from advisor.render.node_templates import shape_text
from advisor.render.plan_data import comment_safe
from advisor.render.report_data import (
    GIB,
    MAX_RIGHTSIZING_ROWS,
    as_float,
    fmt_int,
    fmt_mib,
    fmt_num,
    fmt_pct,
    fmt_time,
)


def where_text(placement: Any) -> str:
    p = as_map(placement)
    cards = ",".join(str(as_int(c)) for c in as_list(p.get("cards")))
    return f"{as_str(p.get('node'), '?')}[{cards}]"


def _safe(value: Any) -> str:
    return comment_safe(as_str(value, "?"))


def kubectl_input(plan: Mapping[str, Any]) -> dict[str, Any]:
    """The plan JSON reduced to well-typed, shell-safe values for `plan_data.kubectl_script`
    (which expects the advisor's own output, not whatever a report file holds)."""
    plans = []
    for raw in as_list(plan.get("plans")):
        entry = as_map(raw)
        placements, evicted_from = (
            {
                _safe(name): {
                    "node": _safe(as_map(where).get("node")),
                    "cards": [as_int(c) for c in as_list(as_map(where).get("cards"))],
                }
                for name, where in as_map(entry.get(key)).items()
            }
            for key in ("placements", "evicted_from")
        )
        plans.append(
            {
                key: [_safe(n) for n in as_list(entry.get(key))]
                for key in ("rescues", "evict", "unowned")
            }
            | {"placements": placements, "evicted_from": evicted_from}
        )
    summary = as_map(plan.get("summary"))
    figures = ("evictions", "rescued_pods", "rescued_gpus")
    return {"plans": plans, "summary": {key: fmt_num(summary.get(key)) for key in figures}}


# -- scaling -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ScaleUpRow:
    nodes: str
    shape: str
    pods: list[str]
    note: str


def scale_up_rows(plan: Mapping[str, Any]) -> list[ScaleUpRow]:
    rows = []
    for raw in as_list(plan.get("scale_up")):
        entry = as_map(raw)
        text = shape_text(as_map(entry.get("shape")))
        notes = [as_str(entry.get("note")), as_str(entry.get("note_estimate"))]
        if entry.get("new_shape"):
            text += " (a new node shape)"
        if entry.get("verified") is False:
            notes.append("not verified: the whole queue did not land with these nodes")
        rows.append(
            ScaleUpRow(
                str(as_int(entry.get("nodes"))),
                text,
                [as_str(p, "?") for p in as_list(entry.get("for"))],
                "; ".join(n for n in notes if n),
            )
        )
    return rows


@dataclass(frozen=True, slots=True)
class ScaleDownRow:
    node: str
    utilisation: str
    moves: list[str]
    also_moves: list[str] | None = None  # the node's other pods; None: not known


SCALE_DOWN_HEADER = ["Node", "Utilisation", "Its pods would move to"]
ALSO_MOVES_HEADER = "Other pods, also moved"


def scale_down_rows(plan: Mapping[str, Any]) -> list[ScaleDownRow]:
    rows = []
    for raw in as_list(plan.get("scale_down")):
        entry = as_map(raw)
        moves = as_map(entry.get("moves"))
        also = entry.get("also_moves")
        rows.append(
            ScaleDownRow(
                as_str(entry.get("node"), "?"),
                fmt_pct(entry.get("utilisation")),
                [f"{name} → {where_text(moves[name])}" for name in moves],
                None if also is None else [as_str(n, "?") for n in as_list(also)],
            )
        )
    return rows


def scale_down_header(rows: Sequence[ScaleDownRow]) -> list[str]:
    """The table's columns: the other pods' column only when some row knows them (a source
    without Kubernetes, or a scenario without `other_pods`, does not)."""
    known = any(r.also_moves is not None for r in rows)
    return SCALE_DOWN_HEADER + ([ALSO_MOVES_HEADER] if known else [])


def also_moves_cell(row: ScaleDownRow) -> list[str]:
    """The other pods' cell as names, or one word: "none", or "not known"."""
    if row.also_moves is None:
        return ["not known"]
    return row.also_moves or ["none"]


@dataclass(frozen=True, slots=True)
class HeldRow:
    node: str
    utilisation: str
    reason: str
    detail: str


HELD_TITLE = "Idle nodes kept, and why"
# The words around the scaling tables, shared by the plan's and the report's pages.
SCALE_UP_INTRO = (
    "For the pods no plan rescues: nodes of these shapes would host them, checked by "
    "scheduling the whole queue on the cluster plus the new nodes."
)
SCALE_DOWN_INTRO = (
    "Removing these nodes, in order, re-places their GPU pods as shown; their other pods "
    "move too, each checked for cpu, memory and a pod slot on a node that admits it."
)
NO_SCALE_UP = "None: no unresolved pod needs new nodes."
NO_SCALE_DOWN = "None: no node below the threshold can be emptied."
HELD_HEADER = ["Node", "Utilisation", "Reason", "Detail"]


def held_rows(plan: Mapping[str, Any]) -> tuple[list[HeldRow], int]:
    """The idle nodes scale-down keeps, with why, as listed (least utilised first); and how
    many more the JSON counts but does not list."""
    rows = [
        HeldRow(
            as_str(entry.get("node"), "?"),
            fmt_pct(entry.get("utilisation")),
            as_str(entry.get("reason"), "?"),
            as_str(entry.get("detail")),
        )
        for entry in map(as_map, as_list(plan.get("scale_down_held")))
    ]
    return rows, max(as_int(plan.get("scale_down_held_omitted")), 0)


def held_more_text(omitted: int) -> str:
    return f"{plural(omitted, 'more idle node')} kept, not listed (only the least utilised are)."


# -- fragmentation -----------------------------------------------------------------------------


def cluster_fragmentation(frag: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(figure, value) pairs for the cluster."""

    def amount(kind: str) -> str:
        return f"{fmt_mib(frag.get(f'{kind}_mib'))} ({fmt_num(frag.get(f'{kind}_gpus'))} GPUs)"

    return [
        ("Free memory on healthy cards", amount("free")),
        (
            "Unusable by the typical requests (FGD)",
            f"{amount('fragment')}, {fmt_pct(frag.get('ratio'))} of free",
        ),
        (
            "Stranded: usable by no Pending pod",
            f"{amount('stranded')}, {fmt_pct(frag.get('stranded_ratio'))} of free",
        ),
    ]


def shape_rows(frag: Mapping[str, Any]) -> list[list[str]]:
    """Typical request shapes: per-card request, share of the workload, pods."""
    rows = []
    for raw in as_list(frag.get("shapes")):
        shape = as_map(raw)
        gpus = as_int(shape.get("gpus"))
        text = f"{gpus} × {fmt_mib(shape.get('card_memory_mib'))}"
        core = as_int(shape.get("card_core_percent"))
        if core:
            text += f" + {core} % core"
        rows.append([text, fmt_pct(shape.get("share")), str(as_int(shape.get("pods")))])
    return rows


def fragmented_node_rows(frag: Mapping[str, Any]) -> list[tuple[str, list[str], float]]:
    """(node, cells, ratio) for the most fragmented nodes, as the report lists them."""
    rows = []
    for raw in as_list(frag.get("nodes")):
        node = as_map(raw)
        ratio = as_float(node.get("ratio")) or 0.0
        cells = [
            fmt_int(node.get("free_mib")),
            fmt_int(node.get("fragment_mib")),
            fmt_int(node.get("stranded_mib")),
            fmt_pct(node.get("ratio")),
        ]
        rows.append((as_str(node.get("node"), "?"), cells, ratio))
    return rows


# -- usage over time -----------------------------------------------------------------------------

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


def usage_of(report: Mapping[str, Any]) -> Usage | None:
    raw = as_map(report.get("usage"))
    series = [as_list(raw.get(k)) for k in ("timestamps", "allotted_bytes", "used_bytes")]
    points = []
    for t, allotted, used in zip(*series, strict=False):
        values = (as_float(t), as_float(allotted), as_float(used))
        if None not in values:
            points.append(values)
    if not points:
        return None
    points.sort(key=lambda p: p[0] or 0.0)
    return Usage(
        [p[0] or 0.0 for p in points],
        [(p[1] or 0.0) / GIB for p in points],
        [(p[2] or 0.0) / GIB for p in points],
    )


# -- right-sizing --------------------------------------------------------------------------------


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

    def memory_cells(self) -> list[str]:
        """Allotted, peak, p95, recommended MiB per vGPU."""
        figures = (self.allotted_mib, self.peak_mib, self.p95_mib, self.recommended_mib)
        return [fmt_int(v) for v in figures]

    def saving_text(self) -> str:
        """MiB the recommendation frees over the workload's vGPUs ("raise N" if it grows)."""
        if self.saving_mib is None:
            return "?"
        if self.saving_mib < 0:
            return f"raise {fmt_int(-self.saving_mib)}"
        return fmt_int(self.saving_mib)


def _sizing_row(entry: Mapping[str, Any]) -> SizingRow:
    memory, core = as_map(entry.get("memory_mib")), as_map(entry.get("core_percent"))
    allotted, recommended = as_float(memory.get("allotted")), as_float(memory.get("recommended"))
    vgpus = as_int(entry.get("vgpus"))
    saving = None if allotted is None or recommended is None else (allotted - recommended) * vgpus
    core_text = ""
    if as_str(entry.get("mode")) != "memory" and core:
        core_text = (
            f"{fmt_num(core.get('allotted'), 0)} → {fmt_num(core.get('recommended'), 0)} % "
            f"(p95 {fmt_num(core.get('used_p95'), 0)})"
        )
    over = as_map(entry.get("overcommit"))
    ratio = as_float(over.get("ratio"))
    reason = as_str(over.get("reason"))
    overcommit = f"{ratio:.1f}× ({reason})" if ratio is not None else f"none: {reason or '?'}"
    return SizingRow(
        as_str(entry.get("workload"), "?"),
        as_str(entry.get("container"), "?"),
        f"{plural(as_int(entry.get('pods')), 'pod')}, {plural(vgpus, 'vGPU')}",
        as_str(entry.get("mode"), "?"),
        allotted,
        as_float(memory.get("used_peak")),
        as_float(memory.get("used_p95")),
        recommended,
        core_text,
        overcommit,
        saving,
    )


def sizing_rows(rightsizing: Mapping[str, Any]) -> tuple[list[SizingRow], int]:
    """Workloads, the largest saving first (ties by name), at most MAX_RIGHTSIZING_ROWS; and
    how many were left out."""
    rows = [_sizing_row(as_map(e)) for e in as_list(rightsizing.get("workloads"))]
    rows.sort(key=lambda r: (-(r.saving_mib or 0.0), r.workload, r.container))
    return rows[:MAX_RIGHTSIZING_ROWS], max(len(rows) - MAX_RIGHTSIZING_ROWS, 0)


def sizing_window(rightsizing: Mapping[str, Any]) -> str:
    window = as_map(rightsizing.get("window"))
    start, end = as_float(window.get("start")), as_float(window.get("end"))
    settings = as_map(rightsizing.get("settings"))
    known = start is not None and end is not None
    span = f"{fmt_time(start or 0.0)} to {fmt_time(end or 0.0)}" if known else "an unknown window"
    return (
        f"History from {span}. Recommended: {as_str(settings.get('memory_basis'), '?')} memory "
        f"and {as_str(settings.get('core_basis'), '?')} core use plus "
        f"{fmt_pct(settings.get('headroom'))} headroom, rounded up to 128 MiB and 5 % per card."
    )


def pending_fit_text(rightsizing: Mapping[str, Any]) -> str:
    fit = rightsizing.get("pending_fit")
    if not isinstance(fit, Mapping):
        return "How many Pending pods would fit was not simulated (no cluster given)."
    now, after = as_int(fit.get("schedulable_now")), as_int(fit.get("schedulable_after"))
    newly = [as_str(p, "?") for p in as_list(fit.get("newly_schedulable"))]
    lost = [as_str(p, "?") for p in as_list(fit.get("no_longer_schedulable"))]
    text = (
        f"If applied (simulated): {after} of {as_int(fit.get('pending'))} Pending pods would "
        f"be schedulable, against {now} now"
    )
    text += f"; newly: {', '.join(newly)}." if newly else "; no Pending pod newly fits."
    if lost:
        text += f" No longer (placement shifts): {', '.join(lost)}."
    text += (
        f" {plural(as_int(fit.get('running_shrunk')), 'running pod')} would shrink, freeing "
        f"{fmt_mib(fit.get('memory_freed_mib'))}."
    )
    return text


def sizing_scale(rows: Sequence[SizingRow]) -> list[float]:
    """Per row, the MiB the row's picture spans (its largest figure; at least 1)."""
    return [
        max([v for v in (r.allotted_mib, r.peak_mib, r.p95_mib, r.recommended_mib) if v] or [1.0])
        for r in rows
    ]
