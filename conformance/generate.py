"""Seeded random clusters for the differential test (docs/conformance.md), as scenario data
(docs/design.md §4, §9) for the volcano-vgpu profile: nodes with cards (memory, slots),
allocatable, labels, taints and cordons, resident pods; running pods on cards that have room;
Pending pods asking 1..N cards, memory, cores, cpu and memory, with selectors, affinity,
tolerations and priorities.

Draws lean toward the edges where a scheduler's comparisons turn: a card filled exactly, a
card one vGPU short of its limit, cpu or memory left exactly equal to a request, the pod
limit reached, a numeric label equal to a Gt/Lt bound, a toleration that misses by effect.
"""

from __future__ import annotations

import random
from typing import Any

from advisor.core.quantity import quantity_milli, quantity_units
from conformance.generate_mig import add_mig

CARD_MIB = (8192, 16384, 24576, 40960, 81920)
ZONES = ("z1", "z2", "z3")
POOLS = ("a", "b")
TAINT_KEYS = ("nvidia.com/gpu", "dedicated")
TAINT_VALUES = ("present", "team-a")
EFFECTS = ("NoSchedule", "NoExecute", "PreferNoSchedule")
CORES = (0, 0, 10, 25, 50, 100)
PRIORITIES = (0, 0, 10, 100)
MEMORY_GI = (4, 8, 16, 32)


PROFILES = ("volcano-vgpu", "hami", "cce")
CARD_POLICIES = {"volcano-vgpu": ("binpack", "spread", "legacy"), "hami": ("binpack", "spread")}
CARD_POLICIES["cce"] = CARD_POLICIES["hami"]
UNUSED, MEMORY_ONLY, WITH_CORE = 2, 0, 1  # a card's isolation mode (cce)


def generate(
    seed: int,
    max_nodes: int = 4,
    max_pending: int = 5,
    profile: str | None = None,
    mig: bool = False,
) -> dict[str, Any]:
    """One cluster; the same seed gives the same scenario. The profile, unless given, goes
    round by seed: each judges the whole node by the same filters, and places GPU pods by
    its own rules, which the cycle check (placements.py) then meets. `mig`: some cards in
    MIG mode with MIG pods (generate_mig.py), drawn after the rest, which stays as without."""
    profile = profile or PROFILES[seed % len(PROFILES)]
    rng = random.Random(seed)
    nodes = [_node(rng, i) for i in range(rng.randint(1, max_nodes))]
    per_card = rng.choice((None, None, 3, 20))  # max_vgpus_per_card
    default_slots = per_card or {"cce": 20, "hami": 10, "volcano-vgpu": 10}[profile]
    free = {
        n["name"]: [
            [c["memory_mib"], c.get("max_vgpus", default_slots), 100, UNUSED] for c in n["cards"]
        ]
        for n in nodes
    }
    left = {n["name"]: _resources_left(n) for n in nodes}
    pods: list[dict[str, Any]] = []
    cce = profile == "cce"
    for i in range(rng.randint(0, 2 * len(nodes))):
        running = _running(rng, i, nodes, free, left, cce)
        if running is not None:
            pods.append(running)
    for i in range(rng.randint(1, max_pending)):
        pods.append(_pending(rng, i, nodes, free, left, cce))
    scheduler: dict[str, Any] = {"profile": profile}
    if profile == "volcano-vgpu" and rng.random() < 0.5:
        scheduler["schedule_weight"] = rng.choice((1, 10))  # deviceshare.ScheduleWeight
    data: dict[str, Any] = {
        "scheduler": scheduler,
        "policy": {"card": rng.choice(CARD_POLICIES[profile])},
        "nodes": nodes,
        "pods": pods,
    }
    if per_card:
        data["max_vgpus_per_card"] = per_card
    if mig:
        add_mig(random.Random(seed * 7717 + 3), data, _constraints)
    return data


