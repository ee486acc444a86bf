"""What the report's Markdown and HTML share: tolerant reading of the report dict
(`xgpu-advisor/report/v1`) and the figures and wording both show.

The dict may come from an older or newer advisor, or be hand-edited: a missing, null or odd
value becomes "?" or a short note, never an exception (the report runs from cron).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from advisor.render._common import (
    NodeView,
    as_int,
    as_list,
    as_map,
    as_str,
    node_fit_json,
    node_views,
    plural,
    pods_of,
    policy_text,
    profile_of,
    summary_counts,
)

REPORT_SCHEMA = "xgpu-advisor/report/v1"  # advisor.report's; not imported: it pulls pandas in
MAX_DRAWN_NODES = 40  # card pictures / card rows; the JSON has every node
MAX_RIGHTSIZING_ROWS = 100
GIB = 2**30


# -- values ----------------------------------------------------------------------------------


def as_float(value: Any) -> float | None:
    """A finite number from JSON, else None (bools are not numbers)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def fmt_num(value: Any, digits: int = 3) -> str:
    """At most `digits` decimals, no trailing zeros: 0.5, 19, 3.688; "?" when unknown."""
    number = as_float(value)
    if number is None:
        return "?"
    text = f"{number:.{digits}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text == "-0" else text


def fmt_pct(value: Any) -> str:
    number = as_float(value)
    return "?" if number is None else f"{number:.1%}"


def fmt_int(value: Any) -> str:
    """Rounded, thousands grouped: 39,936 ("?" when unknown); for table cells."""
    number = as_float(value)
    return "?" if number is None else f"{round(number):,}"


def fmt_mib(value: Any) -> str:
    text = fmt_int(value)
    return text if text == "?" else f"{text} MiB"


