"""The entry point: each unplaced Pending pod's preemption verdict, by the profile's session."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from advisor.core.jobs import GroupState
from advisor.core.model import Cluster, Placement, Pod
from advisor.core.preemption.board import Board, MigBook
from advisor.core.preemption.kube import judge_kube
from advisor.core.preemption.verdict import Preemption
from advisor.core.preemption.volcano import Options, judge_volcano
from advisor.core.profiles import profile_of
from advisor.core.state import BoolArray, CardState


def judge(
    cluster: Cluster,
    state: CardState,
    unplaced: Sequence[Pod],
    placed: Mapping[str, Placement],
    outcomes: Mapping[str, GroupState],
    dropped: Mapping[str, BoolArray] | None = None,
    mig: MigBook | None = None,
) -> dict[str, Preemption]:
    """Verdicts for `unplaced` (the cycle's Pending pods it did not place, in the order it
    met them), judged on `state` (the cycle's final state, which is not changed; under
    kube-scheduler rewound to each pod's turn); `placed`: the pods the cycle placed, and
    where; `outcomes`: each PodGroup's state after the cycle; `dropped`: under Volcano, per
    pod allocate found no node for, the nodes its fit error holds as unresolvable
    (`predicates.unresolvable`); `mig`: the cycle's MIG instances as it left them.

    Several pods' evictions accumulate in one session (see `board`): a later pod sees the
    earlier victims gone and their preemptors in their place."""
    rules = profile_of(cluster.scheduler).session
    if not unplaced:
        return {}
    sched = cluster.scheduler
    board = Board(cluster, state, frozenset(placed), mig)
    if not rules.volcano:
        if sched.preemption is False:
            off = Preemption("off", "kube-scheduler's DefaultPreemption is off (preemption: false)")
            return {p.name: off for p in unplaced}
        return judge_kube(board, cluster, unplaced, placed)
    actions = sched.actions if sched.actions is not None else rules.default_actions
    gang = sched.gang
    options = Options(
        "preempt" in actions,
        "reclaim" in actions,
        rules.default_gang[0] if gang.preemptable is None else gang.preemptable,
        rules.default_gang[1] if gang.job_starving is None else gang.job_starving,
    )
    if not (options.preempt or options.reclaim):
        off = Preemption(
            "off",
            f"Volcano's actions ({', '.join(actions)}) include neither preempt nor reclaim",
        )
        return {p.name: off for p in unplaced}
    return judge_volcano(
        board, cluster, unplaced, frozenset(placed), outcomes, options, dropped or {}
    )
