"""MIG draws for the generated clusters (docs/conformance.md, "MIG instances under
kube-scheduler"): on a generated cluster, some nodes under the device plugin's mixed
strategy with cards partitioned into GPU instances, running MIG pods holding some of them,
and Pending MIG pods asking N instances of a profile, so that kube-scheduler's
NodeResourcesFit and DefaultPreemption (the kube harness) judge them beside the advisor.

Draws lean toward the edges: a profile whose instances are all held or one short, several
profiles on one card, a card the device plugin does not advertise (unhealthy) while a pod
holds an instance on it, a pod asking more than a node will ever offer, a profile no card
has.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from advisor.core.mig import MigInstance, fits_in, slices_of, table_of

MODELS = ("A100-SXM4-80GB", "H100-SXM5-80GB")  # the same profile names: one pool of pods
# Profiles the cards are cut into, and those Pending pods ask: few, so they meet.
CUT = ("1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb")
ASKED = ("1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb", "3g.40gb", "1g.20gb")
PRIORITIES = (0, 0, 10, 100)


# The generator's own selectors, affinities and tolerations for a pod, drawn from a node.
Constraints = Callable[[random.Random, dict[str, Any], dict[str, Any]], None]


def add_mig(rng: random.Random, data: dict[str, Any], constraints: Constraints) -> None:
    """Turns some of `data`'s cards that no running pod holds into MIG cards (mixed
    strategy), adds running MIG pods on their instances and Pending MIG pods, each with
    `constraints` drawn."""
    held = {(p["node"], c) for p in data["pods"] if "node" in p for c in p.get("cards", ())}
    nodes = data["nodes"]
    mig_nodes = []
    for node in nodes:
        if rng.random() < 0.35 and node is not nodes[0]:
            continue  # the first node always gets a chance (unless a pod holds each card)
        cards = [c for c in node["cards"] if (node["name"], c["index"]) not in held]
        if not cards:
            continue
        model = rng.choice(MODELS)
        for card in rng.sample(cards, rng.randint(1, len(cards))):
            card["model"] = model
            instances = random_layout(rng, model, CUT)
            card["mig"] = {
                "instances": [{"profile": m.profile, "start": m.start} for m in instances]
            }
            card.pop("max_vgpus", None)
        node["mig_strategy"] = "mixed"
        mig_nodes.append(node)
    running = sum(1 for p in data["pods"] if "node" in p)
    for node in mig_nodes:
        free = [
            (card["index"], inst)
            for card in node["cards"]
            if "mig" in card
            for inst in card["mig"]["instances"]
        ]
        rng.shuffle(free)
        while free and rng.random() < 0.7:
            profile = free[0][1]["profile"]
            mine = [f for f in free if f[1]["profile"] == profile]
            n = min(len(mine), rng.choice((1, 1, 1, 2)))
            taken = mine[:n]
            free = [f for f in free if f not in taken]
            pod: dict[str, Any] = {
                "name": f"run/mig-{running}",
                "node": node["name"],
                "request": {"gpus": n, "mig_profile": profile},
                "mig_instances": [{"card": c, "start": i["start"]} for c, i in taken],
            }
            if rng.random() < 0.5:
                pod["resources"] = {"cpu": rng.choice(("250m", "1", "2")), "memory": "1Gi"}
            running += 1
            data["pods"].append(pod)
    for i in range(rng.randint(1, 3)):
        data["pods"].append(_pending(rng, i, nodes, constraints))


def random_layout(rng: random.Random, model: str, profiles: tuple[str, ...]) -> list[MigInstance]:
    """A card's instances: 1 to 7 profiles drawn from `profiles`, each at the first start
    it allows, till one fails."""
    table = table_of(model)
    assert table is not None
    taken, count, out = 0, dict[str, int](), []
    for _ in range(rng.randint(1, 7)):
        profile = table.profile(rng.choice(profiles))
        assert profile is not None
        start = fits_in(profile, taken, count.get(profile.name, 0))
        if start is None:
            break
        taken |= slices_of(profile, start)
        count[profile.name] = count.get(profile.name, 0) + 1
        out.append(MigInstance(profile.name, start))
    return out


def _pending(
    rng: random.Random, i: int, nodes: list[dict[str, Any]], constraints: Constraints
) -> dict[str, Any]:
    pod: dict[str, Any] = {
        "name": f"ml/mig-{i}",
        "request": {"gpus": rng.choice((1, 1, 1, 2, 3)), "mig_profile": rng.choice(ASKED)},
    }
    if rng.random() < 0.5:
        pod["resources"] = {"cpu": rng.choice(("250m", "1", "4")), "memory": "1Gi"}
    priority = rng.choice(PRIORITIES)
    if priority:
        pod["priority"] = priority
    constraints(rng, pod, rng.choice(nodes))
    return pod
