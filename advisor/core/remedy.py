"""What to do about each Pending pod: the advice its cause is worded with and whether a
scale-up is proposed for it, decided together by one function, `remedy`, so that the two
cannot contradict each other.

The cause is a fact of the current cycle (docs/design.md §3); the advice also weighs the
rebalancing plans. A `capacity` pod whose nodes' free memory would cover it in total, or a
`fragmentation` pod, is advised to consolidate only while a plan makes room for it (found,
or held back by a cap on evictions): then no node is proposed, since one would waste money.
When no plan makes room (pods that may not move, cards too small to take the moved pods,
the nodes' other filters) the free memory is there only on paper: the advice is `no-plan`
and a scale-up is proposed. Advice keys:

| key | scale-up | when |
|---|---|---|
| `schedulable` | no | it fits now |
| `invalid` | no | the request breaks a rule: fix it |
| `fragmentation` | no | room split across cards; a plan (found or held back) rebalances it |
| `capacity-consolidate` | no | enough free in total; a plan (found or held back) makes room |
| `rebalance` | no | another cause, but a plan's moves free what it lacks |
| `no-plan` | yes | fragmentation or enough free in total, but no plan makes room |
| `capacity-scale-up` | yes | the nodes it may use lack the free memory or core in total |
| `capacity` | yes | capacity, with no total computed |
| `node-resources` | yes | GPUs fit, cpu, memory or pod slots do not: a new node brings them |
| `unsatisfiable` | yes | no node it may use could ever take it: a new node shape |

Any pod a plan rescues is never proposed a node. A pod proposed one may still get none when
no node template admits it (`ScaleUpAdvice.not_triggered` says why).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from advisor.core.diagnose import Diagnosis, PodDiagnosis

# Advice that tells the reader not to add nodes, and advice that proposes them.
ADVISES_NO_NODES = frozenset(
    {"schedulable", "invalid", "fragmentation", "capacity-consolidate", "rebalance"}
)
ADVISES_NODES = frozenset(
    {"no-plan", "capacity-scale-up", "capacity", "node-resources", "unsatisfiable"}
)
WHY: Mapping[str, str] = MappingProxyType(
    {
        "schedulable": "it fits now",
        "invalid": "its request can never be scheduled as it is",
        "fragmentation": "the room is there on one node, split across its cards",
        "capacity-consolidate": "the nodes it may use have enough free in total",
        "rebalance": "a rebalancing plan makes room for it",
        "no-plan": "no rebalancing plan makes room for it, though the free memory would "
        "cover it if it could be rearranged",
        "capacity-scale-up": "the nodes it may use lack the free memory or core in total",
        "capacity": "no node it may use has enough free",
        "node-resources": "its GPUs fit, but no node it may use has the cpu, memory or pod "
        "slot it asks for",
        "unsatisfiable": "no node it may use could ever take it",
    }
)


@dataclass(frozen=True, slots=True)
class Remedy:
    """One Pending pod's advice (a key above) and whether a scale-up is proposed for it."""

    pod: str
    advice: str
    scale_up: bool
    why: str

    def json(self) -> dict[str, Any]:
        return {"key": self.advice, "scale_up": self.scale_up, "why": self.why}


def remedy(
    verdict: PodDiagnosis, rescued: Collection[str] = (), held: Collection[str] = ()
) -> Remedy:
    """The advice for one diagnosed pod and whether it gets a scale-up, given the pods the
    rebalancing plans rescue and those a plan held back by a cap would rescue."""
    name, cause = verdict.pod.name, verdict.cause

    def decide(advice: str, why: str | None = None) -> Remedy:
        return Remedy(name, advice, advice in ADVISES_NODES, why or WHY[advice])

    if cause in ("schedulable", "invalid"):
        return decide(cause)
    consolidating = cause == "fragmentation" or (
        cause == "capacity" and verdict.cluster_free_sufficient is True
    )
    consolidate = "fragmentation" if cause == "fragmentation" else "capacity-consolidate"
    if name in rescued:  # whatever the cause: the plan's moves free what it lacks
        advice = consolidate if cause in ("fragmentation", "capacity") else "rebalance"
        return decide(advice, "a rebalancing plan makes room for it")
    if consolidating:
        if name in held:
            return decide(consolidate, "a rebalancing plan makes room, above a cap on evictions")
        return decide("no-plan")
    if cause == "capacity":
        sufficient = verdict.cluster_free_sufficient
        return decide("capacity" if sufficient is None else "capacity-scale-up")
    return decide(cause)  # node-resources, unsatisfiable


def remedies(
    diagnosis: Diagnosis, rescued: Collection[str] = (), held: Collection[str] = ()
) -> tuple[Remedy, ...]:
    """`remedy` of every diagnosed pod, in queue order."""
    return tuple(remedy(d, rescued, held) for d in diagnosis.pods)
