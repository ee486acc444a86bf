"""kube-scheduler's choice of victims and of the node to preempt on, converted from
kubernetes/kubernetes, tag v1.35.3,
pkg/scheduler/framework/plugins/defaultpreemption/default_preemption_test.go: every case of
`TestSelectBestCandidate` and the `TestDryRunPreemption` cases the advisor's model covers, as
advisor scenarios under profile `hami` (kube-scheduler's DefaultPreemption, docs/design.md
§10.3). Each test's pytest id is the upstream case's name, verbatim.

Translation:

- Upstream's nodes have `Capacity(veryLargeRes)`: 500m cpu, 500 bytes of memory and 32 pod
  slots (the test wrapper's default), so here `allocatable: {cpu: 500m, memory: "500",
  pods: 32}`. The pods ask upstream's `smallRes` .. `veryLargeRes` (100m/100 .. 500m/500) as
  their `resources`.
- Upstream's pods ask no GPU; every advisor pod asks one vGPU, so each asks 1 GiB of a
  16 GiB card, on nodes of four such cards: the cards never decide (under HAMi the in-tree
  filters never see them anyway), and every eviction helps.
- Start times: upstream's `epochTime` .. `epochTime6` are `time.Unix(0, n)`, n nanoseconds
  after the epoch; RFC 3339 `started` (read to the microsecond) keeps their order as n
  seconds after the epoch. Only their order matters to MoreImportantPod and
  pickOneNodeForPreemption. A pod without `StartTime` has none here either (both count it as
  started now).
- PodDisruptionBudgets are the advisor's `xgpu.io/disruption-budget: "<pdb>:<allowed>"`
  annotation on each pod the budget's selector matches (what the Kubernetes source writes).
- `TestSelectBestCandidate` asserts the node SelectCandidate picks (any of `expected`); the
  victims asserted here are SelectVictimsOnNode's on that node, worked out from upstream's
  algorithm. `TestDryRunPreemption` asserts every candidate node with its victims; the
  advisor's verdict names one node, so it must be one of upstream's candidates, with that
  candidate's victims (sorted by name, as upstream compares them), and the one
  pickOneNodeForPreemption takes among them.

TestDryRunPreemption cases not converted, and why:

- "a pod that does not fit on any node", "a pod that fits with no preemption", "a pod that
  fits on one node with no preemption", "get Unschedulable in the preemption phase when the
  filter plugins filtering the nodes": they decide by fake filter plugins (FalseFilter,
  TrueFilter, MatchFilter, FakeFilter's return codes) that no scheduler configuration has.
- "pod with anti-affinity is preempted": inter-pod anti-affinity is not modelled (§9.1).
- "preemption to resolve pod topology spread filter failure": topology spread is not
  modelled (§9.1).
- "preemption with violation of the pdb with pod whose eviction was processed, the victim
  belongs to DisruptedPods" and "..., the victim which belongs to DisruptedPods is treated as
  'nonViolating'": the advisor does not read a budget's `status.disruptedPods` (a pod whose
  eviction the API server has processed still counts against its budget here), so it
  counts one violation more than upstream.
- "all nodes are possible candidates, but DefaultPreemptionArgs limits to 2", "some nodes
  are not possible candidates, DefaultPreemptionArgs limits to 2", "preemption offset across
  multiple scheduling cycles and wrap around", "preemption looks past numCandidates until a
  non-PDB violating node is found": they set DefaultPreemptionArgs' candidate limits and
  the random offset; the advisor dry-runs every node with no offset (§10.3, not modelled).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from advisor.core.gang import judge
from advisor.core.preemption import Preemption
from advisor.scenario import scenario_from_data

SOURCE = (
    "kubernetes/kubernetes@v1.35.3 "
    "pkg/scheduler/framework/plugins/defaultpreemption/default_preemption_test.go"
)
BUDGET = "xgpu.io/disruption-budget"

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL, MEDIUM, LARGE, VERY_LARGE = (
    ("100m", "100"),
    ("200m", "200"),
    ("300m", "300"),
    ("500m", "500"),
)
PREEMPTOR = "default/p"


def epoch(n: int) -> str:
    """Upstream's epochTime<n>, in its order (see the module's docstring)."""
    return f"1970-01-01T00:00:{n:02d}Z"


@dataclass(frozen=True)
class Running:
    """One of upstream's pods already on a node: `st.MakePod().Name(name).Node(node)...`."""

    name: str
    node: str
    priority: int
    res: tuple[str, str] = ("0", "0")
    started: str | None = None
    annotations: dict[str, str] = field(default_factory=dict)


