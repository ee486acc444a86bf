"""The job layer from the Kubernetes API (docs/design.md §10.1), read-only: Volcano's
PodGroups and Queues (scheduling.volcano.sh/v1beta1), the ResourceQuotas, and Volcano's
`volcano-scheduler-configmap` (actions and plugin options), plus what each pod says of its
job (group annotation, `volcano.sh/preemptable`, `spec.preemptionPolicy`).

A cluster without Volcano answers 404 for its CRDs: no groups, no queues, no warning. Any
other failure of these lists is a warning and the run goes on without them, as with the
disruption budgets: they refine the picture, they are not the picture.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

import yaml

from advisor.core.jobs import (
    DEFAULT_QUEUE,
    GROUP_ANNOTATION,
    GROUP_PHASES,
    PREEMPTABLE_KEY,
    PREEMPTION_POLICIES,
    QUEUE_STATES,
    ROOT_QUEUE,
    TASK_SPEC,
    VOLCANO_ACTIONS,
    Gang,
    Group,
    Jobs,
    Queue,
    Quota,
    ResourceList,
    frozen_resources,
)
from advisor.core.quantity import quantity_milli
from advisor.errors import SourceError
from advisor.sources.kubepages import NotServed, Paging, list_all
from advisor.sources.values import KubeJobs

VOLCANO_GROUP, VOLCANO_VERSION = "scheduling.volcano.sh", "v1beta1"
CONFIG_NAMESPACE = "volcano-system"
CONFIG_NAME = "volcano-scheduler-configmap"
CONFIG_KEY = "volcano-scheduler.conf"


@dataclass(frozen=True, slots=True)
class JobLists:
    """The API's answers, as read: `volcano` False when its CRDs are not served."""

    podgroups: list[Any]
    queues: list[Any]
    quotas: list[Any]
    configmaps: list[Any]
    volcano: bool


async def read_job_lists(client: Any, host: str, paging: Paging, warnings: list[str]) -> JobLists:
    """The lists, one after another (each is small next to the pods, which run beside)."""
    from kubernetes_asyncio.client import CoreV1Api, CustomObjectsApi

    custom = CustomObjectsApi(client)
    core = CoreV1Api(client)
    volcano = True
    lists: dict[str, list[Any]] = {}
    for plural in ("podgroups", "queues"):
        call = functools.partial(
            custom.list_cluster_custom_object,
            group=VOLCANO_GROUP,
            version=VOLCANO_VERSION,
            plural=plural,
        )
        try:
            lists[plural] = await list_all(call, host, plural, paging)
        except NotServed:
            volcano = False  # no CRD: the cluster runs no Volcano
            lists[plural] = []
        except SourceError as error:
            warnings.append(f"{error}; Volcano's {plural} are left out")
            lists[plural] = []
    quotas = await _optional(
        core.list_resource_quota_for_all_namespaces, host, "resourcequotas", paging, warnings
    )
    configmaps: list[Any] = []
    if volcano:
        configmaps = await _optional(
            functools.partial(core.list_namespaced_config_map, namespace=CONFIG_NAMESPACE),
            host,
            "configmaps",
            paging,
            warnings,
            field_selector=f"metadata.name={CONFIG_NAME}",
        )
    return JobLists(lists["podgroups"], lists["queues"], quotas, configmaps, volcano)


def kube_jobs(lists: JobLists, pod_items: Sequence[Any], warnings: list[str]) -> KubeJobs:
    """The job layer the lists describe; the pods give the PodGroups' priorities."""
    classes = priority_classes(pod_items)
    groups = [g for item in lists.podgroups if (g := podgroup(item, classes)) is not None]
    settings = scheduler_conf(lists.configmaps, warnings) if lists.volcano else {}
    queues = _parents([q for item in lists.queues if (q := queue(item)) is not None], warnings)
    listed = {q.name for q in queues} | {DEFAULT_QUEUE}
    unlisted = sorted({g.queue for g in groups} - listed)
    if unlisted:  # kept, so the snapshot reads back: a scenario's groups name listed queues
        warnings.append(
            f"Kubernetes: PodGroups name queues not listed: {', '.join(unlisted)}; "
            "taken with Volcano's defaults (weight 1, no capability, Open)"
        )
        queues.extend(Queue(name) for name in unlisted)
    return KubeJobs(
        Jobs(
            tuple(sorted(queues, key=lambda q: q.name)),
            tuple(sorted(groups, key=lambda g: g.name)),
            tuple(r for item in lists.quotas if (r := quota(item)) is not None),
        ),
        lists.volcano,
        MappingProxyType(settings),
    )