def _node(rng: random.Random, i: int) -> dict[str, Any]:
    memory = rng.choice(CARD_MIB)
    cards = [
        {"index": k, "memory_mib": memory if rng.random() < 0.8 else rng.choice(CARD_MIB)}
        for k in range(rng.randint(1, 4))
    ]
    for card in cards:
        if rng.random() < 0.8:  # else the scenario's max_vgpus_per_card, or the profile's
            card["max_vgpus"] = rng.choice((2, 4, 10, 10))
        if rng.random() < 0.1:
            card["healthy"] = False  # Volcano's filter reads no health; HAMi's does
    node: dict[str, Any] = {"name": f"node-{i}", "cards": cards}
    if rng.random() < 0.7:
        node["allocatable"] = {
            "cpu": str(rng.choice((2, 4, 8, 16))),
            "memory": f"{rng.choice(MEMORY_GI)}Gi",
            "pods": rng.choice((1, 2, 3, 5, 110)),
        }
        if rng.random() < 0.2:  # a partial allocatable: the rest is unconstrained
            del node["allocatable"][rng.choice(("cpu", "memory", "pods"))]
        alloc = node["allocatable"]
        if "cpu" in alloc:
            alloc["cpu"] = spell_cpu(rng, int(alloc["cpu"]) * 1000)
        if "memory" in alloc:
            alloc["memory"] = spell_gib(rng, int(alloc["memory"].removesuffix("Gi")))
        if "pods" in alloc and rng.random() < 0.3:
            alloc["pods"] = rng.choice((str(alloc["pods"]), 0))
    labels: dict[str, str] = {}
    if rng.random() < 0.7:
        labels["topology.kubernetes.io/zone"] = rng.choice(ZONES)
    if rng.random() < 0.5:
        labels["pool"] = rng.choice(POOLS)
    if rng.random() < 0.4:
        labels["rank"] = rng.choice(("1", "2", "3", "4", "5", "007", "10"))
    if labels:
        node["labels"] = labels
    if rng.random() < 0.3:
        node["taints"] = [
            {"key": rng.choice(TAINT_KEYS), "value": rng.choice(("", *TAINT_VALUES)), "effect": e}
            for e in rng.sample(EFFECTS, rng.randint(1, 2))
        ]
    if rng.random() < 0.1:
        node["unschedulable"] = True
    if rng.random() < 0.4:
        # Now and then more than the node has: an overcommitted node still takes a pod that
        # asks none of what is short (NodeResourcesFit checks only what is requested).
        cpu = rng.choice((100, 500, 1000, 1000, 20000))
        key = rng.choice(("other_pods", "other_pods", "resident_pods"))
        node[key] = [
            {"name": f"kube-system/ds-{i}-{k}", "resources": {"cpu": f"{cpu}m", "memory": "1Gi"}}
            for k in range(rng.randint(1, 2))
        ]
        if key == "resident_pods" and rng.random() < 0.3:
            node[key][0]["terminating"] = True
    return node


def _resources_left(node: dict[str, Any]) -> list[int]:
    """(millicores, GiB, pod slots) still free on the node; large where not given."""
    alloc = node.get("allocatable", {})
    cpu = quantity_milli(alloc.get("cpu", "1000"))
    memory = quantity_units(alloc.get("memory", "1024Gi")) // 2**30
    pods = quantity_units(alloc.get("pods", 1000))
    for other in node.get("other_pods", []) + node.get("resident_pods", []):
        cpu -= quantity_milli(other["resources"]["cpu"])
        memory -= 1
        pods -= 1
    return [cpu, memory, pods]


def _resources(rng: random.Random, left: list[int]) -> dict[str, str]:
    """cpu and memory, often exactly what a node has left (the boundary of fitsRequest),
    spelled in any of the ways a Kubernetes quantity may be."""
    roll = rng.random()
    if roll < 0.3 and left[0] > 0 and left[1] > 0:
        return {"cpu": spell_cpu(rng, left[0]), "memory": spell_gib(rng, left[1])}
    if roll < 0.4 and left[0] > 0:
        return {"cpu": spell_cpu(rng, left[0] + 1)}
    if roll < 0.7:
        cpu = rng.choice((250, 500, 1000, 2000))
        return {"cpu": spell_cpu(rng, cpu), "memory": spell_gib(rng, rng.randint(1, 4))}
    if roll < 0.8:  # one resource only, or an explicit zero: the other is not checked
        return rng.choice(({"memory": spell_gib(rng, 1)}, {"cpu": "0", "memory": "0"}))
    if roll < 0.9:  # values that Quantity rounds up: a fraction of a millicore or a byte
        return {"cpu": rng.choice(("0.0005", "250.5m", "1.0001")), "memory": rng.choice(ODD_BYTES)}
    return {}


