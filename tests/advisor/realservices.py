"""Real parts shared by the advisor's end-to-end tests: the demo's pods in the Kubernetes API
double, and checks that what a test started is gone again. (The Pushgateway is a fixture:
`tests.advisor.pushgateway`.)"""

from __future__ import annotations

import os
import socket
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from advisor.core.model import Cluster, Pod
from tests.advisor.sources.builders import cce_pod
from tests.kubeapi import objects
from tests.kubeapi.objects import JsonObject
from tests.kubeapi.threaded import KubeApiThread


def kube_pod(pod: Pod, order: int) -> JsonObject:
    """A demo pod as the API would show it: CCE dialect, except the odd size (HAMi, which
    asks per card in MiB; CCE cannot even write 1000 MiB)."""
    owner = None
    if pod.owner:
        kind, _, name = pod.owner.split("/")
        owner = (kind, name)
    created = f"2024-05-01T10:{order // 60:02d}:{order % 60:02d}Z"
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
        )
        obj["metadata"]["creationTimestamp"] = created
        return obj
    placement = pod.placement
    return cce_pod(
        pod.name,
        gpus=pod.request.gpus,
        memory_mib=pod.request.memory_mib,
        core=pod.request.core_percent,
        node=placement.node if placement else None,
        cards=placement.cards if placement else (),
        priority=pod.priority or None,
        owner=owner,
        created=created,
    )


@contextmanager
def kubernetes_holding(cluster: Cluster, home: Path) -> Iterator[tuple[KubeApiThread, Path]]:
    """The API double holding the cluster's pods (in creation order) and nodes; a kubeconfig."""
    with KubeApiThread() as kube:
        for i, pod in enumerate(cluster.pods):
            kube.call(kube.api.add_pod, kube_pod(pod, i))
        for node in cluster.nodes:
            allocatable = {"volcano.sh/gpu-mem.128Mi": len(node.cards) * 128}
            kube.call(kube.api.add_node, objects.node(node.name, allocatable=allocatable))
        yield kube, kube.api.write_kubeconfig(home / "kubeconfig")


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
