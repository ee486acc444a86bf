"""Which nodes preempt and reclaim weigh for a task (volcano v1.15.1, actions/preempt/
preempt.go `preempt`, actions/reclaim/reclaim.go), before any victim is counted:

- `FitErrors.unresolvable`: allocate's fit error, per node (actions/allocate/allocate.go
  `predicate`): the node's sums come first (InitResreq <= FutureIdle, else Unschedulable
  "Insufficient …" and nothing more); then the predicates plugin, where NodeUnschedulable,
  NodeAffinity and TaintToleration answer UnschedulableAndUnresolvable (plugins/util
  ShouldAbort stops there); deviceshare's vGPU filter, after it, answers Unschedulable.
  Both actions first drop the nodes whose fit error from allocate reads
  UnschedulableAndUnresolvable for the task
  (framework/session.go FilterOutUnschedulableAndUnresolvableNodesForTask).
- `Predicates`: then the static filters (PredicateForPreemptAction fails a node only on
  UnschedulableAndUnresolvable: full cards pass) and preempt's one predicate helper for the
  whole action: per job and task role, the nodes an earlier task failed stay failed
  (util/predicate_helper.go, read only once the role has failed somewhere); a node dropped
  above is never tried, so never cached. reclaim makes one helper per task.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from advisor.core.model import Cluster, Pod
from advisor.core.preemption.board import Board, MigBook, covers_at
from advisor.core.state import BoolArray, CardState, Shape

# preempt's predicate error cache: per (job, task role), the nodes that failed a task
Cache = dict[tuple[str, str], BoolArray]


class FitErrors:
    """Allocate's fit errors in one cycle, read on the cycle's state as it goes."""

    def __init__(self, cluster: Cluster, mig: MigBook | None = None) -> None:
        """`mig`: the cycle's MIG instances, read as they stand at each call."""
        self.cluster = cluster
        self.mig = mig
        self._board: Board | None = None

    def unresolvable(self, state: CardState, pod: Pod) -> BoolArray:
        """Per node, whether allocate's predicate on `state` answers
        UnschedulableAndUnresolvable for the pod: its sums cover it and a static filter
        refuses it."""
        refused = ~state.static_ok(Shape.of_pod(pod).constraints)
        if not refused.any():
            return refused
        if self._board is None:  # built once: only its node sums are read, and its
            self._board = Board(self.cluster, state)  # device allocatable never changes
        board = self._board
        board.state = state  # the sums as they stand (a new board would copy these)
        nodes = np.flatnonzero(refused)
        out = np.zeros_like(refused)
        idle = board.idle_at(nodes)
        profile = pod.request.mig_profile
        if profile:  # its instances as the cycle has left them (the board keeps none)
            free = [] if self.mig is None or self.mig.empty else self.mig.free(profile)
            idle[:, board.mig_columns[profile]] = [
                len(free[n]) if free else 0 for n in nodes.tolist()
            ]
        out[nodes] = covers_at(board.request(pod), idle)
        return out


@dataclass(frozen=True, slots=True)
class Predicates:
    """One action's predicate bookkeeping. `dropped`: per Pending pod with a fit error from
    allocate, its UnschedulableAndUnresolvable nodes (`unresolvable`, or an earlier task of
    its role's, which allocate's own helper echoes); `cache`: preempt's helper, None for
    reclaim."""

    dropped: Mapping[str, BoolArray]
    cache: Cache | None

    def nodes(self, state: CardState, job: str, pod: Pod) -> BoolArray:
        """The nodes the task's attempt walks: not dropped, its static filters pass, and
        not failed by an earlier task of its job and role (a pod without a role never uses
        the cache)."""
        ok = state.static_ok(Shape.of_pod(pod).constraints)
        dropped = self.dropped.get(pod.name)
        if dropped is not None:
            ok = ok & ~dropped
        if self.cache is None or not pod.role:
            return ok
        key = (job, pod.role)
        failed = self.cache.get(key)
        fails = ~ok if dropped is None else ~ok & ~dropped  # a dropped node is never tried
        self.cache[key] = fails if failed is None else failed | fails
        return ok if failed is None else ok & ~failed
