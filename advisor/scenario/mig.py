"""MIG keys of a scenario (docs/design.md §13.1): a node's `mig_strategy`, a card's
`mig: {instances: [{profile, start}]}` checked against its model's profile table
(`core.mig`), a pod's `request.mig_profile` and a bound pod's `mig_instances`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.core.mig import MigInstance, layout_problem, table_of
from advisor.core.model import MIG_STRATEGIES, Card, Cluster, MigStrategy, Node, Placement
from advisor.scenario.strict import Reader

MIG_NODE_KEYS = {"mig_strategy"}
MIG_CARD_KEYS = {"mig"}
MIG_POD_KEYS = {"mig_instances"}


def read_strategy(r: Reader, m: Mapping[str, Any], where: str) -> MigStrategy:
    at = f"{where}.mig_strategy"
    value = r.string(m.get("mig_strategy", "none"), at)
    for strategy in MIG_STRATEGIES:
        if value == strategy:
            return strategy
    raise r.fail(at, f"expected one of {', '.join(MIG_STRATEGIES)}, got {value!r}")


def read_card_mig(
    r: Reader, cm: Mapping[str, Any], at: str, model: str
) -> tuple[MigInstance, ...] | None:
    """The card's GPU instances, as its model's table allows them; None: MIG disabled."""
    if "mig" not in cm:
        return None
    where = f"{at}.mig"
    mm = r.mapping(cm["mig"], where, {"instances"}, set())
    table = table_of(model)
    if table is None and mm.get("instances"):  # none listed: a live card of an unknown model
        raise r.fail(
            f"{at}.model",
            f"MIG needs a card model with a profile table (A100 40GB or 80GB, H100 80GB, "
            f"H200), got {model!r}",
        )
    instances: list[MigInstance] = []
    for i, raw in enumerate(r.sequence(mm.get("instances", []), f"{where}.instances")):
        im = r.mapping(raw, f"{where}.instances[{i}]", {"profile", "start"}, {"profile", "start"})
        instances.append(
            MigInstance(
                r.string(im["profile"], f"{where}.instances[{i}].profile"),
                r.integer(im["start"], f"{where}.instances[{i}].start", 0),
            )
        )
        problem = layout_problem(table, instances) if table is not None else None
        if problem is not None:
            raise r.fail(f"{where}.instances[{i}]", problem)
    return tuple(instances)


def check_node(r: Reader, node: Node, where: str) -> None:
    """MIG cards only where the strategy names them; under `single` every card partitioned
    alike (the device plugin's rule: one profile on the whole node)."""
    migs = [(i, c) for i, c in enumerate(node.cards) if c.mig is not None]
    if node.mig_strategy == "none":
        if migs:
            at = f"{where}.cards[{migs[0][0]}].mig"
            raise r.fail(at, "MIG instances on a node whose mig_strategy is none")
        return
    if node.mig_strategy == "single":
        profiles = {i.profile for _, c in migs for i in c.mig or ()}
        if len(migs) != len(node.cards) or len(profiles) > 1:
            raise r.fail(
                f"{where}.mig_strategy",
                "single needs every card in MIG mode with instances of one profile, got "
                + (", ".join(sorted(profiles)) or "none"),
            )


def read_placement(
    r: Reader, m: Mapping[str, Any], where: str, mig: bool
) -> tuple[Placement | None, tuple[tuple[int, int], ...]]:
    """A pod's placement (None: Pending) and, for a bound MIG pod (`mig`: its request names
    a profile), its instances, (card, start) each, given in place of `cards`."""
    node = r.string(m["node"], f"{where}.node") if "node" in m else None
    if "mig_instances" not in m:
        if mig and node is not None:
            raise r.fail(where, "a running MIG pod gives mig_instances, not cards")
        if ("node" in m) != ("cards" in m):
            raise r.fail(where, "a running pod needs both node and cards; a Pending pod neither")
        if node is None:
            return None, ()
        cards = r.sequence(m["cards"], f"{where}.cards")
        indices = tuple(r.integer(c, f"{where}.cards[{i}]", 0) for i, c in enumerate(cards))
        return Placement(node, indices), ()
    at = f"{where}.mig_instances"
    if not mig:
        raise r.fail(at, "only a MIG pod (request.mig_profile) holds them")
    if node is None or "cards" in m:
        raise r.fail(at, "a running MIG pod gives node and mig_instances, not cards")
    held = []
    for i, raw in enumerate(r.sequence(m["mig_instances"], at)):
        im = r.mapping(raw, f"{at}[{i}]", {"card", "start"}, {"card", "start"})
        card = r.integer(im["card"], f"{at}[{i}].card", 0)
        held.append((card, r.integer(im["start"], f"{at}[{i}].start", 0)))
    if not held:
        raise r.fail(at, "a running MIG pod holds at least one instance")
    return Placement(node, tuple(card for card, _ in held)), tuple(held)


def check_mig_pods(r: Reader, cluster: Cluster) -> None:
    """Each bound MIG pod holds `gpus` instances of its profile that exist, none held twice;
    no vGPU pod sits on a MIG card."""
    cards: dict[tuple[str, int], Card] = {
        (n.name, c.index): c for n in cluster.nodes for c in n.cards
    }
    holder: dict[tuple[str, int, int], str] = {}
    for i, pod in enumerate(cluster.pods):
        where, pl = f"pods[{i}]", pod.placement
        if pl is None:
            continue
        if not pod.request.mig_profile:
            for j, index in enumerate(pl.cards):
                card = cards.get((pl.node, index))
                if card is not None and card.mig is not None:
                    raise r.fail(
                        f"{where}.cards[{j}]",
                        f"{pl.node} card {index} is in MIG mode: it takes MIG pods only",
                    )
            continue
        if len(pod.mig_instances) != pod.request.gpus:
            raise r.fail(
                f"{where}.mig_instances",
                f"expected {pod.request.gpus} instances, got {len(pod.mig_instances)}",
            )
        for j, (index, start) in enumerate(pod.mig_instances):
            at = f"{where}.mig_instances[{j}]"
            card = cards.get((pl.node, index))
            if card is None:
                raise r.fail(at, f"node {pl.node!r} has no card {index}")
            instance = MigInstance(pod.request.mig_profile, start)
            if instance not in (card.mig or ()):
                raise r.fail(
                    at,
                    f"{pl.node} card {index} has no {instance.profile} instance at slice {start}",
                )
            key = (pl.node, index, start)
            if key in holder:
                raise r.fail(at, f"the instance is held by {holder[key]} already")
            holder[key] = pod.name
