"""Re-partitions on random MIG nodes (core.mig_partition, docs/design.md §13), mixed and
single strategy, held to what applying one must mean, checked apart from the search: every
card's new layout is one its table allows, keeps each held instance where it is, drains
exactly the pods holding an instance of a re-partitioned card, leaves a `single` node's
cards in its one profile, reaches the pod's ask (with what the pods ahead of it take) with
the node's other free instances, needs every card it names, and on the scenario applied
(built here, not by the module) places the pod and every drained pod."""

from __future__ import annotations

import itertools
import random
from dataclasses import replace
from typing import Any

from advisor.core.diagnosis import Diagnosis
from advisor.core.gang import judge
from advisor.core.mig import MigInstance, layout_problem, table_of
from advisor.core.mig_partition import Repartition, search
from advisor.core.model import Cluster, Node
from advisor.errors import known
from advisor.scenario import scenario_from_data
from conformance.generate_mig import random_layout

A100 = "NVIDIA A100-SXM4-40GB"
TABLE = known(table_of(A100), A100)
CUT = ("1g.5gb", "1g.5gb", "1g.5gb", "2g.10gb", "3g.20gb")
ASKED = ("1g.5gb", "2g.10gb", "3g.20gb", "3g.20gb", "4g.20gb", "7g.40gb")


def _scenario(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    nodes: list[dict[str, Any]] = []
    pods: list[dict[str, Any]] = []
    for n in range(rng.randint(1, 3)):
        single = rng.random() < 0.5
        profiles = (rng.choice(CUT),) if single else CUT
        cards = []
        for index in range(rng.randint(1, 4)):
            instances = random_layout(rng, A100, profiles)
            cards.append(
                {
                    "index": index,
                    "memory_mib": 40960,
                    "model": A100,
                    "mig": {
                        "instances": [{"profile": m.profile, "start": m.start} for m in instances]
                    },
                }
            )
            for m in instances:  # one pod per held instance: a drain is one pod per instance
                if rng.random() < 0.4:
                    pods.append(
                        {
                            "name": f"run/{n}-{index}-{m.start}",
                            "node": f"n{n}",
                            "request": {"gpus": 1, "mig_profile": m.profile},
                            "mig_instances": [{"card": index, "start": m.start}],
                        }
                    )
        nodes.append(
            {"name": f"n{n}", "mig_strategy": "single" if single else "mixed", "cards": cards}
        )
    # a single node offers its one profile only: some pods ask it
    singles = [n["cards"][0]["mig"]["instances"] for n in nodes if n["mig_strategy"] == "single"]
    offered = [m[0]["profile"] for m in singles if m]
    for i in range(rng.randint(1, 3)):
        asked = rng.choice(offered) if offered and rng.random() < 0.5 else rng.choice(ASKED)
        pod: dict[str, Any] = {
            "name": f"ml/p{i}",
            "request": {"gpus": rng.choice((1, 1, 2, 3)), "mig_profile": asked},
        }
        if rng.random() < 0.3:
            pod["priority"] = 10
        pods.append(pod)
    return {"nodes": nodes, "pods": pods}


def _holders(cluster: Cluster, node: str) -> dict[tuple[int, int], str]:
    return {
        held: p.name
        for p in cluster.running
        if p.placement is not None and p.placement.node == node
        for held in p.mig_instances
    }


def _free_of(
    node: Node,
    card: int,
    after: tuple[MigInstance, ...],
    holders: dict[tuple[int, int], str],
    profile: str,
) -> int:
    return sum(m.profile == profile and (card, m.start) not in holders for m in after)


def _check(cluster: Cluster, diagnosis: Diagnosis, r: Repartition) -> None:
    node = next(n for n in cluster.nodes if n.name == r.node)
    pod = next(p for p in cluster.pending if p.name == r.pod)
    profile, holders = pod.request.mig_profile, _holders(cluster, r.node)
    # what the node must offer: the pod's ask, what pods placed ahead of it took there, and
    # what the mig-geometry pods ahead of it ask (the room made goes to them first)
    ahead = list(itertools.takewhile(lambda d: d.pod.name != r.pod, diagnosis.pods))
    mine = [d for d in ahead if d.pod.request.mig_profile == profile]
    ask = pod.request.gpus
    ask += sum(d.pod.request.gpus for d in mine if d.placement and d.placement.node == r.node)
    ask += sum(d.pod.request.gpus for d in mine if d.cause == "mig-geometry")
    cards = {c.index: c for c in node.cards}
    cut = {c.card: c for c in r.cuts}
    assert list(cut) == sorted(cut)
    assert cut
    for index, c in cut.items():
        card = cards[index]
        assert card.healthy
        assert card.mig is not None
        assert c.before == tuple(sorted(card.mig, key=lambda m: m.start))
        assert layout_problem(TABLE, c.after) is None, c.after
        for m in card.mig:  # a held instance stays where it is
            if (index, m.start) in holders:
                assert m in c.after
    drained = {name for (index, _), name in holders.items() if index in cut}
    assert set(r.drain) == drained
    assert list(r.drain) == sorted(r.drain)
    if node.mig_strategy == "single":
        assert {m.profile for c in cut.values() for m in c.after} == {profile}
    layouts = {k: cut[k].after if k in cut else (c.mig or ()) for k, c in cards.items()}
    free = {k: _free_of(node, k, layouts[k], holders, profile) for k in cards if cards[k].healthy}
    assert sum(free.values()) >= ask
    for index in cut:  # each card is needed: its old layout instead leaves the ask short
        card = cards[index]
        without = dict(free)
        without[index] = _free_of(node, index, card.mig or (), holders, profile)
        assert sum(without.values()) < ask, (r.summary, index)
    assert dict(r.devices) == {
        k: tuple(
            sorted({p: sum(m.profile == p for m in v) for p in {m.profile for m in v}}.items())
        )
        for k, v in layouts.items()
        if cards[k].mig is not None
    }
    # the scenario applied: new layouts, drained pods Pending again
    nodes = tuple(
        replace(n, cards=tuple(replace(c, mig=layouts[c.index]) for c in n.cards))
        if n.name == r.node
        else n
        for n in cluster.nodes
    )
    pods = tuple(
        replace(p, placement=None, mig_instances=()) if p.name in drained else p
        for p in cluster.pods
    )
    causes = {d.pod.name: d.cause for d in judge(replace(cluster, nodes=nodes, pods=pods)).pods}
    assert all(causes[name] == "schedulable" for name in (r.pod, *r.drain)), causes


def test_every_re_partition_found_on_random_mig_nodes_holds() -> None:
    seen = {"found": 0, "cards>1": 0, "single": 0, "drained": 0}
    for seed in range(600):
        cluster = scenario_from_data(_scenario(seed), f"seed {seed}")
        diagnosis = judge(cluster)
        for r in search(cluster, diagnosis).repartitions:
            _check(cluster, diagnosis, r)
            node = next(n for n in cluster.nodes if n.name == r.node)
            seen["found"] += 1
            seen["cards>1"] += len(r.cuts) > 1
            seen["single"] += node.mig_strategy == "single"
            seen["drained"] += bool(r.drain)
    # the draws reach every kind of re-partition
    assert min(seen.values()) >= 5, seen
