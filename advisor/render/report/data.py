"""What the report's Markdown and HTML share: the figures and wording both show, from the
report read into its typed form (`report.read.read_report`, `xgpu-advisor/report/v1`).

A section the file lacked is absent from that form and a number it lacked is None: the
pages show "?" or a short note, never an exception (the report runs from cron).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from advisor.core.diagnosis import CAUSES
from advisor.render.common.cards import NodeView, mig_json, node_fit_json, node_views
from advisor.render.common.parts import profile_of
from advisor.render.common.values import fmt_age, fmt_mib, fmt_num, fmt_pct
from advisor.render.diagnose.data import policy_text
from advisor.render.plan.text import unit_text
from advisor.schemas import (
    CardViewJson,
    HeadroomJson,
    PlanJson,
    ReportFragmentationJson,
    ReportJson,
)
from advisor.words import plural

MAX_DRAWN_NODES = 40  # card pictures / card rows; the JSON has every node


MAX_RIGHTSIZING_ROWS = 100


def fmt_time(stamp: float, seconds: bool = False) -> str:
    moment = datetime.fromtimestamp(stamp, UTC)
    return moment.strftime("%Y-%m-%d %H:%M:%S" if seconds else "%Y-%m-%d %H:%M") + " UTC"


def fmt_generated(text: str) -> str:
    """The report's ISO timestamp as "2025-11-30 08:30:00 UTC" (as given if unreadable)."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return text or "?"
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return fmt_time(moment.timestamp(), seconds=True)


@dataclass(frozen=True, slots=True)
class StaleRow:
    subject: str
    metric: str
    newest: str  # "21 min ago", or "series ended 21 min ago"


def stale_rows(report: ReportJson) -> list[StaleRow]:
    """Series left out of the model because they were too old (advisor.sources Stale)."""
    rows = []
    for stale in report["stale"]:
        if "age_s" not in stale:  # the file's entry was not an object: its text only
            rows.append(StaleRow(stale["subject"], "", "?"))
            continue
        ended = "series ended " if stale["ended"] else ""
        rows.append(
            StaleRow(stale["subject"], stale["metric"], f"{ended}{fmt_age(stale['age_s'])} ago")
        )
    return rows


def policy_of(report: ReportJson) -> str | None:
    """ "node binpack, card binpack" (led by "hami: " outside cce), or None when the report
    does not say."""
    diagnosis = report.get("diagnosis")
    if diagnosis is None:
        return None
    profile = profile_of(diagnosis)
    return policy_text(diagnosis) if profile is None else f"{profile}: {policy_text(diagnosis)}"


def run_text(report: ReportJson) -> str:
    duration = report["run"]["duration_seconds"] if "run" in report else None
    return "?" if duration is None else f"{fmt_num(duration)} s"


@dataclass(frozen=True, slots=True)
class Tile:
    """One figure of the summary strip: a label, the figure, a sentence under it."""

    label: str
    value: str
    detail: str
    tone: str = "neutral"  # "good", "bad" or "neutral"


def rescue_tile(plan: PlanJson | None) -> Tile:
    if plan is None:
        return Tile("Rescuable by plans", "?", "No plan data in this report.")
    s, ideal = plan["summary"], plan["ideal"]
    blocked = s["pending"]
    if not blocked:
        return Tile("Rescuable by plans", "—", "No Pending pod needs a plan.", "good")
    rescued, plans, evictions = s["rescued_pods"], s["plans"], s["evictions"]
    detail = (
        f"{fmt_num(s['rescued_gpus'])} of {fmt_num(s['pending_gpus'])} GPUs "
        f"({fmt_pct(s['rescued_share'])}) by {plural(plans, 'plan')}, "
        f"{plural(evictions, 'eviction')}. Ideal: {fmt_num(ideal['repack_gpus'])} "
        f"GPUs ({fmt_pct(ideal['repack_share'])}); memory bounds any at "
        f"{fmt_num(ideal['upper_bound_gpus'])} ({fmt_pct(ideal['upper_bound_share'])}). "
        f"{unit_text(plan)}"
    )
    stopped = s.get("stopped_by")
    if stopped == "time":
        detail += " The time budget ran out: more may exist."
    elif stopped == "work":
        detail += " The work budget (--plan-work) ran out: more may exist."
    return Tile(
        "Rescuable by plans",
        f"{rescued} of {plural(blocked, 'pod')}",
        detail,
        "good" if rescued else "neutral",
    )


