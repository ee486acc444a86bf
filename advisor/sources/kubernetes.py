"""GPU pods and nodes from the Kubernetes API (kubernetes_asyncio, in-cluster or kubeconfig).

One paged list of the pods that are not finished and one of the nodes. The client runs with
`_preload_content=False`, so advisor.podspec reads the API's JSON exactly as sent (the one pod
parser, shared with the exporter): every dialect, with priority, owner, annotations and
creation time. A pod the parser cannot read becomes an `invalid` pod later, never an error.

The same list gives each node the pods a drain would move (GPU or not), read with podspec's
field readers and judged by the cluster-autoscaler's drain rules (`eviction_blocker`), so
scale-down advice can tell which nodes other workloads pin; and the pods that stay with it
(DaemonSet, mirror, terminating). Every one of them takes cpu, memory and a pod slot of its
node, as kube-scheduler counts (`advisor.podspec.scheduling`); each node brings its
allocatable, labels, taints and cordon (`advisor.podspec.node`). A value there that cannot be
read is left out, and said (`KubeNode.problems`, warnings for the nodes the model holds; a
Pending GPU pod's makes it `invalid` instead). HAMi's and Volcano vGPU's card registrations
are kept as written, for `advisor.sources.registered` to read under the cluster's profile.

A third list, of the PodDisruptionBudgets, gives each pod the budget that covers it
(`advisor.sources.budgets`, recorded in an annotation of ours before the pod is parsed).
It is optional: when it fails (RBAC without the policy group, say) the run goes on without
budgets and says so in a warning. So are the job layer's lists beside them (PodGroups, Queues,
ResourceQuotas, Volcano's configuration: advisor.sources.kubejobs) and the
HorizontalPodAutoscalers (advisor.sources.kubehpa).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any

from advisor.core.model import (
    DO_NOT_DISRUPT,
    PROTECTED_NAMESPACES,
    BudgetKey,
    OtherPod,
    budget_blocker,
    budget_key,
    budgets_overrun,
    disruption_budget,
)
from advisor.core.quantity import quantity_int
from advisor.core.scaling.down import SAFE_TO_EVICT
from advisor.core.times import parse_time
from advisor.errors import SourceError
from advisor.kubeconfig import KubeConfigError, load_configuration
from advisor.podspec import PodGpu, fields, parse_pod
from advisor.podspec.dialects import DIALECTS
from advisor.podspec.mig import mig_allocatable
from advisor.podspec.node import read_node_scheduling
from advisor.podspec.registration import registration_keys
from advisor.podspec.scheduling import PodScheduling, read_pod_scheduling
from advisor.sources.budgets import by_namespace, mark_pod, read_budgets
from advisor.sources.http import run_all, run_both
from advisor.sources.kubehpa import kube_autoscalers, read_autoscaler_list
from advisor.sources.kubejobs import kube_jobs, pod_job, read_job_lists
from advisor.sources.kubepages import MAX_PAGE_BYTES, PAGE_SIZE, Paging, list_all, optional_list
from advisor.sources.values import KubeNode, KubeState, PodFacts

NOT_FINISHED = "status.phase!=Succeeded,status.phase!=Failed"
GPU_RESOURCES = frozenset(key for d in DIALECTS for key in (d.count, d.memory) if key is not None)
FINISHED = frozenset({"Succeeded", "Failed"})
MIRROR = "kubernetes.io/config.mirror"  # a static pod's mirror: the kubelet owns it
SAFE_LOCAL_VOLUMES = "cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes"
# a drained pod, its (budget, disruptions allowed)
Budgeted = tuple[OtherPod, tuple[BudgetKey, int] | None]


@dataclass(frozen=True, slots=True)
class BoundPod:
    """A pod bound to a node and not finished: it takes cpu, memory and a slot there."""

    node: str
    pod: OtherPod  # `blocks`: why a drain could not evict it (None when it stays anyway)
    budget: tuple[BudgetKey, int] | None
    moves: bool  # False: stays with the node (DaemonSet, mirror, terminating)


async def read_kubernetes(
    kubeconfig: str | None = None,
    *,
    timeout_s: float = 30.0,
    page_size: int = PAGE_SIZE,
    max_page_bytes: int = MAX_PAGE_BYTES,
) -> KubeState:
    """The API that `advisor.kubeconfig` picks: `kubeconfig`, $KUBECONFIG, in-cluster
    credentials when running in a pod, ~/.kube/config."""
    from kubernetes_asyncio.client import ApiClient, CoreV1Api, PolicyV1Api

    configuration = await _configuration(kubeconfig)
    host = str(configuration.host)
    warnings: list[str] = []
    async with ApiClient(configuration=configuration) as client:
        api = CoreV1Api(client)
        paging = Paging(timeout_s, page_size, max_page_bytes)
        listed, job_lists = await run_both(
            run_all(
                [
                    list_all(
                        api.list_pod_for_all_namespaces,
                        host,
                        "pods",
                        paging,
                        field_selector=NOT_FINISHED,
                    ),
                    list_all(api.list_node, host, "nodes", paging),
                    optional_list(
                        PolicyV1Api(client).list_pod_disruption_budget_for_all_namespaces,
                        host,
                        "poddisruptionbudgets",
                        paging,
                        warnings,
                        "plans and scale-down ignore disruption budgets (the eviction commands "
                        "still honour them)",
                    ),
                    read_autoscaler_list(client, host, paging, warnings),
                ]
            ),
            read_job_lists(client, host, paging, warnings),
        )
    pod_items, node_items, budget_items, hpa_items = listed
    jobs = kube_jobs(job_lists, pod_items, warnings)
    budgets, problems = read_budgets(budget_items)
    warnings.extend(problems)
    in_namespace = by_namespace(budgets)
    pods: list[PodGpu] = []
    scheduling: dict[str, PodScheduling] = {}
    facts: dict[str, PodFacts] = {}
    on_node: dict[str, list[Budgeted]] = defaultdict(list)
    residents: dict[str, list[OtherPod]] = defaultdict(list)
    unreadable: dict[str, list[str]] = defaultdict(list)  # node -> its pods' problems
    for item in pod_items:
        try:
            mark_pod(item, in_namespace)
            pod, bound = parse_pod(item), bound_pod(item)
            read = read_pod_scheduling(item) if pod is not None or bound is not None else None
        except Exception as error:  # they promise not to raise; one odd pod must not stop a run
            warnings.append(f"Kubernetes: a pod the parser failed on was skipped: {error!r}")
            continue
        if pod is not None and read is not None:
            pods.append(pod)
            scheduling[pod.key] = read
            facts[pod.key] = pod_facts(item, jobs.volcano)
        if bound is None or read is None:
            continue
        if read.problems:
            where = f"pod {bound.pod.name} on node {bound.node}"
            unreadable[bound.node].append(f"Kubernetes: {where}: {'; '.join(read.problems)}")
        taking = replace(bound.pod, resources=read.resources)
        if bound.moves:
            taking = replace(taking, constraints=read.constraints)
            on_node[bound.node].append((taking, bound.budget))
        else:
            residents[bound.node].append(taking)
    autoscalers = kube_autoscalers(hpa_items, pod_items, (p.owner for p in pods), warnings)
    judged = {node: over_budget(drained) for node, drained in on_node.items()}
    nodes = [
        node
        for item in node_items
        if (node := _node(item, judged, residents, unreadable)) is not None
    ]
    return KubeState(
        f"kubernetes {host}",
        tuple(pods),
        tuple(nodes),
        tuple(warnings),
        scheduling,
        facts,
        jobs,
        autoscalers,
    )


def pod_facts(obj: Any, volcano: bool = False) -> PodFacts:
    """The pod's `status.startTime`, creation time and PodScheduled time where each reads as
    RFC 3339, its string labels, and what it says of its job; its group only where Volcano
    runs (`volcano`: its CRDs are served)."""
    item = _object(obj)
    metadata, status = _object(item.get("metadata")), _object(item.get("status"))
    labels = metadata.get("labels")
    group, preemptable, policy, role = pod_job(item)
    return PodFacts(
        _time(status.get("startTime")),
        MappingProxyType(
            {k: v for k, v in labels.items() if isinstance(k, str) and isinstance(v, str)}
            if isinstance(labels, dict)
            else {}
        ),
        group if volcano else None,
        preemptable,
        policy,
        created=_time(metadata.get("creationTimestamp")),
        scheduled=_scheduled(status.get("conditions")),
        role=role if volcano else None,
    )


def _time(value: object) -> str | None:
    return value if isinstance(value, str) and parse_time(value) is not None else None


def _scheduled(conditions: object) -> str | None:
    """When the PodScheduled condition turned True (the scheduler bound the pod)."""
    for condition in conditions if isinstance(conditions, list) else ():
        if (
            isinstance(condition, dict)
            and condition.get("type") == "PodScheduled"
            and condition.get("status") == "True"
        ):
            return _time(condition.get("lastTransitionTime"))
    return None


async def _configuration(kubeconfig: str | None) -> Any:
    try:
        return await load_configuration(kubeconfig)
    except KubeConfigError as error:
        raise SourceError(f"Kubernetes: {error}") from None


def _node(
    obj: Any,
    on_node: Mapping[str, list[OtherPod]],
    residents: Mapping[str, list[OtherPod]],
    unreadable: Mapping[str, list[str]],
) -> KubeNode | None:
    if not isinstance(obj, dict):
        return None
    metadata, status = _object(obj.get("metadata")), _object(obj.get("status"))
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        return None
    # A cordon is the node's `unschedulable`, which kube-scheduler's own filter judges.
    unavailable = None if _ready(status.get("conditions")) else "not Ready"
    allocatable = status.get("allocatable")
    unread: list[str] = []  # an allocatable MIG count that cannot be read
    mig = mig_allocatable(allocatable, unread) if isinstance(allocatable, dict) else {}
    advertises = isinstance(allocatable, dict) and any(
        _positive(allocatable[key]) for key in GPU_RESOURCES if key in allocatable
    )
    advertises = advertises or any(count > 0 for count in mig.values())
    scheduling = read_node_scheduling(obj)
    annotations = _object(metadata.get("annotations"))
    registrations = {
        key: value for key in registration_keys() if isinstance(value := annotations.get(key), str)
    }
    problems = list(unreadable.get(name, ()))
    if scheduling.problems or unread:
        said = "; ".join([*scheduling.problems, *unread])
        problems.insert(0, f"Kubernetes: node {name}: {said}")
    return KubeNode(
        name,
        unavailable,
        advertises,
        tuple(sorted(on_node.get(name, ()), key=lambda p: p.name)),
        tuple(sorted(residents.get(name, ()), key=lambda p: p.name)),
        scheduling,
        tuple(f"{problem}; left out" for problem in problems),
        MappingProxyType(registrations),
        MappingProxyType(mig),
    )


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _ready(conditions: object) -> bool:
    if not isinstance(conditions, list):
        return True  # no word either way: assume the usual
    for condition in conditions:
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return True


def _positive(value: object) -> bool:
    try:
        return quantity_int(value) > 0
    except ValueError:
        return False


def bound_pod(obj: object) -> BoundPod | None:
    """A pod bound to a node and not finished (so counted there by kube-scheduler); a drain
    moves it unless it is being deleted already, owned by a DaemonSet or a mirror pod.
    Unreadable fields count as absent (parse_pod reports them for GPU pods; nothing here
    depends on them otherwise). Its resources are the caller's to fill."""
    if not isinstance(obj, dict):
        return None
    ignored: list[str] = []
    metadata = fields.obj(obj.get("metadata"), "metadata", ignored)
    spec = fields.obj(obj.get("spec"), "spec", ignored)
    status = fields.obj(obj.get("status"), "status", ignored)
    namespace = fields.text(metadata.get("namespace"), "metadata.namespace", ignored)
    name = fields.text(metadata.get("name"), "metadata.name", ignored)
    node = fields.text(spec.get("nodeName"), "spec.nodeName", ignored)
    phase = fields.text(status.get("phase"), "status.phase", ignored)
    if not (namespace and name and node) or phase in FINISHED:
        return None
    key = f"{namespace}/{name}"
    annotations = fields.string_map(metadata.get("annotations"), "metadata.annotations", ignored)
    owner = fields.owner(metadata.get("ownerReferences"), namespace, ignored)
    stays = MIRROR in annotations or (owner or "").startswith("DaemonSet/")
    deleting = bool(metadata.get("deletionTimestamp"))
    if stays or deleting:
        return BoundPod(node, OtherPod(key, terminating=deleting), None, moves=False)
    volumes = _local_volumes(fields.array(spec.get("volumes"), "spec.volumes", ignored))
    blocks = eviction_blocker(namespace, owner, annotations, volumes)
    return BoundPod(node, OtherPod(key, blocks), budget_key(namespace, annotations), moves=True)


