"""`xgpu-advisor plan --format markdown`: the plans for terminals and tickets."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from advisor.render.common.cards import node_views
from advisor.render.common.markdown import escape_cell, markdown_table
from advisor.render.common.mig import repartition_markdown, repartitions
from advisor.render.common.parts import profile_of
from advisor.render.common.values import as_map
from advisor.render.plan.data import unresolved_causes, unresolved_reasons
from advisor.render.plan.read import read_plan
from advisor.render.plan.scaling import (
    HELD_HEADER,
    HELD_TITLE,
    NO_SCALE_DOWN,
    NO_SCALE_UP,
    NOT_TRIGGERED_TITLE,
    RELIEF_HEADER,
    RELIEF_TITLE,
    SCALE_DOWN_INTRO,
    SCALE_UP_INTRO,
    also_moves_cell,
    held_more_text,
    held_rows,
    not_triggered_header,
    not_triggered_rows,
    relief_rows,
    scale_down_header,
    scale_down_rows,
    scale_up_note,
    scale_up_rows,
    where_text,
)
from advisor.render.plan.script import kubectl_script
from advisor.render.plan.text import (
    caps_line,
    cost_text,
    held_back_lines,
    ideal_text,
    no_plan_text,
    stop_line,
    unit_text,
)
from advisor.schemas import PlanEntryJson, PlanJson
from advisor.words import plural

MAX_LISTED = 6  # pods named per table cell; the JSON has them all


def _names(names: Sequence[str]) -> str:
    shown = list(names[:MAX_LISTED])
    more = f" and {len(names) - MAX_LISTED} more" if len(names) > MAX_LISTED else ""
    return ", ".join(shown) + more


def headline(data: PlanJson) -> list[str]:
    s = data["summary"]
    plans = s["plans"]
    if not s["pending"]:
        if data["unresolved"]:  # MIG pods only: plans do not move them (design §13)
            return ["**No Pending vGPU pods: nothing to rebalance; the MIG pods wait.**"]
        return ["**No Pending GPU pods: nothing to rebalance.**"]
    per_gpu = s["evictions_per_gpu"]
    cost = f", {per_gpu} per GPU" if per_gpu is not None else ""
    if "cost" in s and plans:
        cost += f"; disruption cost {cost_text(s['cost'])}"
    lines = [
        f"**{plural(plans, 'plan')} {'rescues' if plans == 1 else 'rescue'} "
        f"{s['rescued_pods']} of "
        f"{plural(s['pending'], 'Pending GPU pod')}: {s['rescued_gpus']} of "
        f"{s['pending_gpus']} GPUs ({s['rescued_share'] or 0.0:.1%}), with "
        f"{plural(s['evictions'], 'eviction')}{cost}.**",
        "",
        ideal_text(data),
        "",
        unit_text(data),
    ]
    for extra in (caps_line(data), stop_line(data)):
        if extra:
            lines += ["", extra]
    return lines


def _cost_cell(plan: PlanEntryJson) -> str:
    """The plan's cost, and what each evicted pod adds to it and why."""
    parts = [f"{c['pod']} {cost_text(c['cost'])}: {c['why'] or '?'}" for c in plan.get("costs", [])]
    head = cost_text(plan.get("cost"))
    return f"{head} ({_names(parts)})" if parts else head


def plans_section(data: PlanJson) -> list[str]:
    """The "Plans" section: what each plan rescues and evicts, in the order to apply them,
    what it costs and why; the plans above a cap; how far the search looked."""
    rows = []
    for number, plan in enumerate(data["plans"], 1):
        placements, origins = plan["placements"], plan["evicted_from"]
        rescues = [f"{n} → {where_text(placements.get(n))}" for n in plan["rescues"]]
        moves = [
            f"{n}: {where_text(origins.get(n))} → {where_text(placements.get(n))}"
            for n in plan["evict"]
        ]
        rows.append(
            [
                str(number),
                escape_cell(_names(rescues)),
                escape_cell(_names(moves)),
                str(plan["evictions"]),
                str(plan["rescued_gpus"]),
                escape_cell(_cost_cell(plan)),
            ]
        )
    held = [f"- {escape_cell(line)}" for line in held_back_lines(data)]
    if not rows:
        return ["## Plans", "", no_plan_text(data), "", *([*held, ""] if held else [])]
    header = [
        "#",
        "Rescues (→ node[cards])",
        "Evicts (from → to)",
        "Evictions",
        "GPUs rescued",
        "Cost (per eviction: why)",
    ]
    lines = [
        "## Plans",
        "",
        "Apply in order; each is simulated on the state the ones before it leave.",
        "",
        *markdown_table(header, rows, right={0, 3, 4}),
        "",
    ]
    if held:
        lines += ["Above the caps, after these plans:", "", *held, ""]
    return lines


def unresolved_section(data: PlanJson) -> list[str]:
    """The "Still Pending" section: pods no plan rescues (no lines when none)."""
    rows = [[escape_cell(pod), escape_cell(cause)] for pod, cause in unresolved_causes(data)]
    if not rows:
        return []
    reasons = [f"- {escape_cell(r)}" for r in unresolved_reasons(data)]
    table = markdown_table(["Pod", "Cause"], rows, right=set())
    return ["## Still Pending", "", *table, "", *([*reasons, ""] if reasons else [])]