def scenario(
    nodes: list[str], pod: tuple[int, tuple[str, str]], running: list[Running]
) -> dict[str, Any]:
    on: dict[str, int] = {}
    pods: list[dict[str, Any]] = []
    for r in running:
        card = on.get(r.node, 0)
        on[r.node] = card + 1
        entry: dict[str, Any] = {
            "name": f"default/{r.name}",
            "node": r.node,
            "cards": [card % 4],
            "request": {"gpus": 1, "memory_mib": 1024},
            "resources": {"cpu": r.res[0], "memory": r.res[1]},
            "priority": r.priority,
        }
        if r.started is not None:
            entry["started"] = r.started
        if r.annotations:
            entry["annotations"] = r.annotations
        pods.append(entry)
    priority, res = pod
    pods.append(
        {
            "name": PREEMPTOR,
            "request": {"gpus": 1, "memory_mib": 1024},
            "resources": {"cpu": res[0], "memory": res[1]},
            "priority": priority,
        }
    )
    return {
        "scheduler": {"profile": "hami"},
        "nodes": [
            {
                "name": name,
                "allocatable": {"cpu": VERY_LARGE[0], "memory": VERY_LARGE[1], "pods": 32},
                "cards": [{"index": i, "memory_mib": 16384} for i in range(4)],
            }
            for name in nodes
        ],
        "pods": pods,
    }


def verdict(data: dict[str, Any]) -> Preemption:
    cluster = scenario_from_data(data, "preempt-upstream.yaml")
    (found,) = [d.preemption for d in judge(cluster).pods if d.pod.name == PREEMPTOR]
    assert isinstance(found, Preemption)
    return found


def victims(got: Preemption) -> list[str]:
    return sorted(v.removeprefix("default/") for v in got.victims)


# -- TestSelectBestCandidate ----------------------------------------------------------------


@dataclass(frozen=True)
class Select:
    name: str  # upstream's case name, verbatim
    nodes: list[str]
    pod: tuple[int, tuple[str, str]]
    running: list[Running]
    expected: dict[str, list[str]]  # upstream's `expected` nodes, each with its victims here


def R(name: str, node: str, priority: int, res: tuple[str, str], n: int = 0) -> Running:
    return Running(name, node, priority, res, epoch(n))


