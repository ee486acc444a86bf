"""The plan's scaling advice (scale up for what stays Pending, the nodes that could go, the
idle nodes kept) as rows and words that the plan's and the report's pages both lay out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from advisor.render.common.values import as_int, fmt_mib, fmt_pct
from advisor.schemas import NodeShapeJson, PlacementJson, PlanJson, ScaleUpJson
from advisor.words import noun_for, plural


def where_text(placement: PlacementJson | None) -> str:
    """ "n1[0,1]"; "?[]" when the JSON does not say."""
    if placement is None:
        return "?[]"
    return f"{placement['node']}[{','.join(map(str, placement['cards']))}]"


def shape_text(shape: NodeShapeJson) -> str:
    """A node template: "4 × 40960 MiB cards, A100; cpu 94, memory 720Gi, pods 110;
    labels pool=a; taint k=v:NoSchedule; MIG (mixed) card 0 1g.10gb@0 3g.40gb@4" (the parts
    after the cards only when it has them; a MIG card's instances as profile@start)."""
    model = shape["model"] or "any model"
    cards = noun_for(as_int(shape["cards"]), "card")
    parts = [f"{shape['cards']} × {fmt_mib(shape['memory_mib'])} {cards}, {model}"]
    allocatable = shape.get("allocatable", {})
    figures = [
        f"{key} {allocatable[key]}" for key in ("cpu", "memory", "pods") if key in allocatable
    ]
    if figures:
        parts.append(", ".join(figures))
    labels = shape.get("labels", {})
    if labels:
        parts.append("labels " + ", ".join(f"{k}={v}" for k, v in sorted(labels.items())))
    for taint in shape.get("taints", []):
        value = taint["value"]
        parts.append(f"taint {taint['key']}{'=' + value if value else ''}:{taint['effect']}")
    reserved = shape.get("reserved", {})
    if reserved:
        taken = ", ".join(f"{key} {reserved[key]}" for key in ("cpu", "memory") if key in reserved)
        parts.append(f"{reserved.get('pods', '?')} pods of its own ({taken})")
    mig = [(i, card) for i, card in enumerate(shape.get("mig", [])) if card is not None]
    if mig:
        cut = ", ".join(f"card {i} {' '.join(card) or 'none'}" for i, card in mig)
        parts.append(f"MIG ({shape.get('mig_strategy', '?')}) {cut}")
    return "; ".join(parts)


NOT_TRIGGERED_TITLE = "Pods no new node would help"
RELIEF_TITLE = "Pods short of cpu or memory, not of GPUs"
RELIEF_HEADER = ["Pod", "What frees it"]


def relief_rows(plan: PlanJson) -> list[tuple[str, str]]:
    """Pending pods whose GPUs fit but whose cpu, memory or pod slot do not, with the
    advice the core worded (`advisor.core.scaling.relief`): other pods to move, never a GPU node."""
    return [(entry["pod"], entry["advice"]) for entry in plan.get("relief", [])]


NOT_TRIGGERED_HEADER = ["Pod", "Why (the cluster-autoscaler's reason)"]


def not_triggered_header(plan: PlanJson) -> list[str]:
    """The autoscaler's reason is the whole why, except where no autoscaler acts (CCE)."""
    noted = any("note" in entry for entry in plan.get("scale_up_not_triggered", []))
    return ["Pod", "Why"] if noted else NOT_TRIGGERED_HEADER


def not_triggered_rows(plan: PlanJson) -> list[tuple[str, str]]:
    """Pending pods that no node group's template admits (a selector, affinity or taint
    excludes them, or its allocatable is too small), with the autoscaler's reason (on CCE
    after why its add-on would not act either)."""
    return [
        (
            entry["pod"],
            f"{entry['note']} ({entry['reason']})" if "note" in entry else entry["reason"],
        )
        for entry in plan.get("scale_up_not_triggered", [])
    ]


@dataclass(frozen=True, slots=True)
class ScaleUpRow:
    nodes: str
    shape: str
    pods: list[str]
    note: str


def scale_up_rows(plan: PlanJson) -> list[ScaleUpRow]:
    return [scale_up_row(entry) for entry in plan["scale_up"]]


def scale_up_row(entry: ScaleUpJson) -> ScaleUpRow:
    text = shape_text(entry["shape"])
    notes = [entry.get("resize", ""), entry.get("note", ""), entry.get("note_estimate", "")]
    if entry.get("new_shape"):
        text += " (a new node shape)"
    if entry.get("verified") is False:
        notes.append("not verified: the whole queue did not land with these nodes")
    return ScaleUpRow(str(entry["nodes"]), text, entry["for"], "; ".join(n for n in notes if n))


@dataclass(frozen=True, slots=True)
class ScaleDownRow:
    node: str
    utilisation: str
    moves: list[str]
    also_moves: list[str] | None = None  # the node's other pods; None: not known


SCALE_DOWN_HEADER = ["Node", "Utilisation", "Its pods would move to"]


ALSO_MOVES_HEADER = "Other pods, also moved"


def scale_down_rows(plan: PlanJson) -> list[ScaleDownRow]:
    return [
        ScaleDownRow(
            entry["node"],
            fmt_pct(entry["utilisation"]),
            [f"{name} → {where_text(where)}" for name, where in entry["moves"].items()],
            entry.get("also_moves"),
        )
        for entry in plan["scale_down"]
    ]


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


def scale_up_note(plan: PlanJson) -> str | None:
    """On CCE: why the nodes above are a resize a person runs (None elsewhere)."""
    return plan.get("scale_up_note")


NO_SCALE_DOWN = "None: no node below the threshold can be emptied."


HELD_HEADER = ["Node", "Utilisation", "Reason", "Detail"]


def held_rows(plan: PlanJson) -> tuple[list[HeldRow], int]:
    """The idle nodes scale-down keeps, with why, as listed (least utilised first); and how
    many more the JSON counts but does not list."""
    rows = [
        HeldRow(entry["node"], fmt_pct(entry["utilisation"]), entry["reason"], entry["detail"])
        for entry in plan["scale_down_held"]
    ]
    return rows, plan["scale_down_held_omitted"]


def held_more_text(omitted: int) -> str:
    return f"{plural(omitted, 'more idle node')} kept, not listed (only the least utilised are)."
