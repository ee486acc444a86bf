"""The scenario keys of the job layer (docs/design.md §10.1), read strictly and written back
in the same form: the session settings under `scheduler:` (actions, gang, overcommit_factor,
queue_plugin, enable_hierarchy, ancestor_reclaim_level, preemption), the top-level
`queues`, `groups` and `quotas`,
and each pod's `group`, `preemptable` and `preemption_policy`.

```yaml
scheduler: {profile: cce, actions: [enqueue, allocate, backfill], gang: {preemptable: false},
            queue_plugin: capacity, enable_hierarchy: true}
queues: [{name: ml}, {name: training, parent: ml, weight: 3, capability: {cpu: "64"},
          deserved: {cpu: "32"}, reclaimable: true, state: Open}]
groups: [{name: ml/job-a, min_member: 4, queue: training, priority: 100, phase: Inqueue}]
quotas: [{namespace: ml, hard: {limits.nvidia.com/gpumem: "40000"}}]
pods: [{name: ml/job-a-0, group: ml/job-a, preemptable: false, preemption_policy: Never}]
```

Absent keys keep §9's meaning, and nothing is written for them, so older scenarios are
written back byte for byte.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from advisor.core.jobs import (
    DEFAULT_QUEUE,
    GROUP_PHASES,
    PREEMPTION_POLICIES,
    QUEUE_PLUGINS,
    QUEUE_STATES,
    ROOT_QUEUE,
    VOLCANO_ACTIONS,
    VOLCANO_SETTINGS,
    Gang,
    Group,
    Jobs,
    Queue,
    Quota,
    ResourceList,
    frozen_resources,
)
from advisor.core.model import Pod
from advisor.core.quantity import quantity_milli
from advisor.scenario.strict import Reader, kind

JOB_KEYS = ("queues", "groups", "quotas")  # top-level
POD_JOB_KEYS = {"group", "preemptable", "preemption_policy", "role"}
# under `scheduler:`: Volcano's session's settings, and kube-scheduler's preemption (hami)
SESSION_KEYS = (*VOLCANO_SETTINGS, "preemption")
MAX_OVERCOMMIT = 1000.0
MIN_PRIORITY = -(2**31)


# -- the session's settings under `scheduler:` -------------------------------------------


def read_session_setting(r: Reader, key: str, raw: object) -> Any:
    """The value of one of `SESSION_KEYS` as `Scheduler` holds it."""
    where = f"scheduler.{key}"
    if key == "actions":
        names = r.sequence(raw, where)
        for i, name in enumerate(names):
            if name not in VOLCANO_ACTIONS:
                known = ", ".join(VOLCANO_ACTIONS)
                raise r.fail(f"{where}[{i}]", f"expected one of {known}, got {kind(name)}")
        if not names:
            raise r.fail(where, "Volcano needs at least one action")
        return tuple(names)
    if key == "gang":
        m = r.mapping(raw, where, {"preemptable", "job_starving"}, set())
        return Gang(
            *(
                r.boolean(m[k], f"{where}.{k}") if k in m else None
                for k in ("preemptable", "job_starving")
            )
        )
    if key == "overcommit_factor":
        if isinstance(raw, bool) or not isinstance(raw, int | float):
            raise r.fail(where, f"expected a number, got {kind(raw)}")
        factor = float(raw)
        if not math.isfinite(factor) or not 1.0 <= factor <= MAX_OVERCOMMIT:
            # overcommit.go replaces a factor below 1 with its default, silently
            raise r.fail(where, f"must be 1..{MAX_OVERCOMMIT:g} (Volcano ignores below 1)")
        return factor
    if key == "queue_plugin":
        if raw not in QUEUE_PLUGINS:
            raise r.fail(where, f"expected one of {', '.join(QUEUE_PLUGINS)}, got {kind(raw)}")
        return raw
    if key in ("preemption", "enable_hierarchy"):
        return r.boolean(raw, where)
    if key == "ancestor_reclaim_level":
        return r.integer(raw, where, 0)
    raise r.fail(where, "not a session setting")


def session_setting_data(key: str, value: Any) -> Any:
    """The scenario form of a `Scheduler` session field that is not at its default."""
    if key == "actions":
        return list(value)
    if key == "gang":
        return {
            k: v
            for k, v in (("preemptable", value.preemptable), ("job_starving", value.job_starving))
            if v is not None
        }
    return value


# -- queues, groups, quotas --------------------------------------------------------------


def read_jobs(r: Reader, top: Mapping[str, Any]) -> Jobs:
    """The top-level `queues`, `groups` and `quotas` (each optional)."""
    queues = tuple(
        _queue(r, raw, f"queues[{i}]")
        for i, raw in enumerate(r.sequence(top.get("queues", []), "queues"))
    )
    _unique(r, [(f"queues[{i}].name", q.name) for i, q in enumerate(queues)], "queue name")
    groups = tuple(
        _group(r, raw, f"groups[{i}]")
        for i, raw in enumerate(r.sequence(top.get("groups", []), "groups"))
    )
    _unique(r, [(f"groups[{i}].name", g.name) for i, g in enumerate(groups)], "group name")
    _parents(r, queues)
    known = {q.name for q in queues} | {DEFAULT_QUEUE}
    for i, g in enumerate(groups):
        if g.queue not in known:
            raise r.fail(f"groups[{i}].queue", f"unknown queue {g.queue!r} (not under queues)")
    quotas = tuple(
        _quota(r, raw, f"quotas[{i}]")
        for i, raw in enumerate(r.sequence(top.get("quotas", []), "quotas"))
    )
    return Jobs(queues, groups, quotas)


def _parents(r: Reader, queues: Sequence[Queue]) -> None:
    """Each `parent` a queue (listed, or `default` or `root`, which Volcano creates), and no
    queue its own ancestor (capacity.go updateAncestors refuses both, and with them the whole
    hierarchy)."""
    parent_of = {q.name: q.parent for q in queues if q.parent is not None}
    known = {q.name for q in queues} | {DEFAULT_QUEUE, ROOT_QUEUE}
    for i, q in enumerate(queues):
        where = f"queues[{i}].parent"
        if q.parent is None:
            continue
        if q.name == ROOT_QUEUE:
            raise r.fail(where, f"the {ROOT_QUEUE} queue has no parent")
        if q.parent not in known:
            raise r.fail(where, f"unknown queue {q.parent!r} (not under queues)")
        seen = [q.name]
        at: str | None = q.parent
        while at is not None:
            if at in seen:
                raise r.fail(where, f"queues form a cycle: {' -> '.join([*seen, at])}")
            seen.append(at)
            at = parent_of.get(at)


def _queue(r: Reader, raw: object, where: str) -> Queue:
    keys = {"name", "weight", "capability", "guarantee", "deserved", "reclaimable", "priority"}
    keys |= {"state", "parent"}
    m = r.mapping(raw, where, keys, {"name"})
    state = m.get("state", "Open")
    if state not in QUEUE_STATES:
        raise r.fail(
            f"{where}.state", f"expected one of {', '.join(QUEUE_STATES)}, got {kind(state)}"
        )
    return Queue(
        name=r.string(m["name"], f"{where}.name"),
        weight=r.integer(m.get("weight", 1), f"{where}.weight", 1),
        capability=_resources(r, m, "capability", where),
        guarantee=_resources(r, m, "guarantee", where),
        deserved=_resources(r, m, "deserved", where),
        reclaimable=r.boolean(m.get("reclaimable", True), f"{where}.reclaimable"),
        priority=r.integer(m.get("priority", 0), f"{where}.priority", MIN_PRIORITY),
        state=state,
        parent=r.string(m["parent"], f"{where}.parent") if "parent" in m else None,
    )


def _group(r: Reader, raw: object, where: str) -> Group:
    keys = {"name", "min_member", "queue", "priority", "min_resources", "phase"}
    keys.add("min_task_member")
    m = r.mapping(raw, where, keys, {"name"})
    name = r.string(m["name"], f"{where}.name")
    if name.count("/") != 1 or not all(name.split("/")):
        raise r.fail(f"{where}.name", f"expected namespace/name, got {name!r}")
    phase = m.get("phase")
    if phase is not None and phase not in GROUP_PHASES:
        raise r.fail(
            f"{where}.phase", f"expected one of {', '.join(GROUP_PHASES)}, got {kind(phase)}"
        )
    return Group(
        name=name,
        min_member=r.integer(m.get("min_member", 1), f"{where}.min_member", 0),
        queue=r.string(m.get("queue", DEFAULT_QUEUE), f"{where}.queue"),
        priority=r.integer(m.get("priority", 0), f"{where}.priority", MIN_PRIORITY),
        min_resources=_resources(r, m, "min_resources", where),
        phase=phase,
        min_task_member=_roles(r, m.get("min_task_member", {}), f"{where}.min_task_member"),
    )


def _roles(r: Reader, raw: object, where: str) -> Mapping[str, int]:
    """spec.minTaskMember: task role (its pods' `volcano.sh/task-spec`) -> its minimum."""
    if not isinstance(raw, Mapping):
        raise r.fail(where, f"expected a mapping, got {kind(raw)}")
    out: dict[str, int] = {}
    for role, n in raw.items():
        if not isinstance(role, str) or not role:
            raise r.fail(where, f"task roles are strings, got {kind(role)}")
        out[role] = r.integer(n, f"{where}.{role}", 0)
    return MappingProxyType(out)


def _quota(r: Reader, raw: object, where: str) -> Quota:
    m = r.mapping(raw, where, {"namespace", "hard"}, {"namespace", "hard"})
    return Quota(r.string(m["namespace"], f"{where}.namespace"), _resources(r, m, "hard", where))


def _resources(r: Reader, m: Mapping[str, Any], key: str, where: str) -> ResourceList:
    """A resource list: names to Kubernetes quantities ("64", "1Gi"; an integer reads as
    its digits)."""
    at = f"{where}.{key}"
    raw = m.get(key, {})
    if not isinstance(raw, Mapping):
        raise r.fail(at, f"expected a mapping, got {kind(raw)}")
    out: dict[str, str] = {}
    for name, value in raw.items():
        if not isinstance(name, str) or not name:
            raise r.fail(at, f"resource names are strings, got {kind(name)}")
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise r.fail(f"{at}.{name}", f"expected a quantity, got {kind(value)}")
        text = str(value)
        try:
            quantity_milli(text)
        except ValueError as error:
            raise r.fail(f"{at}.{name}", str(error)) from None
        out[name] = text
    return frozen_resources(out)


def _unique(r: Reader, items: Sequence[tuple[str, object]], what: str) -> None:
    seen: set[object] = set()
    for where, value in items:
        if value in seen:
            raise r.fail(where, f"duplicate {what} {value!r}")
        seen.add(value)


def jobs_data(jobs: Jobs) -> dict[str, Any]:
    """The top-level keys of `jobs`, each only when it lists something."""
    data: dict[str, Any] = {}
    if jobs.queues:
        data["queues"] = [_queue_data(q) for q in jobs.queues]
    if jobs.groups:
        data["groups"] = [_group_data(g) for g in jobs.groups]
    if jobs.quotas:
        data["quotas"] = [{"namespace": q.namespace, "hard": dict(q.hard)} for q in jobs.quotas]
    return data


def _queue_data(q: Queue) -> dict[str, Any]:
    data: dict[str, Any] = {"name": q.name, "weight": q.weight}
    if q.capability:
        data["capability"] = dict(q.capability)
    if q.guarantee:
        data["guarantee"] = dict(q.guarantee)
    if q.deserved:
        data["deserved"] = dict(q.deserved)
    if not q.reclaimable:
        data["reclaimable"] = False
    if q.priority:
        data["priority"] = q.priority
    if q.state != "Open":
        data["state"] = q.state
    if q.parent is not None:
        data["parent"] = q.parent
    return data


def _group_data(g: Group) -> dict[str, Any]:
    data: dict[str, Any] = {"name": g.name, "min_member": g.min_member}
    if g.queue != DEFAULT_QUEUE:
        data["queue"] = g.queue
    if g.priority:
        data["priority"] = g.priority
    if g.min_resources:
        data["min_resources"] = dict(g.min_resources)
    if g.phase is not None:
        data["phase"] = g.phase
    if g.min_task_member:
        data["min_task_member"] = dict(g.min_task_member)
    return data


# -- a pod's own keys -----------------------------------------------------------------


def read_pod_jobs(r: Reader, m: Mapping[str, Any], where: str) -> dict[str, Any]:
    """A pod's `group`, `role`, `preemptable` and `preemption_policy`, as keyword arguments
    of `Pod`."""
    fields: dict[str, Any] = {}
    if "group" in m:
        fields["group"] = r.string(m["group"], f"{where}.group")
    if "role" in m:
        fields["role"] = r.string(m["role"], f"{where}.role")
    if "preemptable" in m:
        fields["preemptable"] = r.boolean(m["preemptable"], f"{where}.preemptable")
    if "preemption_policy" in m:
        policy = m["preemption_policy"]
        if policy not in PREEMPTION_POLICIES:
            known = ", ".join(PREEMPTION_POLICIES)
            raise r.fail(
                f"{where}.preemption_policy", f"expected one of {known}, got {kind(policy)}"
            )
        fields["preemption_policy"] = policy
    return fields


def check_pod_groups(r: Reader, pods: Sequence[Pod], jobs: Jobs) -> None:
    """A pod's group is a listed PodGroup of its own namespace (Volcano looks the group up in
    the pod's namespace: pkg/scheduler/api/job_info.go, getJobID)."""
    groups = {g.name for g in jobs.groups}
    for i, pod in enumerate(pods):
        if pod.group is None:
            continue
        if pod.group not in groups:
            raise r.fail(f"pods[{i}].group", f"unknown group {pod.group!r} (not under groups)")
        if pod.group.split("/", 1)[0] != pod.namespace:
            raise r.fail(f"pods[{i}].group", f"group {pod.group!r} is not in the pod's namespace")


def pod_jobs_data(pod: Pod) -> dict[str, Any]:
    """A pod's job keys that are not at their defaults."""
    data: dict[str, Any] = {}
    if pod.group is not None:
        data["group"] = pod.group
    if pod.role is not None:
        data["role"] = pod.role
    if not pod.preemptable:
        data["preemptable"] = False
    if pod.preemption_policy != "PreemptLowerPriority":
        data["preemption_policy"] = pod.preemption_policy
    return data
