"""Before/after card views of each plan, rebuilt from the report dict alone.

`advisor.render.plan.data.plan_views` needs the Cluster and the PlanReport; a report only
has their JSON (read by `report.read.read_report`). Starting from the card view after the
simulated cycle (schedulable Pending pods placed, as the plan search starts), each plan in
order takes its evicted pods off the cards it names and puts them and the pods it rescues
where it places them; the pod's per-card share comes from the card it left or from its
request in the diagnosis.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from advisor.render.common.cards import Allotment, CardView, NodeView, node_views
from advisor.render.report.data import view_of
from advisor.schemas import CardViewJson, ReportJson

_Cards = dict[str, dict[int, CardView]]


def _per_card_requests(report: ReportJson) -> dict[str, tuple[int, int]]:
    """Pending pod -> (MiB, core %) per card, from its request."""
    shares = {}
    diagnosis = report.get("diagnosis")
    for pod in diagnosis["pods"] if diagnosis else ():
        request = pod["request"]
        if request is None:
            shares[pod["pod"]] = (0, 0)
            continue
        gpus = max(request["gpus"], 1)
        shares[pod["pod"]] = (request["memory_mib"] // gpus, request["core_percent"] // gpus)
    return shares


def _with_allotments(card: CardView, allotments: tuple[Allotment, ...]) -> CardView:
    core = sum(a.core_percent for a in allotments)
    mode = (1 if core else 0) if allotments else 2
    return replace(
        card, allotments=allotments, vgpus=len(allotments), core_allotted_percent=core, mode=mode
    )


def _snapshot(cards: _Cards, names: set[str], rescued: set[str]) -> CardViewJson:
    nodes = [
        NodeView(
            name,
            tuple(
                replace(
                    c, allotments=tuple(replace(a, pending=a.pod in rescued) for a in c.allotments)
                )
                for _, c in sorted(cards[name].items())
            ),
        )
        for name in sorted(names)
        if name in cards
    ]
    return view_of(nodes)


def plan_view_pairs(
    report: ReportJson, max_plans: int, nodes: Sequence[NodeView] | None = None
) -> list[dict[str, CardViewJson]]:
    """{"before": view, "after": view} of the nodes each of the first `max_plans` plans
    touches, plans applied in order; in "after" the rescued pods are marked `pending`.
    `nodes`: the card view as `read.read_report_nodes` read it (else it is read again here)."""
    if nodes is None:
        nodes = node_views(report.get("view") or {})
    cards: _Cards = {node.name: {c.index: c for c in node.cards} for node in nodes}
    requests = _per_card_requests(report)
    plan = report.get("plan")
    pairs = []
    for entry in (plan["plans"] if plan else [])[:max_plans]:
        placements, origins = entry["placements"], entry["evicted_from"]
        touched = {p["node"] if p else "" for p in [*placements.values(), *origins.values()]}
        before = _snapshot(cards, touched, set())
        shares = dict(requests)
        for name in entry["evict"]:
            origin = origins.get(name)
            node = cards.get(origin["node"] if origin else "", {})
            for index in origin["cards"] if origin else ():
                card = node.get(index)
                if card is None:
                    continue
                mine = [a for a in card.allotments if a.pod == name]
                if mine:
                    shares[name] = (mine[0].memory_mib, mine[0].core_percent)
                rest = tuple(a for a in card.allotments if a.pod != name)
                node[index] = _with_allotments(card, rest)
        for name, where in placements.items():
            memory, core = shares.get(name, (0, 0))
            node = cards.get(where["node"] if where else "", {})
            for index in where["cards"] if where else ():
                card = node.get(index)
                if card is not None:
                    added = (*card.allotments, Allotment(name, memory, core, False))
                    node[index] = _with_allotments(card, added)
        pairs.append({"before": before, "after": _snapshot(cards, touched, set(entry["rescues"]))})
    return pairs