N3 = ["node1", "node2", "node3"]
SELECT = [
    Select(
        "a pod that fits on both nodes when lower priority pods are preempted",
        ["node1", "node2"],
        (HIGH, LARGE),
        [R("p1", "node1", MID, LARGE), R("p2", "node2", MID, LARGE)],
        {"node1": ["p1"], "node2": ["p2"]},
    ),
    Select(
        "node with min highest priority pod is picked",
        N3,
        (HIGH, VERY_LARGE),
        [
            R("p1.1", "node1", MID, MEDIUM),
            R("p1.2", "node1", MID, LARGE),
            R("p2.1", "node2", MID, MEDIUM),
            R("p2.2", "node2", LOW, MEDIUM),
            R("p3.1", "node3", LOW, MEDIUM),
            R("p3.2", "node3", LOW, MEDIUM),
        ],
        {"node3": ["p3.1", "p3.2"]},
    ),
    Select(
        "when highest priorities are the same, minimum sum of priorities is picked",
        N3,
        (HIGH, VERY_LARGE),
        [
            R("p1.1", "node1", MID, MEDIUM),
            R("p1.2", "node1", MID, LARGE),
            R("p2.1", "node2", MID, LARGE),
            R("p2.2", "node2", LOW, MEDIUM),
            R("p3.1", "node3", MID, MEDIUM),
            R("p3.2", "node3", MID, MEDIUM),
        ],
        {"node2": ["p2.1", "p2.2"]},
    ),
    Select(
        "when highest priority and sum are the same, minimum number of pods is picked",
        N3,
        (HIGH, VERY_LARGE),
        [
            R("p1.1", "node1", MID, SMALL),
            R("p1.2", "node1", NEG, SMALL),
            R("p1.3", "node1", MID, SMALL),
            R("p1.4", "node1", NEG, SMALL),
            R("p2.1", "node2", MID, LARGE),
            R("p2.2", "node2", NEG, MEDIUM),
            R("p3.1", "node3", MID, MEDIUM),
            R("p3.2", "node3", NEG, SMALL),
            R("p3.3", "node3", LOW, SMALL),
        ],
        {"node2": ["p2.1", "p2.2"]},
    ),
    Select(
        "sum of adjusted priorities is considered",
        N3,
        (HIGH, VERY_LARGE),
        [
            R("p1.1", "node1", MID, SMALL),
            R("p1.2", "node1", NEG, SMALL),
            R("p1.3", "node1", NEG, SMALL),
            R("p2.1", "node2", MID, LARGE),
            R("p2.2", "node2", NEG, MEDIUM),
            R("p3.1", "node3", MID, MEDIUM),
            R("p3.2", "node3", NEG, SMALL),
            R("p3.3", "node3", LOW, SMALL),
        ],
        {"node2": ["p2.1", "p2.2"]},
    ),
    Select(
        "non-overlapping lowest high priority, sum priorities, and number of pods",
        ["node1", "node2", "node3", "node4"],
        (VERY_HIGH, VERY_LARGE),
        [
            R("p1.1", "node1", MID, SMALL),
            R("p1.2", "node1", LOW, SMALL),
            R("p1.3", "node1", LOW, SMALL),
            R("p2.1", "node2", HIGH, LARGE),
            R("p3.1", "node3", MID, MEDIUM),
            R("p3.2", "node3", LOW, SMALL),
            R("p3.3", "node3", LOW, SMALL),
            R("p3.4", "node3", LOW, MEDIUM),
            R("p4.1", "node4", MID, MEDIUM),
            R("p4.2", "node4", MID, SMALL),
            R("p4.3", "node4", MID, SMALL),
            R("p4.4", "node4", NEG, SMALL),
        ],
        {"node1": ["p1.1", "p1.2", "p1.3"]},
    ),
    Select(
        "same priority, same number of victims, different start time for each node's pod",
        N3,
        (HIGH, VERY_LARGE),
        [
            R("p1.1", "node1", MID, MEDIUM, 2),
            R("p1.2", "node1", MID, MEDIUM, 2),
            R("p2.1", "node2", MID, MEDIUM, 3),
            R("p2.2", "node2", MID, MEDIUM, 3),
            R("p3.1", "node3", MID, MEDIUM, 1),
            R("p3.2", "node3", MID, MEDIUM, 1),
        ],
        {"node2": ["p2.1", "p2.2"]},
    ),
    Select(
        "same priority, same number of victims, different start time for all pods",
        N3,
        (HIGH, VERY_LARGE),
        [
            R("p1.1", "node1", MID, MEDIUM, 4),
            R("p1.2", "node1", MID, MEDIUM, 2),
            R("p2.1", "node2", MID, MEDIUM, 5),
            R("p2.2", "node2", MID, MEDIUM, 1),
            R("p3.1", "node3", MID, MEDIUM, 3),
            R("p3.2", "node3", MID, MEDIUM, 6),
        ],
        {"node3": ["p3.1", "p3.2"]},
    ),
    Select(
        "different priority, same number of victims, different start time for all pods",
        N3,
        (HIGH, VERY_LARGE),
        [
            R("p1.1", "node1", LOW, MEDIUM, 4),
            R("p1.2", "node1", MID, MEDIUM, 2),
            R("p2.1", "node2", MID, MEDIUM, 6),
            R("p2.2", "node2", LOW, MEDIUM, 1),
            R("p3.1", "node3", LOW, MEDIUM, 3),
            R("p3.2", "node3", MID, MEDIUM, 5),
        ],
        {"node2": ["p2.1", "p2.2"]},
    ),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in SELECT])
def test_select_best_candidate(case: Select) -> None:
    """TestSelectBestCandidate: DryRunPreemption on every node, then SelectCandidate."""
    got = verdict(scenario(case.nodes, case.pod, case.running))
    where = f"{SOURCE} TestSelectBestCandidate {case.name!r}"
    assert got.verdict == "evicts", where
    assert got.node in case.expected, where
    assert victims(got) == case.expected[got.node], where
    assert got.helps is True, where


# -- TestDryRunPreemption -------------------------------------------------------------------


def D(name: str, node: str, priority: int, res: tuple[str, str], **extra: Any) -> Running:
    return Running(name, node, priority, res, **extra)


FOO_PDB_1 = {BUDGET: "foo-pdb:1"}  # app=foo, DisruptionsAllowed 1


@dataclass(frozen=True)
class DryRun:
    name: str  # upstream's case name, verbatim
    nodes: list[str]
    pod: tuple[int, tuple[str, str]]
    running: list[Running]
    # upstream's candidates: node -> (victims, NumPDBViolations); the first listed is the one
    # pickOneNodeForPreemption takes (any of them where they tie on every rule)
    expected: dict[str, tuple[list[str], int]]
    tie: bool = False  # every candidate ties: any of them


