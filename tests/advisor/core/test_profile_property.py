"""Properties of every scheduler profile on random small clusters (hypothesis, derandomized).

* Under `cce`, `hami` and `volcano-vgpu`, every pod the cycle places passes that profile's
  card filter at the moment it is placed, and every pod it leaves Pending passes it on no
  node, as an independent restatement of each profile's checks judges them: plain Python
  over the scenario's values and the placements (no `CardState`, no rules module), written
  from the upstream sources (CCE: docs/design.md §1–§2; HAMi v2.10.0 device.go `Fit`;
  Volcano v1.15.0 utils.go `checkNodeGPUSharingPredicateAndScore`, and allocate's check of
  the node's vgpu-number and vgpu-cores totals before it).
* A CCE scenario reads, judges and writes back the same whether it omits the `scheduler:`
  block, says `profile: cce`, or is loaded with the `cce` override.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.core.diagnose import diagnose
from advisor.core.diagnosis import Diagnosis
from advisor.core.model import Card, Cluster, Node, ProfileName, Request
from advisor.core.profiles import profile_names
from advisor.scenario import scenario_from_data, scenario_to_data
from tests.fastloop import examples

SETTINGS = settings(
    max_examples=examples(150),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    derandomize=True,
)
CARD_SIZES = (1000, 4096, 6000, 8192, 16384)
NUMA_BIND = "nvidia.com/numa-bind"
Data = dict[str, Any]


# -- the independent filter ------------------------------------------------------------------------


@dataclass
class Use:
    """What a card holds: vGPUs, memory (MiB), core (%) and, for CCE, isolation modes."""

    count: int = 0
    memory: int = 0
    core: int = 0
    modes: set[bool] = field(default_factory=set)  # CCE: whether memory+core isolation


def card_memory(cluster: Cluster, card: Card, request: Request) -> int:
    per_card, share = request.memory_mib // request.gpus, request.memory_percent
    profile = cluster.scheduler.profile
    if profile == "cce":
        return per_card
    if profile == "hami":  # Memreq first; then the share (int32 floor); then DefaultMemory; 100 %
        if per_card:
            return per_card
        if share:
            return card.memory_mib * share // 100
        return cluster.scheduler.default_memory_mib or card.memory_mib
    if share:  # Volcano: the share wins, uint(float64(Memory) * pct / 100.0)
        return int(float(card.memory_mib) * share / 100.0)
    return per_card or card.memory_mib


def card_core(cluster: Cluster, request: Request) -> int:
    core = request.core_percent // request.gpus
    return min(core, 100) if cluster.scheduler.profile == "hami" else core


def card_refusal(cluster: Cluster, card: Card, use: Use, request: Request) -> str | None:
    """Why the profile's filter refuses this card for one vGPU of `request`, or None."""
    profile = cluster.scheduler.profile
    slots = cluster.max_vgpus_per_card if card.max_vgpus is None else card.max_vgpus
    memory, core = card_memory(cluster, card, request), card_core(cluster, request)
    if profile != "volcano-vgpu" and not card.healthy:
        return "unhealthy"
    if profile == "cce" and use.modes and use.modes != {request.core_percent > 0}:
        return "isolation mode"
    if use.count >= slots:
        return "slots"
    if card.memory_mib - use.memory < memory:
        return "memory"
    if profile == "cce":
        return "core" if request.core_percent > 0 and use.core + core > 100 else None
    if use.core + core > 100:
        return "core"
    if core == 100 and use.count > 0:
        return "exclusive"
    if core == 0 and use.core >= 100:
        return "core exhausted"
    return None


def numa_bound(cluster: Cluster, annotations: dict[str, str]) -> bool:
    return cluster.scheduler.profile == "hami" and annotations.get(NUMA_BIND) == "true"


def totals_refuse(
    cluster: Cluster, node: Node, uses: dict[tuple[str, int], Use], request: Request
) -> bool:
    """Volcano's allocate checks the pod's vgpu-number and vgpu-cores against the node's
    allocatable, before any card (actions/allocate/allocate.go `predicate`): the device
    plugin's healthy cards' slots and 100 cores each, less what every pod on the node asks
    (its card count, its per-card core). `uses[(node, -1)]` holds the node's sums."""
    if cluster.scheduler.profile != "volcano-vgpu":
        return False
    asked = uses.get((node.name, -1), Use())
    healthy = [c for c in node.cards if c.healthy]
    slots = sum(cluster.max_vgpus_per_card if c.max_vgpus is None else c.max_vgpus for c in healthy)
    core = card_core(cluster, request)
    return request.gpus > slots - asked.count or 0 < core > 100 * len(healthy) - asked.core


def admits(
    cluster: Cluster, node: Node, uses: dict[tuple[str, int], Use], request: Request, bind: bool
) -> bool:
    if totals_refuse(cluster, node, uses, request):
        return False
    passing = [
        c
        for c in node.cards
        if card_refusal(cluster, c, uses[(node.name, c.index)], request) is None
    ]
    if not bind:
        return len(passing) >= request.gpus
    per_numa: dict[int, int] = {}
    for c in passing:
        per_numa[c.numa or 0] = per_numa.get(c.numa or 0, 0) + 1
    return any(n >= request.gpus for n in per_numa.values())


