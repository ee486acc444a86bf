"""The Kubernetes source: the real kubernetes_asyncio client against the local API double."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from advisor.core.model import OtherPod, Request
from advisor.core.nodefilters import NodeConstraints
from advisor.core.scaling.down import scale_down
from advisor.errors import SourceError
from advisor.output.scaling import scale_down_json
from advisor.podspec.node import NodeScheduling
from advisor.scenario import scenario_from_data, scenario_to_data
from advisor.sources.assemble import assemble
from advisor.sources.kubernetes import eviction_blocker, read_kubernetes
from advisor.sources.values import KubeNode
from tests.advisor.sources.builders import card, cce_pod, node_info, vgpu
from tests.kubeapi import objects
from tests.kubeapi.objects import JsonObject
from tests.kubeapi.server import KubeApiDouble

# A moving pod's node constraints are read: none is known to be none.
NONE = NodeConstraints()

pytestmark = pytest.mark.realservices  # the Kubernetes API double

pytest_plugins = ["tests.kubeapi.fixtures"]


def populate(api: KubeApiDouble) -> None:
    api.add_pod(cce_pod("web/cce", gpus=2, memory_mib=8192, core=20, priority=5))
    api.add_pod(
        objects.pod(
            "vgpu",
            namespace="web",
            phase="Pending",
            containers=[
                objects.container(
                    "main",
                    limits={
                        "volcano.sh/vgpu-number": 2,
                        "volcano.sh/vgpu-memory": 3072,
                        "volcano.sh/vgpu-cores": 25,
                    },
                )
            ],
            owner=("ReplicaSet", "vgpu-abc"),
        )
    )
    api.add_pod(
        objects.pod(
            "hami",
            namespace="web",
            phase="Pending",
            containers=[
                objects.container("main", limits={"nvidia.com/gpu": 1, "nvidia.com/gpumem": 3000})
            ],
        )
    )
    broken = objects.pod("broken", namespace="web", phase="Pending")
    broken["spec"]["containers"] = [
        {"name": "main", "resources": {"limits": {"volcano.sh/gpu-mem.128Mi": "many"}}}
    ]
    api.add_pod(broken)
    api.add_pod(objects.pod("cpu-only", namespace="web", phase="Pending"))
    done = cce_pod("ml/finished", node="n1", cards=(0,))
    done["status"]["phase"] = "Succeeded"
    api.add_pod(done)
    api.add_pod(cce_pod("ml/running", node="n1", cards=(1,), priority=9))
    api.add_node(objects.node("n1", allocatable={"volcano.sh/gpu-mem.128Mi": 256}))
    api.add_node(objects.node("n2", unschedulable=True))
    api.add_node(objects.node("n3", ready=False, allocatable={"nvidia.com/gpu": 0}))


async def test_gpu_pods_of_every_dialect_and_nodes(kube_api: KubeApiDouble, tmp_path: Path) -> None:
    populate(kube_api)
    config = kube_api.write_kubeconfig(tmp_path / "kubeconfig")
    state = await read_kubernetes(str(config), page_size=2)
    pods = {p.key: p for p in state.pods}
    assert set(pods) == {"web/cce", "web/vgpu", "web/hami", "web/broken", "ml/running"}
    assert pods["web/cce"].request == Request(gpus=2, memory_mib=8192, core_percent=20)
    assert pods["web/cce"].priority == 5
    assert pods["web/vgpu"].request == Request(gpus=2, memory_mib=6144, core_percent=50)
    assert pods["web/vgpu"].owner == "ReplicaSet/web/vgpu-abc"
    assert pods["web/hami"].request == Request(gpus=1, memory_mib=3000)
    assert pods["web/broken"].request is None
    assert (pods["ml/running"].node, pods["ml/running"].phase) == ("n1", "Running")
    bare = "not replicated: no controller owns it, nothing would recreate it"
    # A cordon is the node's `unschedulable` (kube-scheduler's filter), not unavailable cards.
    cordoned = NodeScheduling(unschedulable=True)
    assert state.nodes == (
        KubeNode("n1", None, True, (OtherPod("ml/running", bare, constraints=NONE),)),
        KubeNode("n2", None, False, scheduling=cordoned),
        KubeNode("n3", "not Ready", False),
    )
    assert [dict(n.scheduling.labels) for n in state.nodes] == [
        {"kubernetes.io/hostname": name} for name in ("n1", "n2", "n3")
    ]
    assert state.source == f"kubernetes {kube_api.url}"
    # Paged (limit 2, then continue tokens) and finished pods filtered by the server.
    lists = [r for r in kube_api.requests if r.path == "/api/v1/pods"]
    assert len(lists) == 3
    assert all(r.query["limit"] == "2" for r in lists)
    assert "continue" in lists[1].query
    assert lists[0].query["fieldSelector"] == "status.phase!=Succeeded,status.phase!=Failed"


async def test_unreadable_pods_become_invalid_pending_pods(
    kube_api: KubeApiDouble, tmp_path: Path
) -> None:
    populate(kube_api)
    state = await read_kubernetes(str(kube_api.write_kubeconfig(tmp_path / "kubeconfig")))
    cluster = assemble([], state).cluster
    pending = {p.name: p for p in cluster.pending}
    assert set(pending) == {"web/cce", "web/vgpu", "web/hami", "web/broken"}
    broken = pending["web/broken"].invalid
    assert broken is not None
    assert "volcano.sh/gpu-mem.128Mi" in broken
    assert all(p.invalid is None for name, p in pending.items() if name != "web/broken")


async def test_api_error_is_one_clear_error(kube_api: KubeApiDouble, tmp_path: Path) -> None:
    config = kube_api.write_kubeconfig(tmp_path / "kubeconfig")
    kube_api.fail_next(1, status_code=500, target="list", resource="pods")
    with pytest.raises(SourceError) as caught:
        await read_kubernetes(str(config))
    message = str(caught.value)
    assert message.startswith(f"Kubernetes API {kube_api.url}: list ")
    assert "HTTP 500 InternalError injected fault" in message


async def test_forbidden(kube_api: KubeApiDouble, tmp_path: Path) -> None:
    config = kube_api.write_kubeconfig(tmp_path / "kubeconfig")
    kube_api.fail_next(2, status_code=403, target="list", resource="pods")
    with pytest.raises(SourceError, match=r"HTTP 403 Forbidden"):
        await read_kubernetes(str(config))


async def test_unreachable_api(kube_api: KubeApiDouble, tmp_path: Path) -> None:
    config = kube_api.write_kubeconfig(tmp_path / "kubeconfig")
    await kube_api.go_down()
    with pytest.raises(SourceError, match=rf"^Kubernetes API {kube_api.url}: cannot reach it: "):
        await read_kubernetes(str(config), timeout_s=5)


async def test_missing_kubeconfig(tmp_path: Path) -> None:
    path = tmp_path / "nope"
    with pytest.raises(SourceError, match=rf"^Kubernetes: kubeconfig {path}: "):
        await read_kubernetes(str(path))


def replicated(name: str, namespace: str = "web", node: str = "n1", **extra: Any) -> JsonObject:
    return objects.pod(name, namespace=namespace, node=node, owner=("ReplicaSet", name), **extra)


def populate_drain(api: KubeApiDouble) -> None:
    """n1 runs one GPU pod and every kind of other pod a drain meets; n2 one plain pod."""
    api.add_pod(cce_pod("ml/gpu", node="n1", cards=(0,), owner=("Job", "gpu")))
    api.add_pod(replicated("api"))
    api.add_pod(replicated("cache", volumes=[{"name": "scratch", "emptyDir": {}}]))
    api.add_pod(replicated("tmpfs", volumes=[{"name": "ram", "emptyDir": {"medium": "Memory"}}]))
    api.add_pod(
        replicated(
            "logs",
            volumes=[{"name": "host", "hostPath": {"path": "/var/log"}}],
            annotations={"cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes": "host"},
        )
    )
    api.add_pod(
        replicated(
            "pinned", annotations={"cluster-autoscaler.kubernetes.io/safe-to-evict": "false"}
        )
    )
    api.add_pod(replicated("keep", annotations={"xgpu.io/do-not-disrupt": "true"}))
    api.add_pod(
        objects.pod(
            "bare-safe",
            namespace="web",
            node="n1",
            annotations={"cluster-autoscaler.kubernetes.io/safe-to-evict": "true"},
        )
    )
    api.add_pod(replicated("coredns", namespace="kube-system"))
    api.add_pod(
        objects.pod("proxy", namespace="kube-system", node="n1", owner=("DaemonSet", "proxy"))
    )
    api.add_pod(
        objects.pod(
            "etcd-n1",
            namespace="kube-system",
            node="n1",
            owner=("Node", "n1"),
            annotations={"kubernetes.io/config.mirror": "abc"},
        )
    )
    api.add_pod(replicated("done", phase="Succeeded"))
    leaving = replicated("leaving")
    leaving["metadata"]["deletionTimestamp"] = "2024-05-01T10:00:00Z"
    api.add_pod(leaving)
    api.add_pod(objects.pod("waiting", namespace="web", phase="Pending"))  # bound nowhere
    api.add_pod(replicated("elsewhere", node="n2"))
    for name in ("n1", "n2"):
        api.add_node(objects.node(name, allocatable={"volcano.sh/gpu-mem.128Mi": 256}))


async def test_each_node_lists_the_pods_a_drain_would_move(
    kube_api: KubeApiDouble, tmp_path: Path
) -> None:
    populate_drain(kube_api)
    state = await read_kubernetes(str(kube_api.write_kubeconfig(tmp_path / "kubeconfig")))
    on_node = {n.name: {p.name: p.blocks for p in n.pods} for n in state.nodes}
    # No DaemonSet, mirror, finished or terminating pod; GPU pods too (the model sorts them).
    assert on_node == {
        "n1": {
            "kube-system/coredns": "kube-system pod",
            "ml/gpu": None,
            "web/api": None,
            "web/bare-safe": None,
            "web/cache": "local storage: volume scratch",
            "web/keep": "xgpu.io/do-not-disrupt: true",
            "web/logs": None,
            "web/pinned": "cluster-autoscaler.kubernetes.io/safe-to-evict: false",
            "web/tmpfs": None,
        },
        "n2": {"web/elsewhere": None},
    }
    assert [p.name for p in state.nodes[0].pods] == sorted(on_node["n1"])


async def test_blocked_nodes_stay_and_the_rest_list_their_other_pods(
    kube_api: KubeApiDouble, tmp_path: Path
) -> None:
    """From the API through assemble, a scenario round trip and scale-down: n1's GPU pod
    is modelled (not an other pod) and could move to n3, but n1's other pods keep it; n2 can
    go, moving web/elsewhere. n3 is unknown to Kubernetes: its other pods are not known."""
    populate_drain(kube_api)
    state = await read_kubernetes(str(kube_api.write_kubeconfig(tmp_path / "kubeconfig")))
    samples = [node_info("n1"), *card("n1", 0), *card("n1", 1), node_info("n2"), *card("n2", 0)]
    samples += [node_info("n3"), *card("n3", 0), *vgpu("n3", "ml/big", 0, 12288)]
    samples += vgpu("n1", "ml/gpu", 0, 4096)
    cluster = assemble(samples, state).cluster
    nodes = {n.name: n for n in cluster.nodes}
    assert nodes["n1"].other_pods is not None
    assert "ml/gpu" not in {p.name for p in nodes["n1"].other_pods}
    assert len(nodes["n1"].other_pods) == 8
    assert nodes["n2"].other_pods == (OtherPod("web/elsewhere", constraints=NONE),)
    assert nodes["n3"].other_pods is None
    again = scenario_from_data(scenario_to_data(cluster), "snapshot.yaml")
    assert again == cluster
    [step] = scale_down(again, threshold=0.5)  # n1 at 0.125, n2 at 0, n3 at 0.75
    assert scale_down_json(step) == {
        "node": "n2",
        "utilisation": 0.0,
        "moves": {},
        "also_moves": ["web/elsewhere"],
    }


def test_eviction_blocker_follows_the_autoscalers_order() -> None:
    owner = "ReplicaSet/web/a"
    safe = {"cluster-autoscaler.kubernetes.io/safe-to-evict": "true"}
    assert eviction_blocker("web", owner, {}, ()) is None
    # safe-to-evict "true" lifts the autoscaler's rules, not xgpu.io/do-not-disrupt
    assert eviction_blocker("kube-system", None, safe, ["scratch"]) is None
    keep = {**safe, "xgpu.io/do-not-disrupt": "True"}
    assert eviction_blocker("web", owner, keep, ()) == "xgpu.io/do-not-disrupt: true"
    bare = eviction_blocker("kube-system", None, {}, ())
    assert bare is not None
    assert bare.startswith("not replicated")
    assert eviction_blocker("kube-system", owner, {}, ["v"]) == "kube-system pod"
    some = {"cluster-autoscaler.kubernetes.io/safe-to-evict-local-volumes": "a, b"}
    assert eviction_blocker("web", owner, some, ["a", "b"]) is None
    assert eviction_blocker("web", owner, some, ["a", "c"]) == "local storage: volume c"
    # A budget allowing none blocks whatever else is said (the autoscaler's NotEnoughPdb);
    # a budget lifts the kube-system rule, as the autoscaler's "system" rule has it.
    none, one = {"xgpu.io/disruption-budget": "b:0"}, {"xgpu.io/disruption-budget": "b:1"}
    expected = "disruption budget b allows 0 disruptions"
    assert eviction_blocker("web", owner, {**safe, **none}, ()) == expected
    assert eviction_blocker("kube-system", owner, one, ()) is None
    assert eviction_blocker("kube-system", None, one, ()) == bare
    # A custom controller (the autoscaler's --skip-nodes-with-custom-controller-pods), also
    # lifted by safe-to-evict "true"; the built-in replicating controllers are trusted.
    custom = eviction_blocker("ml", "TFJob/ml/train", {}, ())
    assert custom == "owned by a custom controller (TFJob): not known to recreate it elsewhere"
    assert eviction_blocker("ml", "TFJob/ml/train", safe, ()) is None
    for kind in ("Deployment", "StatefulSet", "Job", "CronJob", "ReplicationController"):
        assert eviction_blocker("ml", f"{kind}/ml/x", {}, ()) is None


def populate_budgets(api: KubeApiDouble) -> None:
    """n1 runs a GPU pod and plain pods under budgets; n2 one pod of an n1 budget."""
    gpu = cce_pod("ml/gpu", node="n1", cards=(0,), owner=("Job", "gpu"))
    gpu["metadata"]["labels"]["app"] = "train"
    api.add_pod(gpu)
    api.add_pod(replicated("api", labels={"app": "api"}))
    api.add_pod(replicated("two-a", labels={"app": "two"}))
    api.add_pod(replicated("two-b", labels={"app": "two"}))
    api.add_pod(replicated("two-c", node="n2", labels={"app": "two"}))
    api.add_pod(replicated("both", labels={"app": "both", "tier": "x"}))
    api.add_pod(replicated("free", labels={"app": "free"}))
    api.add_pod(replicated("coredns", namespace="kube-system", labels={"app": "dns"}))
    api.add_pod(replicated("metrics", namespace="kube-system", labels={"app": "metrics"}))

    def only(app: str) -> JsonObject:
        return {"matchLabels": {"app": app}}

    api.add_pdb(objects.pdb("train", namespace="ml", selector={}, disruptions_allowed=1))
    api.add_pdb(objects.pdb("api", namespace="web", selector=only("api"), disruptions_allowed=0))
    api.add_pdb(objects.pdb("two", namespace="web", selector=only("two"), disruptions_allowed=1))
    api.add_pdb(objects.pdb("both", namespace="web", selector=only("both")))
    tier = {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}
    api.add_pdb(objects.pdb("tier", namespace="web", selector=tier))
    api.add_pdb(objects.pdb("nothing", namespace="web", selector=None, disruptions_allowed=0))
    api.add_pdb(objects.pdb("dns", namespace="kube-system", selector=only("dns")))
    for name in ("n1", "n2"):
        api.add_node(objects.node(name, allocatable={"volcano.sh/gpu-mem.128Mi": 256}))


async def test_budgets_are_recorded_on_pods_and_judged_like_the_autoscaler(
    kube_api: KubeApiDouble, tmp_path: Path
) -> None:
    populate_budgets(kube_api)
    state = await read_kubernetes(str(kube_api.write_kubeconfig(tmp_path / "kubeconfig")))
    assert state.warnings == ()
    [gpu] = state.pods
    assert gpu.annotations["xgpu.io/disruption-budget"] == "train:1"
    on_node = {n.name: {p.name: p.blocks for p in n.pods} for n in state.nodes}
    assert on_node == {
        "n1": {
            "kube-system/coredns": None,  # a kube-system pod with a budget may go
            "kube-system/metrics": "kube-system pod",
            "ml/gpu": None,
            "web/api": "disruption budget api allows 0 disruptions",
            "web/both": "disruption budgets both,tier all cover it: the Eviction API refuses",
            "web/free": None,
            "web/two-a": "disruption budget two allows 1, 2 pods on the node",
            "web/two-b": "disruption budget two allows 1, 2 pods on the node",
        },
        "n2": {"web/two-c": None},  # its budget's other pods are on n1
    }
    lists = [r for r in kube_api.requests if r.path == "/apis/policy/v1/poddisruptionbudgets"]
    assert [r.query.get("limit") for r in lists] == ["500"]


async def test_a_forbidden_budget_list_leaves_a_warning(
    kube_api: KubeApiDouble, tmp_path: Path
) -> None:
    populate_budgets(kube_api)
    config = kube_api.write_kubeconfig(tmp_path / "kubeconfig")
    kube_api.fail_next(1, status_code=403, target="list", resource="poddisruptionbudgets")
    state = await read_kubernetes(str(config))
    [warning] = state.warnings
    assert warning.startswith(f"Kubernetes API {kube_api.url}: list poddisruptionbudgets: ")
    assert "HTTP 403 Forbidden" in warning
    assert "plans and scale-down ignore disruption budgets" in warning
    [gpu] = state.pods
    assert "xgpu.io/disruption-budget" not in gpu.annotations
    blocks = {p.name: p.blocks for n in state.nodes for p in n.pods}
    assert blocks["web/api"] is None  # no budget known
    # The warning travels with the snapshot's other warnings.
    assert warning in assemble([], state).warnings


async def test_creation_and_scheduling_times_reach_the_snapshot(
    kube_api: KubeApiDouble, tmp_path: Path
) -> None:
    """metadata.creationTimestamp and the PodScheduled condition's time, as the API serves
    them (design §12): a running pod has both, a Pending one its creation only; a condition
    that is not True, or whose time is unreadable, gives none."""
    samples = [node_info("n1"), *card("n1", 0), *card("n1", 1)]
    samples += vgpu("n1", "ml/running", 1, 4096)
    placed = cce_pod(
        "ml/running",
        node="n1",
        cards=(1,),
        created="2024-05-01T11:00:00Z",
        scheduled="2024-05-01T11:00:03Z",
    )
    kube_api.add_pod(placed)
    kube_api.add_pod(cce_pod("web/waiting", created="2024-05-01T09:30:00Z"))
    odd = cce_pod("web/odd", created="2024-05-01T09:40:00Z")
    odd["status"]["conditions"] = [
        {"type": "PodScheduled", "status": "True", "lastTransitionTime": "soon"}
    ]
    kube_api.add_pod(odd)
    kube_api.add_node(objects.node("n1", allocatable={"volcano.sh/gpu-mem.128Mi": 256}))
    state = await read_kubernetes(str(kube_api.write_kubeconfig(tmp_path / "kubeconfig")))
    served = {p.key: p for p in state.pods}
    assert served["web/waiting"].created == "2024-05-01T09:30:00Z"  # the API's own field
    cluster = assemble(samples, state).cluster
    times = {p.name: (p.created, p.scheduled) for p in cluster.pods}
    assert times == {
        "ml/running": ("2024-05-01T11:00:00Z", "2024-05-01T11:00:03Z"),
        "web/waiting": ("2024-05-01T09:30:00Z", None),  # PodScheduled False: Unschedulable
        "web/odd": ("2024-05-01T09:40:00Z", None),
    }
    written = scenario_to_data(cluster)
    assert {p["name"]: p.get("scheduled") for p in written["pods"]}["ml/running"] == (
        "2024-05-01T11:00:03Z"
    )
    assert scenario_from_data(written, "snapshot.yaml") == cluster
