"""Reachable replicas (docs/design.md §12.2): how many more replicas each autoscaler's
target gets placed now if the HPA scales it from `replicas` up to `max_replicas`.

- The replica template is the target's newest running pod (latest `created`, else
  `started`; on a tie, or where none says, the one listed last, which is the one created
  last): its request, resources, constraints and priority. A replica has no PodGroup of
  its own beyond its owner's automatic one, so the job layer sees each as a job of one
  pod. A target with no running pod is `unknown-template`: nothing is guessed.
- The replicas join the Pending pods as new pods, listed after every pod the cluster has:
  in queue order that is after every Pending pod of equal or higher priority, before those
  of lower priority. "One by one": the k-th replica is tried with the k−1 before it holding
  whatever they were placed on, in the very cycle every output judges by (`gang.judge`).
  `placeable` counts the replicas placed; `blocked` is the verdict of the first one left
  Pending (its cause, and the node summary the diagnosis gives a Pending pod).

Cost. Where the judged cycle is §3's one-pod cycle (no PodGroups, queues or quotas, and no
enqueue action), the diagnosis's own cycle serves every autoscaler: the state where a
template's priority joins the queue is the running pods plus the diagnosis's placements of
the Pending pods of that priority or above, and each autoscaler places only its replicas on
it, stopping at the first that stays Pending (the next, of the same shape on the same state,
fails alike), then releases them for the next. Templates alike in all the cycle reads of them
(priority, request, shape) have their replicas placed alike, so each such kind is tried once,
as far as the largest headroom among its autoscalers asks. Elsewhere the job layer decides
the order (gangs, queue shares, enqueue), so each autoscaler with replicas to add costs one
judged cycle of its own; under a profile without Volcano's session the Pending pods queued after
the replicas are left out of it, as they cannot change where the replicas go.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import UTC, datetime

from advisor.core.diagnose import Cycle
from advisor.core.diagnosis import Cause, Diagnosis
from advisor.core.gang import judge
from advisor.core.hpa import Autoscaler, targets_of
from advisor.core.jobs import NO_JOBS
from advisor.core.mig_cycle import MigBook
from advisor.core.model import Cluster, Placement, Pod
from advisor.core.occupancy import build_state
from advisor.core.profiles import profile_of
from advisor.core.state import CardState, Shape
from advisor.core.times import parse_time
from advisor.defaults import DEFAULT_NODE_DETAIL
from advisor.errors import known

_NEVER = datetime.min.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class Blocked:
    """The first added replica the cycle leaves Pending."""

    cause: Cause
    message: str
    node_summary: str | None


@dataclass(frozen=True, slots=True)
class Reach:
    """One autoscaler's reachable replicas. `template` is None (and `placeable` None) where
    the target has no running pod."""

    autoscaler: Autoscaler
    template: str | None
    placeable: int | None
    blocked: Blocked | None

    @property
    def status(self) -> str:
        if self.template is None:
            return "unknown-template"
        return "blocked" if self.blocked is not None else "reachable"


def template_of(cluster: Cluster, target: str) -> Pod | None:
    """The target's newest running pod, or None."""
    return templates(cluster).get(target)


def templates(cluster: Cluster) -> dict[str, Pod]:
    """Each target's newest running pod, in one pass over the pods."""
    best: dict[str, tuple[datetime, int, Pod]] = {}
    for index, pod in enumerate(cluster.pods):
        if pod.placement is None or pod.owner is None:
            continue
        stamp = pod.created or pod.started  # its creation where known, else its start
        when = (parse_time(stamp) if stamp else None) or _NEVER
        for target in targets_of(pod.owner):
            held = best.get(target)
            if held is None or (when, index) >= held[:2]:
                best[target] = (when, index, pod)
    return {target: pod for target, (_, _, pod) in best.items()}


def replicas_of(template: Pod, autoscaler: Autoscaler) -> tuple[Pod, ...]:
    """The replicas the HPA would add, as new Pending pods shaped like `template`. Their
    names hold a space, which no Kubernetes name does, so they never meet a real pod's."""
    name = autoscaler.target.rsplit("/", 1)[1]
    return tuple(
        replace(
            template,
            name=f"{template.namespace}/{name} (replica {autoscaler.replicas + k})",
            placement=None,
            group=None,
            started=None,
            created=None,
            scheduled=None,
        )
        for k in range(1, autoscaler.headroom + 1)
    )


def reach(cluster: Cluster, autoscaler: Autoscaler) -> Reach:
    template = template_of(cluster, autoscaler.target)
    if template is None:
        return Reach(autoscaler, None, None, None)
    added = replicas_of(template, autoscaler)
    if not added:
        return Reach(autoscaler, template.name, 0, None)
    pods = cluster.pods
    if not profile_of(cluster.scheduler).session.volcano:
        # queued after the replicas: they cannot change where the replicas go
        floor = template.priority
        pods = tuple(p for p in pods if p.running or p.priority >= floor)
    trial = replace(cluster, pods=pods + added)
    names = {p.name for p in added}
    verdicts = [d for d in judge(trial, node_detail_limit=0).pods if d.pod.name in names]
    placed = sum(1 for d in verdicts if d.placement is not None)
    first = next((d for d in verdicts if d.placement is None), None)
    blocked = None
    if first is not None:
        blocked = Blocked(first.cause, first.message, first.node_summary)
    return Reach(autoscaler, template.name, placed, blocked)


