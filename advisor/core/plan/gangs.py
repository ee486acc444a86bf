"""The plan board's gang rules (docs/design.md §10.4): which running members a plan may
evict, and how many of a Pending gang must place at once. A plan evicts a running gang's
surplus (its members above min_member) one by one, as Volcano's gang plugin lets preempt
take them, or the gang whole; never anything between. `Board` (core.plan.board) holds the
state these read."""

from __future__ import annotations

from collections.abc import Iterable


class GangRules:
    """Mixed into `Board`: its gangs (`gang_min`, `gang_of`, `members`) and where each pod
    is (`where`: its cards, None where it is not running)."""

    gang_min: dict[str, int]
    gang_of: list[str | None]
    members: dict[str, list[int]]
    where: list[list[int] | None]

    def whole_gangs(self, pods: Iterable[int]) -> list[int]:
        """`pods`, and every other member of each running gang of which they take more than
        its surplus (`gang_surplus`): a plan leaves min_member of a gang running or evicts
        it whole, never anything between (§10.4)."""
        out = list(dict.fromkeys(pods))
        if not self.members:
            return out
        for group, taken in self._gang_counts(out).items():
            if taken > self.gang_surplus(group):
                out.extend(m for m in self.members[group] if m not in out)
        return out

    def splits_gang(self, evict: Iterable[int]) -> bool:
        """Whether evicting these pods together leaves some gang running with fewer than
        min_member of it, but not none (what no plan does)."""
        if not self.members:
            return False
        gone = list(dict.fromkeys(evict))
        for group, taken in self._gang_counts(gone).items():
            if taken > self.gang_surplus(group) and taken < self.gang_running(group):
                return True
        return False

    def gang_running(self, group: str) -> int:
        """The gang's members running on the board (or bound by the current cycle)."""
        return sum(1 for m in self.members[group] if self.where[m] is not None)

    def gang_surplus(self, group: str) -> int:
        """How many of the gang's running members a plan may evict and leave it at
        min_member. Volcano's gang plugin lets preempt and reclaim take a job's task while
        the job keeps more than min_member ready, counting the victims of one preemptor
        together (v1.15.1 pkg/scheduler/plugins/gang/gang.go, preemptableFn)."""
        return self.gang_running(group) - self.gang_min[group]

    def _gang_counts(self, pods: Iterable[int]) -> dict[str, int]:
        counts: dict[str, int] = {}
        for p in pods:
            group = self.gang_of[p]
            if group is not None and self.where[p] is not None:
                counts[group] = counts.get(group, 0) + 1
        return counts

    def gang_need(self, group: str, evict: Iterable[int] = ()) -> int:
        """How many of the gang's Pending members must place at once for it to start:
        min_member less its members running (not evicted)."""
        gone = set(evict)
        ready = sum(1 for m in self.members[group] if self.where[m] is not None and m not in gone)
        return self.gang_min[group] - ready

    def loose(self, pod: int) -> bool:
        """Whether the pod may be evicted alone: it is in no gang, or in one with surplus
        (a chain or a set that takes more of a gang than that is dropped: `splits_gang`)."""
        group = self.gang_of[pod]
        return group is None or self.gang_surplus(group) > 0