def fmt_time(stamp: float, seconds: bool = False) -> str:
    moment = datetime.fromtimestamp(stamp, UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M") + " UTC"


def fmt_generated(value: Any) -> str:
    """The report's ISO timestamp as "2025-11-30 08:30:00 UTC" (as given if unreadable)."""
    text = as_str(value)
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return text or "?"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return fmt_time(moment.timestamp(), seconds=True)


def fmt_age(value: Any) -> str:
    seconds = as_float(value)
    if seconds is None:
        return "?"
    if seconds < 120:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    if minutes < 120:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"


# -- header ----------------------------------------------------------------------------------


def warnings_of(report: Mapping[str, Any]) -> list[str]:
    return [str(w) for w in as_list(report.get("warnings")) if w is not None]


@dataclass(frozen=True, slots=True)
class StaleRow:
    subject: str
    metric: str
    newest: str  # "21 min ago", or "series ended 21 min ago"


def stale_rows(report: Mapping[str, Any]) -> list[StaleRow]:
    """Series left out of the model because they were too old (advisor.sources Stale)."""
    rows = []
    for raw in as_list(report.get("stale")):
        if not isinstance(raw, Mapping):
            rows.append(StaleRow(str(raw), "", "?"))
            continue
        ended = "series ended " if raw.get("ended") is True else ""
        rows.append(
            StaleRow(
                as_str(raw.get("subject"), "?"),
                as_str(raw.get("metric")),
                f"{ended}{fmt_age(raw.get('age_s'))} ago",
            )
        )
    return rows


def policy_of(report: Mapping[str, Any]) -> str | None:
    """ "node binpack, card binpack" (led by "hami: " outside cce), or None when the report
    does not say."""
    diagnosis = as_map(report.get("diagnosis"))
    if not as_map(diagnosis.get("policy")):
        return None
    profile = profile_of(diagnosis)
    return policy_text(diagnosis) if profile is None else f"{profile}: {policy_text(diagnosis)}"


def run_text(report: Mapping[str, Any]) -> str:
    duration = as_float(as_map(report.get("run")).get("duration_seconds"))
    return "?" if duration is None else f"{fmt_num(duration)} s"


# -- summary strip -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Tile:
    """One figure of the summary strip: a label, the figure, a sentence under it."""

    label: str
    value: str
    detail: str
    tone: str = "neutral"  # "good", "bad" or "neutral"


def rescue_tile(plan: Mapping[str, Any]) -> Tile:
    s, ideal = as_map(plan.get("summary")), as_map(plan.get("ideal"))
    if not s:
        return Tile("Rescuable by plans", "?", "No plan data in this report.")
    blocked = as_int(s.get("pending"))
    if not blocked:
        return Tile("Rescuable by plans", "—", "No Pending pod needs a plan.", "good")
    rescued = as_int(s.get("rescued_pods"))
    plans, evictions = as_int(s.get("plans")), as_int(s.get("evictions"))
    detail = (
        f"{fmt_num(s.get('rescued_gpus'))} of {fmt_num(s.get('pending_gpus'))} GPUs "
        f"({fmt_pct(s.get('rescued_share'))}) by {plural(plans, 'plan')}, "
        f"{plural(evictions, 'eviction')}. Ideal repack: {fmt_num(ideal.get('repack_gpus'))} "
        f"GPUs ({fmt_pct(ideal.get('repack_share'))}); free memory bounds it at "
        f"{fmt_num(ideal.get('upper_bound_gpus'))} ({fmt_pct(ideal.get('upper_bound_share'))})."
    )
    stopped = as_str(s.get("stopped_by"))
    if stopped == "time":
        detail += " The time budget ran out: more may exist."
    elif stopped == "work":
        detail += " The work budget (--plan-work) ran out: more may exist."
    return Tile(
        "Rescuable by plans",
        f"{rescued} of {blocked} pods",
        detail,
        "good" if rescued else "neutral",
    )


def fragmentation_tile(frag: Mapping[str, Any]) -> Tile:
    if not frag:
        return Tile("Fragmentation", "?", "No fragmentation figures in this report.")
    ratio = as_float(frag.get("ratio"))
    detail = (
        f"of {fmt_mib(frag.get('free_mib'))} free is unusable by the typical requests. "
        f"Stranded (usable by no Pending pod): {fmt_mib(frag.get('stranded_mib'))} "
        f"({fmt_num(frag.get('stranded_gpus'))} GPUs)."
    )
    tone = "neutral" if ratio is None else "bad" if ratio >= 0.5 else "good"
    return Tile("Fragmentation", fmt_pct(ratio), detail, tone)


def headroom_tile(room: Mapping[str, Any]) -> Tile:
    if not room:
        return Tile("Headroom", "?", "No headroom figures in this report.")
    spare = as_float(room.get("spare_gpus"))
    capacity, needed = room.get("capacity_gpus"), room.get("needed_gpus")
    detail = (
        f"{fmt_num(capacity)} GPUs in the cluster; {fmt_num(needed)} needed at the peak "
        f"allotment of {fmt_num(room.get('peak_allotted_gpus'))} (target "
        f"{fmt_pct(room.get('target_utilisation'))} utilisation, "
        f"{fmt_pct(room.get('redundancy'))} redundancy)."
    )
    if as_float(room.get("peak_used_gpus")) is not None:
        detail += (
            f" By use (peak {fmt_num(room.get('peak_used_gpus'))}): "
            f"{fmt_num(room.get('needed_by_use_gpus'))} needed."
        )
    if spare is None:
        return Tile("Headroom", "?", detail)
    gpus = "GPU" if abs(spare) == 1 else "GPUs"
    if spare < 0:
        return Tile("Headroom", f"{fmt_num(-spare)} {gpus} short", detail, "bad")
    return Tile("Headroom", f"{fmt_num(spare)} {gpus} spare", detail, "good")


def summary_tiles(report: Mapping[str, Any]) -> list[Tile]:
    return [
        rescue_tile(as_map(report.get("plan"))),
        fragmentation_tile(as_map(report.get("fragmentation"))),
        headroom_tile(as_map(report.get("headroom"))),
    ]


def pending_counts(report: Mapping[str, Any]) -> dict[str, int]:
    return summary_counts(as_map(report.get("diagnosis")))


# -- which nodes to draw -----------------------------------------------------------------------


def _named_nodes(report: Mapping[str, Any]) -> list[str]:
    """Nodes the findings talk about, most telling first (no duplicates)."""
    names: list[str] = []
    for pod in pods_of(as_map(report.get("diagnosis"))):
        names.append(as_str(as_map(pod.get("placement")).get("node")))
        names.extend(sorted(as_map(pod.get("nodes"))))
    plan = as_map(report.get("plan"))
    for raw in as_list(plan.get("plans")):
        entry = as_map(raw)
        for key in ("placements", "evicted_from"):
            names.extend(as_str(as_map(p).get("node")) for p in as_map(entry.get(key)).values())
    names.extend(as_str(as_map(d).get("node")) for d in as_list(plan.get("scale_down")))
    frag = as_map(report.get("fragmentation"))
    names.extend(as_str(as_map(n).get("node")) for n in as_list(frag.get("nodes")))
    return list(dict.fromkeys(name for name in names if name))


def drawn_nodes(
    report: Mapping[str, Any], limit: int = MAX_DRAWN_NODES
) -> tuple[list[NodeView], int]:
    """The nodes to draw, by name, and how many were left out: every node when they fit in
    `limit`, else the ones the findings name first, then the rest by name."""
    nodes = node_views(as_map(report.get("view")))
    if len(nodes) <= limit:
        return nodes, 0
    rank = {name: i for i, name in enumerate(_named_nodes(report))}
    chosen = sorted(nodes, key=lambda n: (rank.get(n.name, len(rank)), n.name))[:limit]
    return sorted(chosen, key=lambda n: n.name), len(nodes) - limit


def view_of(nodes: Sequence[NodeView]) -> dict[str, Any]:
    """NodeViews back into the card-view dict the diagnosis renderers read."""
    return {
        "nodes": [
            {
                "name": node.name,
                "cards": [
                    {
                        "index": c.index,
                        "memory_mib": c.memory_mib,
                        "model": c.model,
                        "healthy": c.healthy,
                        "mode": c.mode,
                        "vgpus": c.vgpus,
                        "core_allotted_percent": c.core_allotted_percent,
                        "allotments": [
                            {
                                "pod": a.pod,
                                "memory_mib": a.memory_mib,
                                "core_percent": a.core_percent,
                                "pending": a.pending,
                            }
                            for a in c.allotments
                        ],
                    }
                    for c in node.cards
                ],
                **node_fit_json(node.fit),
            }
            for node in nodes
        ]
    }