def reachable(
    cluster: Cluster, diagnosis: Diagnosis | None = None, running: CardState | None = None
) -> tuple[Reach, ...]:
    """Every autoscaler's reach, in the order the cluster lists them. `diagnosis`: the
    cluster's, as `judge` gave it (judged here when not given); `running`: the running pods'
    cards (`build_state(cluster)`, left as it is), so that the caller builds them once."""
    if not cluster.autoscalers:
        return ()
    if not one_pod_cycle(cluster):
        return tuple(reach(cluster, a) for a in cluster.autoscalers)
    newest = templates(cluster)
    shaped = [(a, newest.get(a.target)) for a in cluster.autoscalers]
    floors = {t.priority for a, t in shaped if t is not None and a.headroom}
    if diagnosis is None and floors:
        diagnosis = judge(cluster, node_detail_limit=0)
    cycles = {}
    if diagnosis is not None and floors:
        base = build_state(cluster) if running is None else running.copy()
        states = _states_at(base, diagnosis, floors)
        cycles = {
            floor: Cycle(state, cluster.policy, 0, MigBook(cluster, state))
            for floor, state in states.items()
        }
    # (placed, blocked) of the longest run so far of each kind of template (`kind_of`)
    tried: dict[tuple[object, ...], tuple[int, Blocked | None]] = {}
    out = []
    for a, template in shaped:
        if template is None:
            out.append(Reach(a, None, None, None))
            continue
        key = kind_of(template)
        placed, blocked = tried.get(key, (0, None))
        if blocked is None and placed < a.headroom:
            placed, blocked = _placed(cycles[template.priority], replicas_of(template, a))
            tried[key] = (placed, blocked)
        if placed >= a.headroom:  # a longer run of the same kind placed all of these
            placed, blocked = a.headroom, None
        out.append(Reach(a, template.name, placed, blocked))
    return tuple(out)


def kind_of(template: Pod) -> tuple[object, ...]:
    """What `Cycle.visit` reads of a replica (its name aside) and the state it joins: two
    templates alike in it place their first k replicas alike, on the same cards."""
    return (template.priority, template.invalid, template.request, Shape.of_pod(template))


def _placed(cycle: Cycle, replicas: tuple[Pod, ...]) -> tuple[int, Blocked | None]:
    """The replicas placed one by one until the first the cycle leaves Pending (the next,
    of the same shape on the same state, fails alike); the state is left as it was."""
    placed: list[tuple[Pod, Placement]] = []
    blocked = None
    for pod in replicas:
        verdict = cycle.visit(pod)
        if verdict.placement is None:
            blocked = Blocked(verdict.cause, verdict.message, verdict.node_summary)
            break
        placed.append((pod, verdict.placement))
    for pod, placement in reversed(placed):  # the next autoscaler sees none of them
        cycle.release(pod, placement, cycle.state.positions(placement), Shape.of_pod(pod))
    return len(placed), blocked


def judged(
    cluster: Cluster, *, node_detail_limit: int | None = DEFAULT_NODE_DETAIL
) -> tuple[Diagnosis, tuple[Reach, ...]]:
    """The diagnosis every output gives (`judge`) and the autoscalers' reach, the running
    pods' cards built once for both."""
    if not cluster.autoscalers:
        return judge(cluster, node_detail_limit=node_detail_limit), ()
    running = build_state(cluster)
    diagnosis = judge(cluster, node_detail_limit=node_detail_limit, state=running.copy())
    return diagnosis, reachable(cluster, diagnosis, running)


def one_pod_cycle(cluster: Cluster) -> bool:
    """Whether `judge` is §3's cycle of one pod at a time in queue order: no PodGroups,
    queues or quotas, and no enqueue to admit jobs before it."""
    if cluster.jobs != NO_JOBS:
        return False
    session = profile_of(cluster.scheduler).session
    if not session.volcano:
        return True
    actions = cluster.scheduler.actions
    return "enqueue" not in (session.default_actions if actions is None else actions)


def _states_at(state: CardState, diagnosis: Diagnosis, floors: set[int]) -> dict[int, CardState]:
    """The card state once every Pending pod of priority ≥ each floor has had its turn, that
    is where that floor's replicas join the queue: the running pods (`state`, which this
    takes over), and the placements the diagnosis gave those pods (cards only add up, so
    their order does not matter)."""
    placed = sorted(
        (d for d in diagnosis.pods if d.placement is not None), key=lambda d: -d.pod.priority
    )
    states: dict[int, CardState] = {}
    i = 0
    for floor in sorted(floors, reverse=True):
        while i < len(placed) and placed[i].pod.priority >= floor:
            where = known(placed[i].placement, "a placed pod's placement")
            state.apply(state.positions(where), Shape.of_pod(placed[i].pod))
            i += 1
        states[floor] = state.copy()
    return states