DRY_RUN = [
    DryRun(
        "a pod that fits on both nodes when lower priority pods are preempted",
        ["node1", "node2"],
        (HIGH, LARGE),
        [D("p1", "node1", MID, LARGE), D("p2", "node2", MID, LARGE)],
        {"node1": (["p1"], 0), "node2": (["p2"], 0)},
        tie=True,
    ),
    DryRun(
        "medium priority pod is preempted, but lower priority one stays as it is small",
        ["node1", "node2"],
        (HIGH, LARGE),
        [
            D("p1.1", "node1", LOW, SMALL),
            D("p1.2", "node1", MID, LARGE),
            D("p2", "node2", MID, LARGE),
        ],
        {"node1": (["p1.2"], 0), "node2": (["p2"], 0)},
        tie=True,
    ),
    DryRun(
        "mixed priority pods are preempted",
        ["node1", "node2"],
        (HIGH, LARGE),
        [
            D("p1.1", "node1", MID, SMALL),
            D("p1.2", "node1", LOW, SMALL),
            D("p1.3", "node1", MID, MEDIUM),
            D("p1.4", "node1", HIGH, SMALL),
            D("p2", "node2", HIGH, LARGE),
        ],
        {"node1": (["p1.2", "p1.3"], 0)},
    ),
    DryRun(
        "mixed priority pods are preempted, pick later StartTime one when priorities are equal",
        ["node1", "node2"],
        (HIGH, LARGE),
        [
            D("p1.1", "node1", LOW, SMALL, started=epoch(5)),
            D("p1.2", "node1", LOW, SMALL, started=epoch(4)),
            D("p1.3", "node1", MID, MEDIUM, started=epoch(3)),
            D("p1.4", "node1", HIGH, SMALL, started=epoch(2)),
            D("p2", "node2", HIGH, LARGE, started=epoch(1)),
        ],
        {"node1": (["p1.1", "p1.3"], 0)},
    ),
    DryRun(
        "preemption with violation of same pdb",
        ["node1"],
        (HIGH, VERY_LARGE),
        [
            D("p1.1", "node1", MID, MEDIUM, annotations=FOO_PDB_1),
            D("p1.2", "node1", MID, MEDIUM, annotations=FOO_PDB_1),
        ],
        {"node1": (["p1.1", "p1.2"], 1)},
    ),
    # DisruptedPods names p2, a pod on no node: it changes nothing, so the advisor (which does
    # not read DisruptedPods) agrees with upstream's one violation.
    DryRun(
        "preemption with violation of the pdb with pod whose eviction was processed, the "
        "victim doesn't belong to DisruptedPods",
        ["node1"],
        (HIGH, VERY_LARGE),
        [
            D("p1.1", "node1", MID, MEDIUM, annotations=FOO_PDB_1),
            D("p1.2", "node1", MID, MEDIUM, annotations=FOO_PDB_1),
        ],
        {"node1": (["p1.1", "p1.2"], 1)},
    ),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in DRY_RUN])
def test_dry_run_preemption(case: DryRun) -> None:
    got = verdict(scenario(case.nodes, case.pod, case.running))
    where = f"{SOURCE} TestDryRunPreemption {case.name!r}"
    assert got.verdict == "evicts", where
    assert got.node in case.expected, where
    if not case.tie:
        assert got.node == next(iter(case.expected)), where
    want, violations = case.expected[got.node]
    assert victims(got) == want, where
    assert got.helps is True, where
    if violations:
        assert f"{violations} against its disruption budget" in got.message, where
    else:
        assert "disruption budget" not in got.message, where


NO_CANDIDATES = [
    DryRun(
        "a pod that would fit on the nodes, but other pods running are higher priority, no "
        "preemption would happen",
        ["node1", "node2"],
        (LOW, LARGE),
        [D("p1", "node1", MID, LARGE), D("p2", "node2", MID, LARGE)],
        {},
    ),
]


@pytest.mark.parametrize("case", [pytest.param(c, id=c.name) for c in NO_CANDIDATES])
def test_dry_run_preemption_no_candidates(case: DryRun) -> None:
    """Upstream expects no candidate on any node: the advisor finds no victims, in
    kube-scheduler's words."""
    got = verdict(scenario(case.nodes, case.pod, case.running))
    where = f"{SOURCE} TestDryRunPreemption {case.name!r}"
    assert (got.verdict, got.node, got.victims) == ("no-victims", None, ()), where
    assert got.message == (
        f"preemption: 0/{len(case.nodes)} nodes are available: {len(case.nodes)} No "
        "preemption victims found for incoming pod."
    ), where


# -- hand case ------------------------------------------------------------------------------


def test_fewest_victims_decides_where_the_adjusted_sums_tie() -> None:
    """Not upstream's: its "minimum number of pods" case is already decided by the adjusted
    sum (each victim adds 2^31, so fewer victims sum lower). The sums tie only where the
    extra victims' priorities cancel the offset: one of MinInt32 on node1 makes node1's two
    victims sum as node2's one; then the fewest victims wins, ahead of the start times and
    the node's name."""
    running = [
        R("p1.1", "node1", MID, LARGE),
        R("p1.2", "node1", -(2**31), MEDIUM),
        R("p2.1", "node2", MID, VERY_LARGE),
    ]
    got = verdict(scenario(["node1", "node2"], (HIGH, VERY_LARGE), running))
    assert (got.verdict, got.node, victims(got)) == ("evicts", "node2", ["p2.1"])
