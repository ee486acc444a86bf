"""Preemption verdicts (docs/design.md §10.2): for each Pending pod the simulated cycle did not
place, what the real scheduler's preemption would do, judged after the cycle: on its final
state under Volcano, at each pod's turn in the queue under kube-scheduler (`kube`).

- kube-scheduler's DefaultPreemption (the `kube-scheduler` session: HAMi), `kube`;
- Volcano's `preempt` (within a queue) and `reclaim` (across queues) actions, `volcano`,
  with the proportion plugin's state they ask in `queues` (core.queues' arithmetic, on the
  cycle's allocations), the orders they walk in `order` and the nodes they weigh in
  `predicates` (allocate's fit errors, preempt's predicate error cache);
- `board`: the cluster as the evictions leave it, shared by both, so that the evictions of
  one session accumulate (a later pod sees the earlier pods' victims gone and their
  preemptors on their nodes);
- `judge` (this package's entry point, in `session`) dispatches on the profile's session.
"""

from __future__ import annotations

from advisor.core.preemption.session import judge
from advisor.core.preemption.verdict import VERDICTS, Preemption, Verdict

__all__ = ["VERDICTS", "Preemption", "Verdict", "judge"]
