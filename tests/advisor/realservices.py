"""Real parts shared by the advisor's end-to-end tests: the demo's pods in the Kubernetes API
double, the whole demo live (exporters, Prometheus, the API double), and checks that what a
test started is gone again. (The Pushgateway is a fixture: `tests.advisor.pushgateway`.)"""

from __future__ import annotations

import os
import socket
import urllib.parse
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from advisor.core.hpa import Autoscaler
from advisor.core.mig_cycle import is_mig
from advisor.core.model import Cluster, Node, OtherPod, Pod
from advisor.core.nodefilters import bytes_text, cpu_text
from advisor.output import resources_json
from advisor.scenario import load_scenario
from advisor.sources.mignodes import MIG_STRATEGY_LABEL
from tests.advisor.sources.builders import cce_pod
from tests.kubeapi import objects
from tests.kubeapi.objects import JsonObject
from tests.kubeapi.threaded import KubeApiThread
from tests.realparts import (
    LIVE_DEMO,
    Exporter,
    Prometheus,
    scrape_config,
    simulated_exporters,
    start_prometheus,
)


def kube_pod(pod: Pod, order: int) -> JsonObject:
    """A demo pod as the API would show it: CCE dialect, except the odd size (HAMi, which
    asks per card in MiB; CCE cannot even write 1000 MiB)."""
    owner = None
    if pod.owner:
        kind, _, name = pod.owner.split("/")
        owner = (kind, name)
    # The demo's own times where it gives them; else one a second, in the file's order.
    created = pod.created or f"2024-05-01T10:{order // 60:02d}:{order % 60:02d}Z"
    if pod.name == "web/odd-size":
        namespace, name = pod.name.split("/")
        per_card = {"nvidia.com/gpu": 2, "nvidia.com/gpumem": 500}
        obj = objects.pod(
            name,
            namespace=namespace,
            phase="Pending",
            containers=[objects.container("main", limits=per_card)],
            owner=owner,
            uid="uid-odd",
            created=created,
        )
        return with_scheduling(obj, pod)
    placement = pod.placement
    if is_mig(pod):  # the device plugin's extended resource (mixed strategy), no vGPU
        namespace, name = pod.name.split("/")
        limits = {f"nvidia.com/mig-{pod.request.mig_profile}": pod.request.gpus}
        obj = objects.pod(
            name,
            namespace=namespace,
            node=placement.node if placement else None,
            phase="Running" if placement else "Pending",
            containers=[objects.container("main", limits=limits)],
            priority=pod.priority or None,
            owner=owner,
            created=created,
            scheduled=pod.scheduled,
        )
        return with_scheduling(obj, pod)
    obj = cce_pod(
        pod.name,
        gpus=pod.request.gpus,
        memory_mib=pod.request.memory_mib,
        core=pod.request.core_percent,
        node=placement.node if placement else None,
        cards=placement.cards if placement else (),
        priority=pod.priority or None,
        owner=owner,
        created=created,
        scheduled=pod.scheduled,
    )
    return with_scheduling(obj, pod)


def with_scheduling(obj: JsonObject, pod: Pod) -> JsonObject:
    """The pod's cpu/memory requests (on its one container), node selector and tolerations
    (the demo's; required node affinity is not used there)."""
    asked = resources_json(pod.resources)
    if asked:
        obj["spec"]["containers"][0]["resources"]["requests"] = asked
    if pod.constraints.node_selector:
        obj["spec"]["nodeSelector"] = dict(pod.constraints.node_selector)
    if pod.constraints.tolerations:
        obj["spec"]["tolerations"] = [
            {
                k: v
                for k, v in (
                    ("key", t.key),
                    ("operator", t.operator),
                    ("value", t.value),
                    ("effect", t.effect),
                )
                if v
            }
            for t in pod.constraints.tolerations
        ]
    return obj


def kube_node(node: Node) -> JsonObject:
    """A demo node: a GPU resource to advertise, its allocatable, labels, taints, cordon."""
    allocatable: dict[str, str | int] = {"volcano.sh/gpu-mem.128Mi": len(node.cards) * 128}
    a = node.allocatable
    if a.cpu_milli is not None:
        allocatable["cpu"] = cpu_text(a.cpu_milli)
    if a.memory_bytes is not None:
        allocatable["memory"] = bytes_text(a.memory_bytes)
    if a.pods is not None:
        allocatable["pods"] = a.pods
    taints = [
        {"key": t.key, "effect": t.effect, **({"value": t.value} if t.value else {})}
        for t in node.taints
    ]
    labels = dict(node.labels)
    if node.mig_strategy != "none":  # as the GPU operator's device plugin labels its node
        labels[MIG_STRATEGY_LABEL] = node.mig_strategy
    return objects.node(
        node.name,
        labels=labels,
        allocatable=allocatable,
        unschedulable=node.unschedulable,
        taints=taints or None,
    )