def take(
    cluster: Cluster,
    uses: dict[tuple[str, int], Use],
    node: str,
    cards: tuple[int, ...],
    request: Request,
) -> None:
    by_index = {c.index: c for n in cluster.nodes if n.name == node for c in n.cards}
    totals = uses.setdefault((node, -1), Use())
    totals.count += len(cards)
    totals.core += card_core(cluster, request)
    for index in cards:
        use = uses[(node, index)]
        use.count += 1
        use.memory += card_memory(cluster, by_index[index], request)
        use.core += card_core(cluster, request)
        use.modes.add(request.core_percent > 0)


def filter_problems(cluster: Cluster) -> list[str]:
    """Replays the cycle: each placed pod must pass the filter where it went, given the pods
    placed before it; each Pending pod (not invalid) must pass it on no node."""
    uses = {(n.name, c.index): Use() for n in cluster.nodes for c in n.cards}
    for p in cluster.running:
        assert p.placement is not None
        take(cluster, uses, p.placement.node, p.placement.cards, p.request)
    nodes = {n.name: n for n in cluster.nodes}
    problems = []
    for d in diagnose(cluster).pods:
        request, bind = d.pod.request, numa_bound(cluster, dict(d.pod.annotations))
        if d.placement is None:
            if d.cause != "invalid" and any(
                admits(cluster, n, uses, request, bind) for n in cluster.nodes
            ):
                problems.append(f"{d.pod.name} left {d.cause} though a node admits it")
            continue
        if d.cause == "invalid":
            problems.append(f"{d.pod.name} is invalid but placed")
        cards = {c.index: c for c in nodes[d.placement.node].cards}
        chosen = [cards[i] for i in d.placement.cards]
        if len(set(d.placement.cards)) != request.gpus:
            problems.append(f"{d.pod.name}: {d.placement.cards} for {request.gpus} cards")
        if totals_refuse(cluster, nodes[d.placement.node], uses, request):
            problems.append(f"{d.pod.name} on {d.placement.node}: the node's device totals")
        for c in chosen:
            why = card_refusal(cluster, c, uses[(d.placement.node, c.index)], request)
            if why:
                problems.append(f"{d.pod.name} on {d.placement.node} card {c.index}: {why}")
        if bind and len({c.numa or 0 for c in chosen}) > 1:
            problems.append(f"{d.pod.name}: numa-bind across NUMA nodes")
        take(cluster, uses, d.placement.node, d.placement.cards, request)
    return problems


# -- random scenarios ------------------------------------------------------------------------------


def random_request(rng: random.Random, profile: str) -> Data:
    gpus = rng.choice((1, 1, 1, 2, 3))
    core = rng.choice((0, 0, 10, 25, 50, 100) + ((120,) if profile == "hami" else ()))
    request: Data = {"gpus": gpus}
    if core:
        request["core_percent"] = core * gpus
    if profile == "cce":
        request["memory_mib"] = gpus * 128 * rng.choice((4, 8, 16, 32, 48, 64))
        return request
    kind = rng.choice(("memory", "memory", "share", "whole", "both"))
    if kind in ("memory", "both"):
        request["memory_mib"] = gpus * rng.choice((100, 1000, 2048, 3000, 5000))
    if kind in ("share", "both"):
        request["memory_percent"] = rng.choice((10, 25, 33, 50, 100))
    return request


def random_scenario(seed: int, profile: str) -> Data:
    rng = random.Random(seed)
    nodes = []
    for i in range(rng.randint(1, 3)):
        cards = []
        for j in range(rng.randint(1, 4)):
            c: Data = {"index": j, "memory_mib": rng.choice(CARD_SIZES)}
            if rng.random() < 0.15:
                c["healthy"] = False
            if profile != "cce" and rng.random() < 0.7:
                c["numa"] = rng.choice((0, 1))
            if rng.random() < 0.3:
                c["max_vgpus"] = rng.randint(1, 4)
            cards.append(c)
        nodes.append({"name": f"node-{rng.randint(0, 9)}{i}", "cards": cards})
    data: Data = {"nodes": nodes}
    if profile != "cce" or rng.random() < 0.5:
        data["scheduler"] = _settings(rng, profile)
    if rng.random() < 0.7:  # else the profile's default (cce 20, hami and volcano 10)
        data["max_vgpus_per_card"] = rng.randint(2, 6)
    cards_policies = ("binpack", "spread") + (("legacy",) if profile == "volcano-vgpu" else ())
    if rng.random() < 0.8:  # else the profile's defaults
        data["policy"] = {
            "node": rng.choice(("binpack", "spread")),
            "card": rng.choice(cards_policies),
        }
    data["pods"] = _running(rng, profile, data) + [
        _pending(rng, profile, i) for i in range(rng.randint(1, 8))
    ]
    return data