ODD_BYTES = ("0.1Gi", "1500M", "1e9", "1.5Gi", "999999999", "0.5Ki")


def spell_cpu(rng: random.Random, milli: int) -> str:
    """`milli` millicores as "1500m", "1.5" or, for whole cores, "2"."""
    if milli % 1000 == 0 and rng.random() < 0.5:
        return str(milli // 1000)
    if rng.random() < 0.3:
        whole, rest = divmod(milli, 1000)
        return f"{whole}.{rest:03d}".rstrip("0").rstrip(".")
    return f"{milli}m"


def spell_gib(rng: random.Random, gib: int) -> str:
    """`gib` GiB as "2Gi", "2048Mi", "2097152Ki" or bytes, plain or with an exponent."""
    return rng.choice(
        (
            f"{gib}Gi",
            f"{gib * 1024}Mi",
            f"{gib * 1024 * 1024}Ki",
            str(gib * 2**30),
            f"{gib * 2**30}e0",
        )
    )


def _running(
    rng: random.Random,
    i: int,
    nodes: list[dict[str, Any]],
    free: dict[str, list[list[int]]],
    left: dict[str, list[int]],
    cce: bool,
) -> dict[str, Any] | None:
    node = rng.choice(nodes)
    name = node["name"]
    cards = free[name]
    gpus = rng.randint(1, len(cards))
    usable = [k for k, (mem, slots, _, _) in enumerate(cards) if slots > 0 and mem >= 1024]
    if len(usable) < gpus or left[name][2] <= 0:
        return None
    chosen = rng.sample(usable, gpus)
    least = min(cards[k][0] for k in chosen)
    # Often fill a card exactly: the per-card memory is the smallest chosen card's free.
    per_card = least if rng.random() < 0.35 else rng.choice((1024, 2048, 4096))
    per_card = min(per_card, least)
    core_room = min(cards[k][2] for k in chosen)
    core = rng.choice([c for c in CORES if c <= core_room and c != 100] or [0])
    modes = {cards[k][3] for k in chosen} - {UNUSED}
    if cce and modes:  # CCE: a card hosts one isolation mode only
        if len(modes) > 1:
            return None
        if modes == {WITH_CORE}:
            options = [c for c in CORES if 0 < c <= core_room and c != 100]
            if not options:
                return None
            core = core if core in options else rng.choice(options)
        else:
            core = 0
    for k in chosen:
        cards[k][0] -= per_card
        cards[k][1] -= 1
        cards[k][2] -= core
        cards[k][3] = WITH_CORE if core else MEMORY_ONLY
    resources = _resources(rng, [max(left[name][0] // 2, 0), max(left[name][1] // 2, 0)])
    left[name][0] -= quantity_milli(resources.get("cpu", "0"))
    left[name][1] -= -(-quantity_units(resources.get("memory", "0")) // 2**30)
    left[name][2] -= 1
    pod: dict[str, Any] = {
        "name": f"run/pod-{i}",
        "node": name,
        "cards": sorted(node["cards"][k]["index"] for k in chosen),
        "request": {"gpus": gpus, "memory_mib": per_card * gpus},
    }
    if core:
        pod["request"]["core_percent"] = core * gpus
    if resources:
        pod["resources"] = resources
    return pod


def _pending(
    rng: random.Random,
    i: int,
    nodes: list[dict[str, Any]],
    free: dict[str, list[list[int]]],
    left: dict[str, list[int]],
    cce: bool,
) -> dict[str, Any]:
    node = rng.choice(nodes)
    cards = free[node["name"]]
    gpus = rng.choice((1, 1, 1, 2, 2, 3, 4))
    roll = rng.random()
    if roll < 0.35:
        per_card = max(rng.choice(cards)[0], 128)  # exactly a card's free memory
    elif roll < 0.45 and not cce:
        per_card = 0  # the whole card (CCE asks memory always)
    else:
        per_card = rng.choice((1024, 2048, 4096, 8192, 16384))
    core = rng.choice(CORES)
    request: dict[str, int] = {"gpus": gpus}
    if per_card:
        request["memory_mib"] = per_card * gpus
    if core:
        request["core_percent"] = core * gpus
    pod: dict[str, Any] = {"name": f"ml/job-{i}", "request": request}
    resources = _resources(rng, left[node["name"]])
    if resources:
        pod["resources"] = resources
    priority = rng.choice(PRIORITIES)
    if priority:
        pod["priority"] = priority
    _constraints(rng, pod, node)
    return pod


def _constraints(rng: random.Random, pod: dict[str, Any], node: dict[str, Any]) -> None:
    labels = node.get("labels", {})
    if labels and rng.random() < 0.3:
        key = rng.choice(sorted(labels))
        value = labels[key] if rng.random() < 0.7 else "other"
        pod["node_selector"] = {key: value}
    if rng.random() < 0.25:
        terms = [_term(rng, labels, node["name"]) for _ in range(rng.randint(1, 2))]
        pod["affinity"] = {"node": {"required": terms}}
    taints = node.get("taints", [])
    if taints and rng.random() < 0.6:
        taint = rng.choice(taints)
        roll = rng.random()
        if roll < 0.25:
            toleration: dict[str, str] = {"operator": "Exists"}  # tolerates every taint
        elif roll < 0.5:
            toleration = {"key": taint["key"], "operator": "Exists"}
        elif roll < 0.7:
            toleration = {"key": taint["key"], "value": taint["value"], "effect": taint["effect"]}
        elif roll < 0.8:  # Equal, every effect, sometimes the wrong value
            value = taint["value"] if rng.random() < 0.5 else "other"
            toleration = {"key": taint["key"], "operator": "Equal", "value": value}
        else:  # misses by effect
            other = [e for e in EFFECTS if e != taint["effect"]]
            toleration = {"key": taint["key"], "operator": "Exists", "effect": rng.choice(other)}
        pod["tolerations"] = [toleration]
    if node.get("unschedulable") and rng.random() < 0.3:
        pod.setdefault("tolerations", []).append(
            {
                "key": "node.kubernetes.io/unschedulable",
                "operator": "Exists",
                "effect": "NoSchedule",
            }
        )


def _term(rng: random.Random, labels: dict[str, str], node: str) -> dict[str, Any]:
    roll = rng.random()
    if roll < 0.1:  # by name: matchFields metadata.name
        names = [node] if rng.random() < 0.7 else ["node-9"]
        op = rng.choice(("In", "NotIn"))
        return {"match_fields": [{"key": "metadata.name", "operator": op, "values": names}]}
    if roll < 0.15:
        return {"match_expressions": []}  # a term with no requirement matches no node
    op = rng.choice(("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"))
    if op in ("Gt", "Lt"):
        bound = labels.get("rank", str(rng.randint(1, 5)))
        if rng.random() < 0.5:
            bound = str(int(bound) + rng.choice((-1, 1)))
        elif rng.random() < 0.2:
            bound = rng.choice(("+2", "007"))  # integers as ParseInt reads them
        return {"match_expressions": [{"key": "rank", "operator": op, "values": [bound]}]}
    key = rng.choice(sorted(labels) or ["pool"])
    expression: dict[str, Any] = {"key": key, "operator": op}
    if op in ("In", "NotIn"):
        expression["values"] = [labels.get(key, "a"), rng.choice(ZONES + POOLS)]
        if rng.random() < 0.1:
            expression["values"].append("-not a label value-")  # makes the term match nothing
    return {"match_expressions": [expression]}