def kube_other_pod(node: str, other: OtherPod) -> JsonObject:
    """A CPU-only pod of a ReplicaSet, bound to the node (what a drain would move)."""
    namespace, name = other.name.split("/")
    requests = resources_json(other.resources)
    return objects.pod(
        name,
        namespace=namespace,
        node=node,
        containers=[objects.container(name, requests=requests or None)],
        uid=f"uid-{namespace}-{name}",
        owner=("ReplicaSet", name.rsplit("-", 1)[0]),
    )


@contextmanager
def kubernetes_holding(cluster: Cluster, home: Path) -> Iterator[tuple[KubeApiThread, Path]]:
    """The API double holding the cluster's pods (in creation order) and nodes; a kubeconfig."""
    with KubeApiThread() as kube:
        for i, pod in enumerate(cluster.pods):
            kube.call(kube.api.add_pod, kube_pod(pod, i))
        for node in cluster.nodes:
            kube.call(kube.api.add_node, kube_node(node))
            for other in node.other_pods or ():
                kube.call(kube.api.add_pod, kube_other_pod(node.name, other))
        for autoscaler in cluster.autoscalers:
            kube.call(kube.api.create, "horizontalpodautoscalers", kube_hpa(autoscaler))
        yield kube, kube.api.write_kubeconfig(home / "kubeconfig")


def kube_hpa(autoscaler: Autoscaler) -> JsonObject:
    """A scenario's autoscaler as the HorizontalPodAutoscaler the API would hold."""
    namespace, name = autoscaler.name.split("/")
    kind, _, target = autoscaler.target.split("/")
    metrics = [
        objects.pods_metric(m.pod_metric, f"{m.target_average:g}") for m in autoscaler.metrics
    ]
    return objects.hpa(
        name,
        namespace=namespace,
        target=(kind, target),
        min_replicas=autoscaler.min_replicas,
        max_replicas=autoscaler.max_replicas,
        current_replicas=autoscaler.replicas,
        metrics=metrics or None,
    )


@dataclass
class Live:
    """The demo live: an exporter per node, Prometheus scraping them, the API double."""

    exporters: list[Exporter]
    prometheus: Prometheus
    kube: KubeApiThread
    kubeconfig: Path
    home: Path

    @property
    def exporter_urls(self) -> str:
        return ",".join(e.url for e in self.exporters)


@contextmanager
def demo_live(home: Path) -> Iterator[Live]:
    """The demo scenario as a live cluster, once Prometheus holds every vGPU and card."""
    demo = load_scenario(LIVE_DEMO)
    with ExitStack() as stack:
        exporters = simulated_exporters(stack, LIVE_DEMO, (n.name for n in demo.nodes), home)
        prometheus = start_prometheus(home, scrape_config({e.url: e.node for e in exporters}))
        stack.callback(prometheus.stop)
        kube, kubeconfig = stack.enter_context(kubernetes_holding(demo, home))
        # a MIG pod holds instances, no vGPU: the exporter serves it no vGPU series
        vgpus = sum(len(p.placement.cards) for p in demo.running if p.placement and not is_mig(p))
        prometheus.wait_for("count(xgpu_memory_total)", lambda r: count_of(r) == vgpus)
        cards = sum(len(n.cards) for n in demo.nodes)
        prometheus.wait_for("count(xgpu_card_memory_total_bytes)", lambda r: count_of(r) == cards)
        yield Live(exporters, prometheus, kube, kubeconfig, home)


def count_of(result: list[dict[str, Any]]) -> int:
    """The value of a `count(...)` query's answer; 0 for none."""
    return int(float(result[0]["value"][1])) if result else 0


def listening(url: str) -> bool:
    """Whether something accepts TCP connections at the URL's host and port."""
    parts = urllib.parse.urlsplit(url)
    address = (parts.hostname or "", parts.port or 80)
    try:
        with socket.create_connection(address, timeout=1):
            return True
    except OSError:
        return False


def child_pids() -> set[int]:
    """Processes whose parent is this one (zombies too: a child nobody waited for)."""
    me, found = os.getpid(), set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue  # gone meanwhile
        # "pid (comm) state ppid ...": comm may hold spaces, so split after its ")"
        ppid = stat.rsplit(")", 1)[1].split()[1]
        if int(ppid) == me:
            found.add(int(entry.name))
    return found