def scale_up_table(data: PlanJson) -> list[str]:
    """The scale-up entries as a table (no lines when none): node shapes to add and the
    Pending pods they are for."""
    rows = [
        [r.nodes, escape_cell(r.shape), escape_cell(", ".join(r.pods)), escape_cell(r.note)]
        for r in scale_up_rows(data)
    ]
    if not rows:
        return []
    note = scale_up_note(data)
    table = markdown_table(["Nodes", "Node shape", "For", "Note"], rows, right={0})
    return [*table, "", *([f"_{escape_cell(note)}._", ""] if note else [])]


def not_triggered_table(data: PlanJson) -> list[str]:
    """The pods no node group would help, with why (no lines when none)."""
    return _pods_with_text(
        NOT_TRIGGERED_TITLE, not_triggered_header(data), not_triggered_rows(data)
    )


def relief_table(data: PlanJson) -> list[str]:
    """The pods short of cpu or memory, not of GPUs, with what frees it (no lines when none)."""
    return _pods_with_text(RELIEF_TITLE, RELIEF_HEADER, relief_rows(data))


def _pods_with_text(title: str, header: list[str], pods: list[tuple[str, str]]) -> list[str]:
    """A bold title and a table of (pod, text) rows (no lines when none)."""
    if not pods:
        return []
    rows = [[escape_cell(pod), escape_cell(text)] for pod, text in pods]
    return [f"**{title}**", "", *markdown_table(header, rows, right=set()), ""]


def scale_up_section(data: PlanJson) -> list[str]:
    """The "Nodes to add" section of the plan, with the pods no new node would help (no
    lines when neither), and what frees the pods short of cpu or memory."""
    table, helpless, freed = scale_up_table(data), not_triggered_table(data), relief_table(data)
    if not table and not helpless and not freed:
        return []
    return [
        "## Nodes to add",
        "",
        SCALE_UP_INTRO if table else NO_SCALE_UP,
        "",
        *table,
        *helpless,
        *freed,
    ]


def scale_down_table(data: PlanJson) -> list[str]:
    """The scale-down entries as a table (no lines when none): where each node's GPU pods
    would move and, when known, its other pods that would move too."""
    downs = scale_down_rows(data)
    if not downs:
        return []
    header = scale_down_header(downs)
    rows = []
    for r in downs:
        cells = [escape_cell(r.node), r.utilisation, escape_cell(", ".join(r.moves) or "none")]
        if len(header) > len(cells):
            cells.append(escape_cell(", ".join(also_moves_cell(r))))
        rows.append(cells)
    return [*markdown_table(header, rows, right={1}), ""]


def held_table(data: PlanJson) -> list[str]:
    """The idle nodes scale-down keeps, each with its reason (no lines when none)."""
    held, omitted = held_rows(data)
    if not held:
        return []
    rows = [
        [escape_cell(r.node), r.utilisation, escape_cell(r.reason), escape_cell(r.detail)]
        for r in held
    ]
    lines = [f"**{HELD_TITLE}**", "", *markdown_table(HELD_HEADER, rows, right={1}), ""]
    if omitted:
        lines += [f"_{escape_cell(held_more_text(omitted))}_", ""]
    return lines


def scale_down_section(data: PlanJson) -> list[str]:
    """The "Nodes that could go" section of the plan, with the idle nodes kept (no lines
    when neither)."""
    table, held = scale_down_table(data), held_table(data)
    if not table and not held:
        return []
    intro = SCALE_DOWN_INTRO if table else NO_SCALE_DOWN
    return ["## Nodes that could go", "", intro, "", *table, *held]


def _card_text(card: Any) -> str:
    pods = ", ".join(
        f"{a.pod} {a.memory_mib}" + (" (rescued)" if a.pending else "") for a in card.allotments
    )
    return f"{card.allotted_mib}/{card.memory_mib}" + (f": {pods}" if pods else "")


def pictures_section(views: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each plan's cards before and after it, as a table per plan (no lines when none)."""
    lines: list[str] = []
    for number, pair in enumerate(views, 1):
        before = {n.name: n for n in node_views(as_map(pair.get("before")))}
        after = {n.name: n for n in node_views(as_map(pair.get("after")))}
        rows = []
        for name in sorted(before):
            cards_after = {c.index: c for c in after[name].cards} if name in after else {}
            for card in before[name].cards:
                other = cards_after.get(card.index)
                rows.append(
                    [
                        escape_cell(name),
                        str(card.index),
                        escape_cell(_card_text(card)),
                        escape_cell(_card_text(other) if other else "?"),
                    ]
                )
        lines += [
            f"### Plan {number}",
            "",
            *markdown_table(["Node", "Card", "Before (MiB)", "After (MiB)"], rows, {1}),
            "",
        ]
    return ["## Cards before and after each plan", "", *lines] if lines else []


def render_plan_markdown(data: Mapping[str, Any], views: Sequence[Mapping[str, Any]]) -> str:
    plan = read_plan(data)
    policy = plan["policy"]
    profile = profile_of(plan)
    lines = [
        f"# Rebalancing plans ({'' if profile is None else profile + ': '}"
        f"node {policy['node']}, card {policy['card']})",
        "",
        *headline(plan),
        "",
        *plans_section(plan),
        *unresolved_section(plan),
        *repartition_markdown(repartitions(plan["unresolved"])),
        *scale_up_section(plan),
        *scale_down_section(plan),
    ]
    if plan["plans"]:
        lines += ["## Commands", "", "```sh", kubectl_script(data).rstrip("\n"), "```", ""]
    lines += pictures_section(views)
    while lines and not lines[-1]:
        lines.pop()
    return "\n".join(lines) + "\n"
