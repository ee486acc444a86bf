"""Before/after card views of each plan, rebuilt from the report dict alone.

`advisor.render.plan_data.plan_views` needs the Cluster and the PlanReport; a report only
has their JSON. Starting from the card view after the simulated cycle (schedulable Pending
pods placed, as the plan search starts), each plan in order takes its evicted pods off the
cards it names and puts them and the pods it rescues where it places them; the pod's
per-card share comes from the card it left or from its request in the diagnosis.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from advisor.render._common import (
    Allotment,
    CardView,
    NodeView,
    as_int,
    as_list,
    as_map,
    as_str,
    node_views,
    pods_of,
)
from advisor.render.report_data import view_of

_Cards = dict[str, dict[int, CardView]]


def _per_card_requests(report: Mapping[str, Any]) -> dict[str, tuple[int, int]]:
    """Pending pod -> (MiB, core %) per card, from its request."""
    shares = {}
    for pod in pods_of(as_map(report.get("diagnosis"))):
        request = as_map(pod.get("request"))
        gpus = max(as_int(request.get("gpus"), 1), 1)
        shares[as_str(pod.get("pod"))] = (
            as_int(request.get("memory_mib")) // gpus,
            as_int(request.get("core_percent")) // gpus,
        )
    return shares


def _with_allotments(card: CardView, allotments: tuple[Allotment, ...]) -> CardView:
    core = sum(a.core_percent for a in allotments)
    mode = (1 if core else 0) if allotments else 2
    return replace(
        card, allotments=allotments, vgpus=len(allotments), core_allotted_percent=core, mode=mode
    )


def _snapshot(cards: _Cards, names: set[str], rescued: set[str]) -> dict[str, Any]:
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


def plan_view_pairs(report: Mapping[str, Any], max_plans: int) -> list[dict[str, Any]]:
    """{"before": view, "after": view} of the nodes each of the first `max_plans` plans
    touches, plans applied in order; in "after" the rescued pods are marked `pending`."""
    cards: _Cards = {
        node.name: {c.index: c for c in node.cards}
        for node in node_views(as_map(report.get("view")))
    }
    requests = _per_card_requests(report)
    pairs = []
    for raw in as_list(as_map(report.get("plan")).get("plans"))[:max_plans]:
        plan = as_map(raw)
        placements = as_map(plan.get("placements"))
        origins = as_map(plan.get("evicted_from"))
        touched = {as_str(as_map(p).get("node")) for p in [*placements.values(), *origins.values()]}
        before = _snapshot(cards, touched, set())
        shares = dict(requests)
        for name in map(str, as_list(plan.get("evict"))):
            origin = as_map(origins.get(name))
            node = cards.get(as_str(origin.get("node")), {})
            for index in map(as_int, as_list(origin.get("cards"))):
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
            target = as_map(where)
            node = cards.get(as_str(target.get("node")), {})
            for index in map(as_int, as_list(target.get("cards"))):
                card = node.get(index)
                if card is not None:
                    added = (*card.allotments, Allotment(name, memory, core, False))
                    node[index] = _with_allotments(card, added)
        rescued = {str(n) for n in as_list(plan.get("rescues"))}
        pairs.append({"before": before, "after": _snapshot(cards, touched, rescued)})
    return pairs
