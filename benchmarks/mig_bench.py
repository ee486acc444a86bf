"""A MIG fleet (docs/design.md §13): the cycle and the re-partition search at fleet size.

The cluster: `nodes` nodes of 8 A100-40GB cards under the device plugin's mixed strategy,
each card cut into seven 1g.5gb instances with one held by a bound pod (at slice 0 or 4,
seeded), and `pending` Pending pods asking 1 to 3 instances of 3g.20gb, which no card
offers: every one is `mig-geometry` (a card's free 1g destroyed would make room).

Cases:
- `judge`: time `judge(cluster)`, the verdict every output renders.
- `search`: time `core.mig_partition.search` on its diagnosis: each pod's re-partition,
  verified by a whole `judge` of the re-partitioned scenario, at most 32 in a run.
"""

from __future__ import annotations

import random
from functools import partial
from typing import Any

from advisor.core.gang import judge
from advisor.core.mig_partition import search
from advisor.core.model import Cluster
from advisor.scenario import scenario_from_data
from benchmarks.measure import Case, Outcome, Params, Timings

MODULE = "benchmarks.mig_bench"
NODES, PENDING = 500, 40
A100 = "NVIDIA A100-SXM4-40GB"
SEVEN = [{"profile": "1g.5gb", "start": s} for s in range(7)]
FLEET = "500 MIG nodes × 8 A100s in seven 1g.5gb (one held each), 40 Pending 3g.20gb pods"


def mig_cluster(nodes: int, pending: int, seed: int = 1) -> Cluster:
    rng = random.Random(seed)
    node_data: list[dict[str, Any]] = []
    pods: list[dict[str, Any]] = []
    for n in range(nodes):
        cards = [
            {"index": i, "memory_mib": 40960, "model": A100, "mig": {"instances": SEVEN}}
            for i in range(8)
        ]
        node_data.append({"name": f"mig-{n}", "mig_strategy": "mixed", "cards": cards})
        for i in range(8):
            pods.append(
                {
                    "name": f"run/p{n}-{i}",
                    "node": f"mig-{n}",
                    "request": {"gpus": 1, "mig_profile": "1g.5gb"},
                    "mig_instances": [{"card": i, "start": rng.choice((0, 4))}],
                }
            )
    for k in range(pending):
        ask = {"gpus": rng.choice((1, 2, 3)), "mig_profile": "3g.20gb"}
        pods.append({"name": f"ml/wait-{k}", "request": ask})
    return scenario_from_data({"nodes": node_data, "pods": pods}, "mig fleet")


def cases(quick: bool) -> list[Case]:
    params: dict[str, int | str] = {"nodes": NODES, "pending": PENDING}
    return [
        Case(MODULE, "judge", f"`judge()`: {FLEET}", params=params, repeats=1 if quick else 5),
        Case(
            MODULE,
            "search",
            "re-partition search after it (32 verifications at most)",
            params=params,
            repeats=1 if quick else 3,
        ),
    ]


def run_case(name: str, params: Params, repeats: int) -> Outcome:
    if name not in ("judge", "search"):
        raise ValueError(f"unknown case {name!r}")
    cluster = mig_cluster(int(params["nodes"]), int(params["pending"]))
    timings = Timings()
    diagnosis = judge(cluster)
    facts: dict[str, Any] = {"summary": diagnosis.summary}
    for _ in range(repeats):
        if name == "judge":
            timings.time("judge", partial(judge, cluster))
        else:
            found = timings.time("search", partial(search, cluster, diagnosis))
            facts["note"] = (
                f"{len(found.repartitions)} verified, {len(found.unsearched)} unsearched; "
                "the rest have none (the pods ahead take the room)"
            )
    return Outcome(timings, facts)
