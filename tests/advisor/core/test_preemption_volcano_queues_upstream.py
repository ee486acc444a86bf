"""Volcano's preempt and reclaim where queues decide, converted from volcano-sh/volcano, tag
v1.15.1: pkg/scheduler/actions/preempt/preempt_test.go `TestPreempt` (the cases
tests/advisor/core/test_preemption_volcano.py does not convert) and
pkg/scheduler/actions/reclaim/reclaim_test.go `TestReclaim` (the rest of its cases), as
advisor scenarios under profile cce with `actions` naming preempt or reclaim (docs/design.md
§10.1, §10.3). Each test's pytest id is the upstream case's name, verbatim.

Translation:

- Upstream's pods ask cpu and memory only; here each also asks 128 MiB of one 16 GiB card,
  on nodes of four such cards, so the cards never decide (and every eviction helps).
  Queue capabilities name cpu and memory as upstream's do.
- PodGroups are the scenario's `groups` with upstream's minMember, queue and priority (the
  value of their priorityClassName: the tests' "low-priority" and "high-priority" classes);
  `volcano.sh/preemptable` is the pod's `preemptable` (upstream's default: true).
- Upstream runs the preempt or the reclaim action alone, on a session whose Pending pods
  allocate never tried; the advisor always runs the cycle (allocate) first. Where the cycle
  places the preemptor (upstream: preempt pipelines it without evicting), the advisor gives
  no verdict and evicts nobody, which is upstream's "ExpectEvictNum: 0".
- Upstream's queues have no creation time (equal), so its queue order falls back to their
  UIDs (their names); the advisor's stand-in is the listing order, here the names' order.

Model fix these cases found: reclaim's victims from different queues go in reverse queue
order (framework/session_plugins.go:1205-1206, BuildVictimsPriorityQueue calls
VictimQueueOrderFn, which with no plugin's victim queue order is !QueueOrderFn, :814;
proportion's queue order, plugins/proportion/proportion.go:266-284: higher spec.priority,
then lower share). The advisor ordered them by job priority alone, and evicted preemptee2-1
in "sort reclaimees when reclaiming from overusing queues with different queue priority"
and in "Node available resources should be included in reclaimed resources"
(advisor/core/preemption/order.py `victim_order`).

The earlier module's "not converted" list predates the queue model: the queue-capability
cases of TestPreempt and the multi-queue case (whose expectation is preemption between two
jobs of q2, which the advisor models) are converted here.

Not converted, and why:

- TestPreempt "unBestEffort high-priority pod preempt BestEffort low-priority pod in same
  queue" and "BestEffort high-priority pod preempt BestEffort low-priority pod in same
  queue": every advisor pod asks a vGPU, so none is BestEffort (preempt.go's filter treats
  BestEffort preemptors apart, preempt.go:203-206, "BestEffort pod is not supported to
  preempt unBestEffort pod").
- TestReclaim "can not reclaim resources when queue is not open(proportion plugin)":
  proportion's PreemptiveFn (plugins/proportion/proportion.go:333-337, queueAllocatable:
  "is not in open state, can not allocate tasks"; reclaim.go:149) refuses a queue that is
  not Open; the advisor's reclaim does not read a queue's state (docs/design.md §10.3, not
  modelled), so it would evict preemptee2 here.
- TestReclaim "can not reclaim resources when queue is not open(capacity plugin)": converted
  with the capacity plugin's tables, tests/advisor/core/test_capacity_upstream.py.
- TestReclaim "Reclaim succeeds for second task when first task has PreemptionPolicy=Never":
  the test's tiers leave gang's EnabledJobPipelined unset (reclaim_test.go:345-376), so
  Session.JobPipelined (framework/session_plugins.go:505-533) votes true and
  reclaim.go:162-163 commits one member's pipeline of a minMember-2 job; Volcano's default
  configuration enables it (plugins/defaults.go:32, ApplyPluginConfDefaults), and the
  advisor, which models those defaults, discards the statement as gang's JobPipelined does
  (no victims).
- TestTopologyAwarePreempt is not converted: it runs preempt with
  enableTopologyAwarePreemption on (preempt_test.go:739), a victim search
  (preempt.go topologyAwarePreempt) the advisor does not model; off is Volcano's default,
  and a live configuration that turns it on is named in a warning (sources/kubejobs.py
  `_action_arguments`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from advisor.core.gang import judge
from advisor.core.preemption import Preemption
from advisor.scenario import scenario_from_data
from tests.advisor.core import volcano_tables as tables
from tests.advisor.core.volcano_tables import node

SOURCE = "volcano-sh/volcano@v1.15.1 pkg/scheduler/actions"
UPSTREAM_GANG = {"preemptable": True, "job_starving": True}  # both tests' tiers enable both
# TestPreempt's priority classes; TestReclaim's are named per case.
LOW, HIGH = 10, 100000


def pod(name: str, group: str, cpu: str, memory: str, **rest: Any) -> dict[str, Any]:
    return tables.pod("c1", 128, name, group, cpu, memory, **rest)


def group(name: str, queue: str, min_member: int, priority: int = 0) -> dict[str, Any]:
    return {"name": f"c1/{name}", "queue": queue, "min_member": min_member, "priority": priority}


@dataclass(frozen=True)
class Case:
    name: str  # upstream's case name, verbatim
    test: str  # "preempt/preempt_test.go TestPreempt" or the reclaim one
    nodes: list[dict[str, Any]]
    queues: list[dict[str, Any]]
    groups: list[dict[str, Any]]
    pods: list[dict[str, Any]]
    preemptor: str  # the Pending pod whose verdict is asserted
    evicted: list[str]  # upstream's ExpectEvicted (empty: ExpectEvictNum 0)
    verdict: str | None  # the preemptor's verdict; None: the cycle places it
    node: str | None = None

    @property
    def action(self) -> str:
        return "reclaim" if "reclaim" in self.test else "preempt"


PREEMPT = "preempt/preempt_test.go TestPreempt"
RECLAIM = "reclaim/reclaim_test.go TestReclaim"


CASES = [
    Case(
        "do not preempt if there are enough idle resources",
        PREEMPT,
        [node("n1", "10", "10G")],
        [{"name": "q1"}],
        [group("pg1", "q1", 3)],
        [
            pod("preemptee1", "pg1", "1", "1G", on="n1"),
            pod("preemptee2", "pg1", "1", "1G", on="n1", card=1),
            pod("preemptor1", "pg1", "1", "1G"),
        ],
        "c1/preemptor1",
        [],
        None,
    ),
    Case(
        "preempt low priority job in same queue",
        PREEMPT,
        [node("n1", "12", "12G")],
        [{"name": "q1", "capability": {"cpu": "4", "memory": "4G"}}],
        [group("pg1", "q1", 0, LOW), group("pg2", "q1", 1, HIGH)],
        [
            pod("preemptee1", "pg1", "3", "3G", on="n1", preemptable=True),
            pod("preemptor1", "pg2", "3", "3G"),
        ],
        "c1/preemptor1",
        ["c1/preemptee1"],
        "evicts",
        "n1",
    ),
    Case(
        "preempt low priority job in same queue: allocatable and has enough resource, "
        "don't preempt",
        PREEMPT,
        [node("n1", "12", "12G")],
        [{"name": "q1", "capability": {"cpu": "6", "memory": "6G"}}],
        [group("pg1", "q1", 1, LOW), group("pg2", "q1", 1, HIGH)],
        [
            pod("preemptee1", "pg1", "3", "3G", on="n1", preemptable=True),
            pod("preemptor1", "pg2", "3", "3G"),
        ],
        "c1/preemptor1",
        [],
        None,
    ),
    Case(
        "preempt low priority job in same queue but not pod with preemptable=false or higher "
        "priority",
        PREEMPT,
        [node("n1", "12", "12G")],
        [{"name": "q1", "capability": {"cpu": "3", "memory": "3G"}}],
        [group("pg1", "q1", 1, LOW), group("pg2", "q1", 1, HIGH)],
        [
            pod("preemptee1", "pg1", "1", "1G", on="n1", preemptable=False),
            pod("preemptee2", "pg1", "1", "1G", on="n1", card=1, preemptable=True),
            pod("preemptee3", "pg1", "1", "1G", on="n1", card=2, preemptable=True, priority=HIGH),
            pod("preemptor1", "pg2", "1", "1G"),
        ],
        "c1/preemptor1",
        ["c1/preemptee2"],
        "evicts",
        "n1",
    ),
    Case(
        "rollback evictions when preemptor exceeds queue capacity after evicting victims",
        PREEMPT,
        [node("n1", "10", "10G")],
        [{"name": "q1", "capability": {"cpu": "3", "memory": "3G"}}],
        [group("pg1", "q1", 1, LOW), group("pg2", "q1", 1, HIGH)],
        [
            pod("preemptee1", "pg1", "1", "1G", on="n1", preemptable=True),
            pod("preemptee2", "pg1", "1", "1G", on="n1", card=1, preemptable=True),
            pod("preemptor1", "pg2", "4", "4G"),
        ],
        "c1/preemptor1",
        [],
        "no-victims",
    ),
    Case(
        "multi-queue: preemptorTasks must not be overwritten by intra-job preemption of "
        "another queue",
        PREEMPT,
        [node("n1", "2", "2G")],
        [{"name": "q1"}, {"name": "q2", "capability": {"cpu": "4", "memory": "4G"}}],
        [group("pg1", "q1", 1), group("pg2", "q2", 0, LOW), group("pg3", "q2", 1, HIGH)],
        [
            pod("q1-runner1", "pg1", "1", "1G", on="n1"),
            pod("q2-preemptee1", "pg2", "1", "1G", on="n1", card=1, preemptable=True),
            pod("q2-preemptor1", "pg3", "1", "1G"),
        ],
        "c1/q2-preemptor1",
        ["c1/q2-preemptee1"],
        "evicts",
        "n1",
    ),
    Case(
        "sort reclaimees when reclaiming from overusing queue",
        RECLAIM,
        [node("n1", "4", "4Gi")],
        [{"name": "q1"}, {"name": "q2"}, {"name": "q3"}],
        # low-priority 100, mid-priority 500, high-priority 1000
        [group("pg1", "q1", 1, 500), group("pg2", "q2", 1, 100), group("pg3", "q3", 1, 1000)],
        [
            pod("preemptee1-1", "pg1", "1", "1G", on="n1", preemptable=True),
            pod("preemptee1-2", "pg1", "1", "1G", on="n1", card=1, preemptable=True),
            pod("preemptee2-1", "pg2", "1", "1G", on="n1", card=2, preemptable=True),
            pod("preemptee2-2", "pg2", "1", "1G", on="n1", card=3, preemptable=False),
            pod("preemptor1", "pg3", "1", "1G"),
        ],
        "c1/preemptor1",
        ["c1/preemptee2-1"],
        "evicts",
        "n1",
    ),
    Case(
        "sort reclaimees when reclaiming from overusing queues with different queue priority",
        RECLAIM,
        [node("n1", "4", "4Gi")],
        # BuildQueueWithPriorityAndResourcesQuantity(name, priority, nil, nil): weight 1
        [
            {"name": "q1", "priority": 5},
            {"name": "q2", "priority": 10},
            {"name": "q3", "priority": 1},
        ],
        # every group "mid-priority", a class this case does not define: priority 0
        [group("pg1", "q1", 1), group("pg2", "q2", 1), group("pg3", "q3", 1)],
        [
            pod("preemptee1-1", "pg1", "1", "1G", on="n1", preemptable=True),
            pod("preemptee1-2", "pg1", "1", "1G", on="n1", card=1, preemptable=False),
            pod("preemptee2-1", "pg2", "1", "1G", on="n1", card=2, preemptable=True),
            pod("preemptee2-2", "pg2", "1", "1G", on="n1", card=3, preemptable=False),
            pod("preemptor1", "pg3", "1", "1G"),
        ],
        "c1/preemptor1",
        ["c1/preemptee1-1"],
        "evicts",
        "n1",
    ),
    Case(
        "Node available resources should be included in reclaimed resources",
        RECLAIM,
        [node("n1", "10", "2Gi")],
        # q1, q2: BuildQueueWithPriorityAndResourcesQuantity (priority 1, 2; weight 1);
        # q3: BuildQueue("q3", 3, nil), weight 3
        [
            {"name": "q1", "priority": 1},
            {"name": "q2", "priority": 2},
            {"name": "q3", "weight": 3},
        ],
        [group("pg1", "q1", 0, 500), group("pg2", "q2", 0, 500), group("pg3", "q3", 1, 500)],
        [
            pod("preemptee1-1", "pg1", "1", "1G", on="n1", preemptable=True),
            pod("preemptee2-1", "pg2", "1", "1G", on="n1", card=1, preemptable=True),
            pod("preemptor1", "pg3", "2", "1G"),
        ],
        "c1/preemptor1",
        ["c1/preemptee1-1"],
        "evicts",
        "n1",
    ),
]


def verdicts(case: Case) -> dict[str, Preemption | None]:
    data: dict[str, Any] = {
        "scheduler": {
            "profile": "cce",
            "actions": ["allocate", case.action],
            "gang": UPSTREAM_GANG,
        },
        "nodes": case.nodes,
        "queues": case.queues,
        "groups": case.groups,
        "pods": case.pods,
    }
    cluster = scenario_from_data(data, "volcano-queues.yaml")
    return {d.pod.name: d.preemption for d in judge(cluster).pods}


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in CASES])
def test_volcano_queues_upstream(case: Case) -> None:
    where = f"{SOURCE}/{case.test} {case.name!r}"
    found = verdicts(case)
    evicted = [v for p in found.values() if p is not None for v in p.victims]
    assert evicted == case.evicted, where
    got = found[case.preemptor]
    if case.verdict is None:
        assert got is None, where
        return
    assert got is not None, where
    assert got.verdict == case.verdict, where
    assert got.node == case.node, where
    if case.verdict == "evicts":
        assert got.helps is True, where


@pytest.mark.parametrize(("q2_priority", "winner", "victim"), [(0, "p1", "v1"), (10, "p2", "v2")])
def test_preempt_takes_queue_by_queue(q2_priority: int, winner: str, victim: str) -> None:
    """Hand case: preempt takes the queues in QueueOrderFn order, each queue's jobs before
    the next queue's (v1.15.1 preempt.go Execute: `queues.Pop()`, then preemptorsMap of that
    queue). n1 has 1 cpu free; p1 (q1, the higher job priority, 3 cpu) can evict v1 (2 cpu)
    and p2 (q2, 2 cpu) can evict v2 (1 cpu), but the room is for one of them. Equal queues
    tie on share and go in listing order, so q1's p1 wins; with q2's spec.priority higher,
    q2 goes first and p2 wins, though p1's job priority is higher (one order over all jobs
    would take p1 first). A tainted node adds cpu to the total, so that each queue deserves
    its request."""
    tainted = {**node("n2", "16", "16G"), "taints": [{"key": "x", "effect": "NoSchedule"}]}
    data: dict[str, Any] = {
        "scheduler": {"profile": "cce", "actions": ["allocate", "preempt"], "gang": UPSTREAM_GANG},
        "nodes": [node("n1", "4", "16G"), tainted],
        "queues": [{"name": "q1"}, {"name": "q2", "priority": q2_priority}],
        "groups": [
            group("pg-v1", "q1", 0, LOW),
            group("pg-v2", "q2", 0, LOW),
            group("pg-p1", "q1", 1, HIGH),
            group("pg-p2", "q2", 1, 1000),
        ],
        "pods": [
            pod("v1", "pg-v1", "2", "1G", on="n1", preemptable=True),
            pod("v2", "pg-v2", "1", "1G", on="n1", card=1, preemptable=True),
            pod("p1", "pg-p1", "3", "1G"),
            pod("p2", "pg-p2", "2", "1G"),
        ],
    }
    found = {d.pod.name: d.preemption for d in judge(scenario_from_data(data, "q.yaml")).pods}
    won = found[f"c1/{winner}"]
    assert won is not None
    assert (won.verdict, won.node, won.victims) == ("evicts", "n1", (f"c1/{victim}",))
    (lost,) = [v for name, v in found.items() if name != f"c1/{winner}"]
    assert lost is not None
    assert lost.verdict == "no-victims"