async def _optional(
    call: Any, host: str, what: str, paging: Paging, warnings: list[str], **selectors: str
) -> list[Any]:
    try:
        return await list_all(call, host, what, paging, **selectors)
    except SourceError as error:
        warnings.append(f"{error}; {what} are left out")
        return []


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _resources(value: object) -> ResourceList:
    """A resource list's readable entries (a quantity the API would refuse is left out)."""
    out = {}
    for name, quantity in _object(value).items():
        if isinstance(name, str) and name and isinstance(quantity, str | int):
            try:
                quantity_milli(str(quantity))
            except ValueError:
                continue
            out[name] = str(quantity)
    return frozen_resources(out)


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def priority_classes(pod_items: Sequence[Any]) -> dict[str, int]:
    """PriorityClass name -> value, as the API's admission wrote both on pods (a PodGroup's
    priority is its priorityClassName's value; reading PriorityClasses needs no pod)."""
    classes: dict[str, int] = {}
    for item in pod_items:
        spec = _object(_object(item).get("spec"))
        name, value = spec.get("priorityClassName"), spec.get("priority")
        if isinstance(name, str) and isinstance(value, int) and not isinstance(value, bool):
            classes.setdefault(name, value)
    return classes


def podgroup(item: object, classes: Mapping[str, int]) -> Group | None:
    metadata, spec = _object(_object(item).get("metadata")), _object(_object(item).get("spec"))
    namespace, name = metadata.get("namespace"), metadata.get("name")
    if not (isinstance(namespace, str) and namespace and isinstance(name, str) and name):
        return None
    queue_name = spec.get("queue")
    priority_class = spec.get("priorityClassName")
    phase = _object(_object(item).get("status")).get("phase")
    return Group(
        name=f"{namespace}/{name}",
        min_member=max(0, _int(spec.get("minMember"), 0)),  # omitempty: absent is 0
        queue=queue_name if isinstance(queue_name, str) and queue_name else DEFAULT_QUEUE,
        priority=classes.get(priority_class, 0) if isinstance(priority_class, str) else 0,
        min_resources=_resources(spec.get("minResources")),
        # none written yet is Pending to Volcano (api/job_info.go IsPending); a phase this
        # reader does not know is left to be inferred
        phase="Pending" if phase in (None, "") else phase if phase in GROUP_PHASES else None,
        min_task_member=MappingProxyType(
            {
                role: _int(n, 0)
                for role, n in _object(spec.get("minTaskMember")).items()
                if isinstance(role, str) and role and _int(n, -1) >= 0
            }
        ),
    )


def queue(item: object) -> Queue | None:
    metadata, spec = _object(_object(item).get("metadata")), _object(_object(item).get("spec"))
    status = _object(_object(item).get("status"))
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        return None
    state = status.get("state")
    reclaimable = spec.get("reclaimable")
    parent = spec.get("parent")
    return Queue(
        name=name,
        weight=max(1, _int(spec.get("weight"), 1)),  # the admission webhook's default is 1
        capability=_resources(spec.get("capability")),
        guarantee=_resources(_object(spec.get("guarantee")).get("resource")),
        deserved=_resources(spec.get("deserved")),
        reclaimable=reclaimable if isinstance(reclaimable, bool) else True,
        priority=_int(spec.get("priority"), 0),
        state=state if state in QUEUE_STATES else "Open",
        parent=parent if isinstance(parent, str) and parent and name != ROOT_QUEUE else None,
    )


def _parents(queues: list[Queue], warnings: list[str]) -> list[Queue]:
    """The queues with each `spec.parent` that is no queue, or closes a cycle, dropped (the
    queue taken as the root's child), with a warning: Volcano's admission refuses both, and
    its capacity plugin, meeting one, would refuse every task."""
    known = {q.name for q in queues} | {DEFAULT_QUEUE, ROOT_QUEUE}
    parent_of = {q.name: q.parent for q in queues if q.parent is not None}
    out = []
    for q in queues:
        seen, at = [q.name], q.parent
        while at is not None and at in known and at not in seen:
            seen.append(at)
            at = parent_of.get(at)
        if at is not None:
            why = "is not a queue" if at not in known else "closes a cycle"
            warnings.append(
                f"Kubernetes: Queue {q.name}: parent {q.parent} {why}; taken as the root's child"
            )
            parent_of.pop(q.name, None)
            q = replace(q, parent=None)
        out.append(q)
    return out


def quota(item: object) -> Quota | None:
    metadata, spec = _object(_object(item).get("metadata")), _object(_object(item).get("spec"))
    namespace = metadata.get("namespace")
    if not isinstance(namespace, str) or not namespace:
        return None
    return Quota(namespace, _resources(spec.get("hard")))