def fragmentation_tile(frag: ReportFragmentationJson | None) -> Tile:
    """Stranded memory as the figure, and its tone: free memory that no Pending pod can use
    is what makes pods wait on fragmentation (FGD's ratio counts free memory the typical
    requests cannot use, waiting pods or not, so it is the secondary line)."""
    if frag is None:
        return Tile("Stranded memory", "?", "No fragmentation figures in this report.")
    stranded = frag["stranded_mib"]
    detail = (
        f"Fragmentation {fmt_pct(frag['ratio'])}: of {fmt_mib(frag['free_mib'])} free, "
        "the share the typical requests cannot use. Stranded: free memory no Pending pod can "
        f"use ({fmt_num(frag['stranded_gpus'])} GPUs of memory)."
    )
    tone = "neutral" if stranded is None else "bad" if stranded > 0 else "good"
    return Tile("Stranded memory", fmt_mib(stranded), detail, tone)


def headroom_tile(room: HeadroomJson | None) -> Tile:
    if room is None:
        return Tile("Headroom", "?", "No headroom figures in this report.")
    spare = room["spare_gpus"]
    detail = (
        f"{fmt_num(room['capacity_gpus'])} GPUs of memory in the cluster (1 GPU: the "
        f"commonest card); {fmt_num(room['needed_gpus'])} "
        f"needed at the peak allotment of {fmt_num(room['peak_allotted_gpus'])} (target "
        f"{fmt_pct(room['target_utilisation'])} utilisation, "
        f"{fmt_pct(room['redundancy'])} redundancy)."
    )
    if room["peak_used_gpus"] is not None:
        detail += (
            f" By use (peak {fmt_num(room['peak_used_gpus'])}): "
            f"{fmt_num(room['needed_by_use_gpus'])} needed."
        )
    if spare is None:
        return Tile("Headroom", "?", detail)
    gpus = "GPU" if abs(spare) == 1 else "GPUs"
    if spare < 0:
        return Tile("Headroom", f"{fmt_num(-spare)} {gpus} short", detail, "bad")
    return Tile("Headroom", f"{fmt_num(spare)} {gpus} spare", detail, "good")


def summary_tiles(report: ReportJson) -> list[Tile]:
    return [
        rescue_tile(report.get("plan")),
        fragmentation_tile(report.get("fragmentation")),
        headroom_tile(report.get("headroom")),
    ]


def pending_counts(report: ReportJson) -> dict[str, int]:
    """Per cause and "pending"; all 0 when the report has no diagnosis."""
    diagnosis = report.get("diagnosis")
    return diagnosis["summary"] if diagnosis else dict.fromkeys((*CAUSES, "pending"), 0)


def _named_nodes(report: ReportJson) -> list[str]:
    """Nodes the findings talk about, most telling first (no duplicates)."""
    names: list[str] = []
    diagnosis = report.get("diagnosis")
    for pod in diagnosis["pods"] if diagnosis else ():
        placement = pod["placement"]
        names.append(placement["node"] if placement else "")
        names.extend(sorted(pod["nodes"]))
    plan = report.get("plan")
    for entry in plan["plans"] if plan else ():
        for where in [*entry["placements"].values(), *entry["evicted_from"].values()]:
            names.append(where["node"] if where else "")
    names.extend(down["node"] for down in (plan["scale_down"] if plan else ()))
    frag = report.get("fragmentation")
    names.extend(node["node"] for node in (frag["nodes"] if frag else ()))
    return list(dict.fromkeys(name for name in names if name))


def drawn_nodes(
    report: ReportJson, limit: int = MAX_DRAWN_NODES, nodes: Sequence[NodeView] | None = None
) -> tuple[list[NodeView], int]:
    """The nodes to draw, by name, and how many were left out: every node when they fit in
    `limit`, else the ones the findings name first, then the rest by name. `nodes`: the
    report's card view as `read.read_report_nodes` read it (else it is read again here)."""
    if nodes is None:
        nodes = node_views(report.get("view") or {})
    nodes = list(nodes)
    if len(nodes) <= limit:
        return nodes, 0
    rank = {name: i for i, name in enumerate(_named_nodes(report))}
    chosen = sorted(nodes, key=lambda n: (rank.get(n.name, len(rank)), n.name))[:limit]
    return sorted(chosen, key=lambda n: n.name), len(nodes) - limit


def view_of(nodes: Sequence[NodeView]) -> CardViewJson:
    """NodeViews back into the card-view dict the diagnosis renderers read."""
    view: dict[str, Any] = {
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
                    | ({"mig": mig_json(c)} if c.mig is not None else {})
                    for c in node.cards
                ],
                **node_fit_json(node.fit),
            }
            for node in nodes
        ]
    }
    return cast(CardViewJson, view)  # the fit parts: `node_fit_json`, untyped