def _settings(rng: random.Random, profile: str) -> Data:
    block: Data = {"profile": profile}
    if profile == "hami":
        block["default_memory_mib"] = rng.choice((0, 0, 2000))
        block["weights"] = dict(
            zip(
                ("slot", "core", "memory"),
                rng.choice(((1, 1, 1), (1, 1, 3), (0, 2, 1), (3, 0, 0))),
                strict=True,
            )
        )
    if profile == "volcano-vgpu":
        block["schedule_weight"] = rng.choice((0, 0, 1, 2))
    return block


def _pending(rng: random.Random, profile: str, i: int) -> Data:
    data: Data = {"name": f"ml/p{i}", "request": random_request(rng, profile)}
    if rng.random() < 0.3:
        data["priority"] = 1
    if profile == "hami" and rng.random() < 0.5:
        options = {
            NUMA_BIND: "true",
            "hami.io/gpu-scheduler-policy": rng.choice(("binpack", "spread")),
            "hami.io/node-scheduler-policy": rng.choice(("binpack", "spread")),
            "hami.io/device-scoring-weights": "slot=1,core=2,memory=1",
        }
        data["annotations"] = {k: v for k, v in options.items() if rng.random() < 0.5}
    return data


def _running(rng: random.Random, profile: str, data: Data) -> list[Data]:
    """Pods already running, within each card's memory, core and slots (and CCE's one mode
    per card), as the scenario loader requires; placed at random, not by any scheduler."""
    skeleton = scenario_from_data({**data, "pods": []}, "random.yaml")
    uses = {(n.name, c.index): Use() for n in skeleton.nodes for c in n.cards}
    pods: list[Data] = []
    for i in range(rng.randint(0, 6)):
        request_data = random_request(rng, profile)
        request = Request(
            request_data["gpus"],
            request_data.get("memory_mib", 0),
            request_data.get("core_percent", 0),
            request_data.get("memory_percent", 0),
        )
        node = rng.choice(skeleton.nodes)
        if len(node.cards) < request.gpus:
            continue
        cards = rng.sample(node.cards, request.gpus)
        fits = all(
            (u := uses[(node.name, c.index)]).count
            < (skeleton.max_vgpus_per_card if c.max_vgpus is None else c.max_vgpus)
            and u.memory + card_memory(skeleton, c, request) <= c.memory_mib
            and u.core + card_core(skeleton, request) <= 100
            and (profile != "cce" or not u.modes or u.modes == {request.core_percent > 0})
            for c in cards
        )
        if fits:
            indices = tuple(c.index for c in cards)
            take(skeleton, uses, node.name, indices, request)
            pods.append(
                {
                    "name": f"run/r{i}",
                    "node": node.name,
                    "cards": list(indices),
                    "request": request_data,
                }
            )
    return pods


# -- properties ------------------------------------------------------------------------------------


def _check_filter(seed: int, profile: str) -> None:
    data = random_scenario(seed, profile)
    cluster = scenario_from_data(data, "random.yaml")
    assert cluster.scheduler.profile == profile
    assert filter_problems(cluster) == [], data


@SETTINGS
@given(st.integers(0, 2**32 - 1))
def test_cce_placements_pass_its_filter(seed: int) -> None:
    _check_filter(seed, "cce")


@SETTINGS
@given(st.integers(0, 2**32 - 1))
def test_hami_placements_pass_its_filter(seed: int) -> None:
    _check_filter(seed, "hami")


@SETTINGS
@given(st.integers(0, 2**32 - 1))
def test_volcano_placements_pass_its_filter(seed: int) -> None:
    _check_filter(seed, "volcano-vgpu")


@SETTINGS
@given(st.integers(0, 2**32 - 1))
def test_cce_is_the_same_with_or_without_the_scheduler_block(seed: int) -> None:
    data = random_scenario(seed, "cce")
    data.pop("scheduler", None)
    plain = scenario_from_data(data, "plain.yaml")
    said = scenario_from_data({"scheduler": {"profile": "cce"}, **data}, "said.yaml")
    overridden = scenario_from_data(data, "plain.yaml", "cce")
    assert plain == said == overridden
    assert diagnose(plain) == diagnose(said)
    written = scenario_to_data(said)
    assert "scheduler" not in written
    assert written == scenario_to_data(plain)


def _outcome(result: Diagnosis) -> list[tuple[str, str, str, object]]:
    return [(d.pod.name, d.cause, d.message, d.placement) for d in result.pods]


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.sampled_from(profile_names()))
def test_every_profile_ignores_the_node_listing_order(seed: int, profile: ProfileName) -> None:
    """Ties between nodes go by name (HAMi's and Volcano's random picks included), so the
    order the scenario lists its nodes in changes nothing."""
    data = random_scenario(seed, profile)
    shuffled = {**data, "nodes": random.Random(seed).sample(data["nodes"], len(data["nodes"]))}
    a = diagnose(scenario_from_data(data, "a.yaml"))
    b = diagnose(scenario_from_data(shuffled, "b.yaml"))
    assert _outcome(a) == _outcome(b)