# Controllers the autoscaler trusts to recreate an evicted pod elsewhere.
REPLICATING_KINDS = frozenset(
    {"ReplicaSet", "Deployment", "StatefulSet", "Job", "CronJob", "ReplicationController"}
)


def eviction_blocker(
    namespace: str, owner: str | None, annotations: Mapping[str, str], local_volumes: Sequence[str]
) -> str | None:
    """Why the cluster-autoscaler would not evict this pod to remove its node, or None.

    xgpu.io/do-not-disrupt "true" first, then a disruption budget that allows none (the
    autoscaler's NotEnoughPdb): nothing lifts either. Then its drain rules in its order (not
    replicated or owned by a custom controller, kube-system without a budget, safe-to-evict
    "false", local storage), all lifted by safe-to-evict "true". A budget that allows fewer
    evictions than the node has pods under it is judged per node (`over_budget`).
    """
    if annotations.get(DO_NOT_DISRUPT, "").strip().lower() == "true":
        return f"{DO_NOT_DISRUPT}: true"
    budget = disruption_budget(annotations)
    refused = budget_blocker(annotations)
    if refused is not None:
        return refused
    safe = annotations.get(SAFE_TO_EVICT, "").lower()
    if safe == "true":
        return None
    if owner is None:
        return "not replicated: no controller owns it, nothing would recreate it"
    kind = owner.split("/", 1)[0]
    if kind not in REPLICATING_KINDS:
        # The autoscaler's default (--skip-nodes-with-custom-controller-pods): it cannot
        # tell whether an unknown controller would recreate the pod elsewhere.
        return f"owned by a custom controller ({kind}): not known to recreate it elsewhere"
    if namespace in PROTECTED_NAMESPACES and budget is None:
        return f"{namespace} pod"
    if safe == "false":
        return f"{SAFE_TO_EVICT}: false"
    allowed = {v.strip() for v in annotations.get(SAFE_LOCAL_VOLUMES, "").split(",")}
    local = [v for v in local_volumes if v not in allowed]
    if local:
        return f"local storage: volume {', '.join(local)}"
    return None


def over_budget(pods: Sequence[Budgeted]) -> list[OtherPod]:
    """The node's pods; one not blocked otherwise but under a budget that allows fewer
    evictions than the node has pods under it is blocked (the drain would stop there: the
    autoscaler counts a node's pods per budget)."""
    over = budgets_overrun(budget for _, budget in pods)
    marked = []
    for pod, budget in pods:
        if budget is not None and pod.blocks is None and budget[0] in over:
            (_, name), allows = budget
            why = f"disruption budget {name} allows {allows}, {over[budget[0]]} pods on the node"
            pod = replace(pod, blocks=why)
        marked.append(pod)
    return marked


def _local_volumes(volumes: list[Any]) -> list[str]:
    """Names of the volumes whose data dies with the node: emptyDir not in memory, hostPath."""
    local = []
    for volume in volumes:
        if not isinstance(volume, dict):
            continue
        empty = volume.get("emptyDir")
        on_disk = isinstance(empty, dict) and empty.get("medium") != "Memory"
        if on_disk or isinstance(volume.get("hostPath"), dict):
            local.append(str(volume.get("name") or "?"))
    return local
