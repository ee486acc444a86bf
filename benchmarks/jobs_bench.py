"""The job layer at fleet size (docs/design.md §10): a training cluster's whole cycle.

The 5,000-node training cluster of `benchmarks.training` (30,000 running pods, 2,000
Pending, every node and pod with allocatable, labels, taints, requests, selectors and
tolerations, 500 PodGroups of 8 to 64 members in 20 queues). `judge` (the verdict every
output renders) is timed on it under cce, Volcano's session.

Cases:
- `jobs`: time `judge(cluster)`; the facts say how many gangs and queues, and the summary.
"""

from __future__ import annotations

from advisor.core.gang import judge
from benchmarks.measure import Case, Outcome, Params, Timings
from benchmarks.training import training_cluster

MODULE = "benchmarks.jobs_bench"
NODES, PENDING = 5_000, 2_000
GANGS = 500
LABEL = (
    "`judge()` under cce: 5,000 whole nodes × 8 cards, 30,000 running, 2,000 Pending, "
    "500 gangs of 8–64 in 20 queues"
)


def cases(quick: bool) -> list[Case]:
    params: dict[str, int | str] = {"nodes": NODES, "pending": PENDING, "gangs": GANGS}
    return [
        Case(
            MODULE,
            "jobs",
            LABEL,
            params=params,
            repeats=1 if quick else 5,
            goal_phase="judge",
            goal_seconds=2.5,
            goal_rss_mib=400.0,
        )
    ]


def run_case(name: str, params: Params, repeats: int) -> Outcome:
    if name != "jobs":
        raise ValueError(f"unknown case {name!r}")
    built = Timings()
    cluster = built.time(
        "build",
        lambda: training_cluster(
            int(params["nodes"]), int(params["pending"]), int(params["gangs"])
        ),
    )
    timings = Timings()
    for _ in range(repeats):
        diagnosis = timings.time("judge", lambda: judge(cluster))
    summary = diagnosis.summary
    states: dict[str, int] = {}
    for group in diagnosis.groups:
        states[group.state] = states.get(group.state, 0) + 1
    kinds = ", ".join(f"{n:,} {c}" for c, n in summary.items() if c != "pending" and n)
    facts = {
        "build_cluster_seconds": round(built.wall["build"][0], 3),
        "groups": len(cluster.jobs.groups),
        "queues": len(cluster.jobs.queues),
        "summary": summary,
        "group_states": states,
        "note": f"Pending: {kinds}; waiting groups: "
        + ", ".join(f"{n} {s}" for s, n in sorted(states.items())),
    }
    return Outcome(timings, facts)