def scheduler_conf(configmaps: Sequence[Any], warnings: list[str]) -> dict[str, Any]:
    """The `Scheduler` fields Volcano's configuration sets: its actions (in order), the gang
    plugin's options, the overcommit plugin's factor and its queue plugin (capacity where
    the tiers name it and not proportion); {} without the configmap."""
    if not configmaps:
        return {}
    text = _object(_object(configmaps[0]).get("data")).get(CONFIG_KEY)
    where = f"configmap {CONFIG_NAMESPACE}/{CONFIG_NAME}"
    try:
        conf = _object(yaml.safe_load(text)) if isinstance(text, str) else {}
    except yaml.YAMLError:
        conf = {}
    if not conf:
        warnings.append(f"Kubernetes: {where}: no readable {CONFIG_KEY}; Volcano's defaults used")
        return {}
    settings: dict[str, Any] = {}
    actions = conf.get("actions")
    if isinstance(actions, str):
        names = tuple(a.strip() for a in actions.split(","))
        unknown = [a for a in names if a not in VOLCANO_ACTIONS]
        if unknown:  # Volcano refuses the whole configuration (UnmarshalSchedulerConf)
            warnings.append(f"Kubernetes: {where}: unknown action {unknown[0]!r}; actions left out")
        else:
            settings["actions"] = names
    plugins = {
        p["name"]: p
        for tier in conf.get("tiers") or []
        for p in _object(tier).get("plugins") or []
        if isinstance(p, dict) and isinstance(p.get("name"), str)
    }
    gang = plugins.get("gang")
    if gang is not None:
        options = [gang.get(k) for k in ("enablePreemptable", "enableJobStarving")]
        found = Gang(*(o if isinstance(o, bool) else None for o in options))
        if found != Gang():
            settings["gang"] = found
    overcommit = plugins.get("overcommit")
    if overcommit is not None:
        factor = _object(overcommit.get("arguments")).get("overcommit-factor")
        value = float(factor) if isinstance(factor, int | float) else math.nan
        # overcommit.go: a factor below 1 is replaced by the default
        if not isinstance(factor, bool) and 1.0 <= value <= 1000.0:
            settings["overcommit_factor"] = value
    warnings.extend(f"Kubernetes: {where}: {w}" for w in _action_arguments(conf))
    capacity = plugins.get("capacity")
    if capacity is not None and "proportion" in plugins:
        warnings.append(
            f"Kubernetes: {where}: the tiers name both proportion and capacity; "
            "queues are judged by proportion alone"
        )
    elif capacity is not None:
        settings["queue_plugin"] = "capacity"
        if capacity.get("enableHierarchy") is True:  # conf.PluginOption EnabledHierarchy
            settings["enable_hierarchy"] = True
            level = _object(capacity.get("arguments")).get("ancestorReclaimLevel")
            # Arguments.GetInt; a negative level falls back to 0 (parseArguments)
            if isinstance(level, int) and not isinstance(level, bool) and level > 0:
                settings["ancestor_reclaim_level"] = level
    return settings


# Action arguments (the configuration's `configurations`, framework.GetArgOfActionFromConf)
# whose non-default value the model does not follow: (action, key, default, what changes).
_ARGUMENTS = (
    (
        "preempt",
        "enableTopologyAwarePreemption",
        False,
        "topology-aware preemption (preempt.go topologyAwarePreempt) is not modelled; "
        "preemption verdicts follow the default victim search",
    ),
    (
        "allocate",
        "predicateErrorCacheEnable",
        True,
        "allocate's predicate error cache is off, but the model keeps it on: a node that "
        "failed a task of a role stays failed for the role's later tasks in that turn",
    ),
)


def _action_arguments(conf: Mapping[str, Any]) -> list[str]:
    """Warnings for the action arguments the model does not follow (Arguments.GetBool: a
    bool, or a string strconv.ParseBool reads; anything else leaves the default)."""
    arguments = {
        c["name"]: _object(c.get("arguments"))
        for c in conf.get("configurations") or []
        if isinstance(c, dict) and isinstance(c.get("name"), str)
    }
    out = []
    for action, key, default, what in _ARGUMENTS:
        value = arguments.get(action, {}).get(key)
        if isinstance(value, str):
            value = True if value in _TRUE else False if value in _FALSE else None
        if isinstance(value, bool) and value != default:
            out.append(f"{action} {key}: {str(value).lower()}: {what}")
    return out


def pod_job(item: object) -> tuple[str | None, bool, str, str | None]:
    """The pod's group (namespace/name, None: no annotation), whether Volcano may evict it,
    its preemption policy and its task role."""
    metadata, spec = _object(_object(item).get("metadata")), _object(_object(item).get("spec"))
    annotations, labels = _object(metadata.get("annotations")), _object(metadata.get("labels"))
    namespace = metadata.get("namespace")
    name = annotations.get(GROUP_ANNOTATION)
    group = f"{namespace}/{name}" if isinstance(name, str) and name and namespace else None
    policy = spec.get("preemptionPolicy")
    known = policy if isinstance(policy, str) and policy in PREEMPTION_POLICIES else None
    return (
        group,
        _preemptable(annotations, labels),
        known or "PreemptLowerPriority",
        _role(annotations, labels),
    )


def _role(annotations: Mapping[str, Any], labels: Mapping[str, Any]) -> str | None:
    """Volcano's getTaskRole (pkg/scheduler/api/job_info.go): the `volcano.sh/task-spec`
    annotation, else the label (the job controller writes both); empty: none."""
    for where in (annotations, labels):
        value = where.get(TASK_SPEC)
        if isinstance(value, str) and value:
            return value
    return None


# What Go's strconv.ParseBool reads as true (anything else is false or refused: false).
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


def _preemptable(annotations: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """Volcano's GetPodPreemptable (pkg/scheduler/api/pod_info.go): the annotation, else the
    label; absent: true; a value ParseBool refuses: false."""
    for source in (annotations, labels):
        if PREEMPTABLE_KEY in source:
            return source[PREEMPTABLE_KEY] in _TRUE
    return True
