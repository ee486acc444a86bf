"""The training cluster the job benchmarks run on (docs/design.md §10).

The synthetic whole-node cluster of `benchmarks.synthetic`, its pods gathered into PodGroups
of 8 to 64 members in 20 queues: the running pods into gangs that run whole, the Pending
ones into gangs still waiting (some with members already running), the queues weighted 1 to
4, every fifth capped by a capability. `benchmarks.jobs_bench` times `judge` on it and
`benchmarks.report_bench` the cron run.
"""

from __future__ import annotations

import random
from dataclasses import replace

from advisor.core.jobs import Group, Jobs, Queue, frozen_resources
from advisor.core.model import Cluster, Pod
from advisor.core.profiles import profile_for
from benchmarks.synthetic import SyntheticSpec, synthetic_cluster

QUEUES = 20
SMALLEST, LARGEST = 8, 64


def _sizes(rng: random.Random, total: int, count: int) -> list[int]:
    """`count` gang sizes in [SMALLEST, LARGEST] summing to at most `total`."""
    sizes = [rng.randint(SMALLEST, LARGEST) for _ in range(count)]
    while sum(sizes) > total:
        sizes[sizes.index(max(sizes))] -= 1
    return sizes


def training_cluster(nodes: int, pending: int, gangs: int, seed: int = 20_261_205) -> Cluster:
    """The synthetic cluster with its pods in gangs and queues (see the module's doc)."""
    base = synthetic_cluster(SyntheticSpec.scaled(nodes, pending, seed, whole_node=True))
    rng = random.Random(seed)
    memory = profile_for("cce").dialect
    unit = memory.memory_unit_mib if memory else 1
    name = memory.memory if memory else "volcano.sh/gpu-mem.128Mi"
    total_mib = sum(c.memory_mib for n in base.nodes for c in n.cards)
    queues = tuple(
        Queue(
            f"q{i:02d}",
            weight=rng.randint(1, 4),
            capability=frozen_resources(
                {name: str(total_mib // unit // 10)} if i % 5 == 0 else None
            ),
        )
        for i in range(QUEUES)
    )
    running = [p for p in base.pods if p.running]
    waiting = [p for p in base.pods if not p.running]
    # About one gang in eight waits: its Pending members, and for a third of them a few
    # members already running (an elastic job scaling up, or one restarting).
    waiting_gangs = max(1, gangs // 8)
    pending_sizes = _sizes(rng, len(waiting), waiting_gangs)
    running_sizes = _sizes(rng, len(running), gangs - waiting_gangs)
    groups: list[Group] = []
    member: dict[int, str] = {}  # id of a pod -> its group
    cursor_run = 0
    for i, size in enumerate(running_sizes):
        group = f"train/job-{i:03d}"
        groups.append(Group(group, size, queues[i % QUEUES].name, rng.choice((0, 0, 100))))
        for pod in running[cursor_run : cursor_run + size]:
            member[id(pod)] = group
        cursor_run += size
    cursor_wait = 0
    for j, size in enumerate(pending_sizes):
        group = f"train/wait-{j:03d}"
        extra = rng.randint(1, 4) if j % 3 == 0 else 0
        spare = running[cursor_run : cursor_run + extra]
        cursor_run += len(spare)
        groups.append(
            Group(group, size + len(spare), queues[j % QUEUES].name, rng.choice((0, 100)))
        )
        for pod in (*spare, *waiting[cursor_wait : cursor_wait + size]):
            member[id(pod)] = group
        cursor_wait += size
    # A PodGroup holds pods of its own namespace: the members move to `train`.
    pods: list[Pod] = [
        replace(p, name=f"train/{p.name.split('/', 1)[1]}", group=member[id(p)])
        if id(p) in member
        else p
        for p in base.pods
    ]
    return replace(base, pods=tuple(pods), jobs=Jobs(queues, tuple(groups)))
