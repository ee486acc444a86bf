"""A job's task roles as Volcano's JobInfo counts them (docs/design.md §10.2), for the job
cycle (core.gang). Read from Volcano v1.15.1 `pkg/scheduler/api/job_info.go`:

- A task's role is its pod's `volcano.sh/task-spec` (getTaskRole); a PodGroup's
  `spec.minTaskMember` gives each role its own minimum (ParseMinMemberInfo), their sum is
  TaskMinAvailableTotal.
- Where minMember is not below that sum, each role is checked: CheckTaskValid (running +
  Pending of the role ≥ its minimum, else the gang plugin's "Not enough valid pods of each
  task for gang-scheduling") and CheckTaskReady (running + placed of the role ≥ its
  minimum, beside the count: the gang plugin's JobReadyFn). Where minMember is below it,
  neither is checked ("if job minAvailable is less than sum of(task minAvailable), skip").
- A task whose role already has a fit error in this job is skipped without a try
  (TaskHasFitErrors; allocate.go: "Task %s with role spec %s has already predicated
  failed, skip"); a pod without a role never is.
- After a fit error, the job goes on (NeedContinueAllocating, where not every member is
  needed): where minMember is below the roles' sum, while running + placed + the Pending
  members of roles without a fit error can reach minMember; else while every role with a
  fit error and a minimum of its own already has that minimum running or placed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from advisor.core.model import Pod


@dataclass(slots=True)
class Roles:
    """One job's roles in one session: `mins` its minTaskMember, `ready` its running members
    by role, `pending` its Pending members by role (TaskStatusIndex[Pending]: placed ones
    leave it), `placed` those placed this session, `failed` the roles with a fit error."""

    min_member: int
    mins: Mapping[str, int]
    ready: Counter[str]
    pending: Counter[str]
    placed: Counter[str] = field(default_factory=Counter)
    failed: set[str] = field(default_factory=set)

    @classmethod
    def of(
        cls,
        min_member: int,
        mins: Mapping[str, int],
        running: Iterable[Pod],
        pending: Iterable[Pod],
    ) -> Roles:
        return cls(
            min_member,
            mins,
            Counter(_role(p) for p in running),
            Counter(_role(p) for p in pending),
        )

    @property
    def checked(self) -> bool:
        """Whether each role's minimum is checked: minMember not below their sum."""
        return self.min_member >= sum(self.mins.values())

    def valid(self) -> bool:
        """CheckTaskValid: every role with a minimum has it among running + Pending."""
        if not self.checked:
            return True
        return all(
            self.ready[role] + self.pending[role] >= need
            for role, need in self.mins.items()
            if need > 0
        )

    def ready_roles(self) -> bool:
        """CheckTaskReady: every role has its minimum running or placed."""
        if not self.checked:
            return True
        return all(self.ready[r] + self.placed[r] >= need for r, need in self.mins.items())

    def skipped(self, pod: Pod) -> bool:
        """TaskHasFitErrors: the pod's role (one it names) already failed in this job."""
        return pod.role is not None and pod.role in self.failed

    def place(self, pod: Pod, placed: bool = True) -> None:
        """The pod is placed (it leaves Pending), or a placement is undone."""
        step = 1 if placed else -1
        self.placed[_role(pod)] += step
        self.pending[_role(pod)] -= step

    def fail(self, pod: Pod) -> None:
        """The pod has a fit error: its role (a pod of none: the empty role) joins the
        failed ones (FitFailedRoles)."""
        self.failed.add(_role(pod))

    def go_on(self) -> bool:
        """NeedContinueAllocating after a fit error (the caller has already stopped a job
        whose every member is needed)."""
        if self.min_member < sum(self.mins.values()):
            left = sum(n for role, n in self.pending.items() if role not in self.failed)
            return sum(self.ready.values()) + sum(self.placed.values()) + left >= self.min_member
        return all(
            self.ready[role] + self.placed[role] >= self.mins.get(role, 0) for role in self.failed
        )


def roles_valid(min_member: int, mins: Mapping[str, int], members: Iterable[Pod]) -> bool:
    """CheckTaskValid over `members`, each counted whatever its status (JobValid as preempt
    and reclaim run it)."""
    return Roles.of(min_member, mins, members, ()).valid()


def roles_ready(min_member: int, mins: Mapping[str, int], held: Iterable[Pod]) -> bool:
    """CheckTaskReady (CheckTaskPipelined) over `held`: the members running, placed or
    pipelined."""
    return Roles.of(min_member, mins, held, ()).ready_roles()


def _role(pod: Pod) -> str:
    return pod.role or ""


def skip_message(pod: Pod) -> str:
    """The fit error Volcano records for a skipped task (allocate.go, TaskHasFitErrors)."""
    return (
        f"Task {pod.name.split('/', 1)[-1]} with role spec {pod.role} has already predicated "
        "failed, skip"
    )
