"""The rest of the node from the Kubernetes API (docs/design.md §9.1): the real
kubernetes_asyncio client against the local API double, through assemble, the core's node
state, a diagnosis, and `xgpu-advisor snapshot` written and loaded again.

The cluster, with every figure worked by hand below:
- n1: allocatable 16 cpu, 64Gi, 110 pods; pool=a100, zone=z1; tainted nvidia.com/gpu.
  Runs ml/train (GPU, on card 0), web/api and web/odd (moved by a drain), and three pods that
  stay with it: a DaemonSet pod, a mirror pod and a terminating pod.
- n2: cordoned; zone=z2.
- n3: allocatable cpu "12x" and a taint without effect (unreadable: warnings, left out).
- cpu-1: a CPU node no exporter reports, with garbage of its own: the model never holds it,
  so nothing is said about it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from advisor.cli import main
from advisor.core.diagnose import diagnose
from advisor.core.model import Cluster, OtherPod
from advisor.core.nodefilters import (
    Allocatable,
    NodeConstraints,
    Requirement,
    Resources,
    Taint,
    Term,
    Toleration,
)
from advisor.core.occupancy import build_state
from advisor.podspec.scheduling import REQUIRED_AFFINITY
from advisor.scenario import ScenarioError, load_scenario, scenario_from_data, scenario_to_data
from advisor.sources.assemble import assemble
from advisor.sources.kubernetes import read_kubernetes
from advisor.sources.values import Sample
from tests.advisor.sources.builders import card, cce_pod, node_info, vgpu
from tests.advisor.sources.pages_server import serving_exporters
from tests.kubeapi import objects
from tests.kubeapi.objects import JsonObject
from tests.kubeapi.server import KubeApiDouble
from tests.kubeapi.store import KubeStore
from tests.kubeapi.threaded import KubeApiThread

pytestmark = pytest.mark.realservices  # the Kubernetes API double

pytest_plugins = ["tests.kubeapi.fixtures"]

GI, MI = 2**30, 2**20
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
TOLERATE_GPU = {"key": "nvidia.com/gpu", "operator": "Exists"}
GPU_ALLOCATABLE: dict[str, str | int] = {"volcano.sh/gpu-mem.128Mi": 256}
AFFINITY = {
    "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1", "z2"]}]},
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]},
            ]
        }
    }
}


def requests(**amounts: str) -> JsonObject:
    return objects.container("main", requests=amounts)


def on_n1(name: str, namespace: str, *containers: JsonObject, **extra: Any) -> JsonObject:
    return objects.pod(name, namespace=namespace, node="n1", containers=list(containers), **extra)


def populate(api: KubeStore) -> None:
    n1: dict[str, str | int] = {"cpu": "16", "memory": "64Gi", "pods": "110", **GPU_ALLOCATABLE}
    labels = {"pool": "a100", "zone": "z1"}
    api.add_node(objects.node("n1", allocatable=n1, labels=labels, taints=[GPU_TAINT]))
    api.add_node(objects.node("n2", allocatable=GPU_ALLOCATABLE, labels={"zone": "z2"}))
    api.modify_node("n2", lambda n: n["spec"].update(unschedulable=True))
    broken: dict[str, str | int] = {"cpu": "12x", "memory": "16Gi", **GPU_ALLOCATABLE}
    api.add_node(
        objects.node("n3", allocatable=broken, labels={"zone": "z9"}, taints=[{"key": "odd"}])
    )

    # ml/train: containers 4 cpu 16Gi, init 6 cpu 1Gi, overhead 250m 128Mi
    #   -> cpu max(4, 6) + 0.25 = 6250m, memory max(16Gi, 1Gi) + 128Mi
    train = cce_pod("ml/train", memory_mib=4096, node="n1", cards=(0,), owner=("Job", "train"))
    train["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "4", "memory": "16Gi"}
    train["spec"]["initContainers"] = [requests(cpu="6", memory="1Gi")]
    train["spec"]["overhead"] = {"cpu": "250m", "memory": "128Mi"}
    train["spec"]["nodeSelector"] = {"pool": "a100"}
    train["spec"]["tolerations"] = [{**TOLERATE_GPU, "effect": "NoSchedule"}]
    api.add_pod(train)
    # ml/wait: Pending; limits only, so it requests 8 cpu and 8Gi
    wait = cce_pod("ml/wait", memory_mib=4096, created="2024-05-01T10:00:01Z")
    wait["spec"]["containers"][0]["resources"]["limits"].update(cpu="8", memory="8Gi")
    wait["spec"].update(affinity=AFFINITY, tolerations=[TOLERATE_GPU])
    api.add_pod(wait)
    bad = cce_pod("ml/bad", created="2024-05-01T10:00:02Z")
    bad["spec"]["tolerations"] = [{"key": "nvidia.com/gpu", "effect": "Sometimes"}]
    api.add_pod(bad)

    replicated = {"owner": ("ReplicaSet", "web-1")}
    web_api = on_n1("api", "web", requests(cpu="1", memory="2Gi"), **replicated)
    web_api["spec"].update(nodeSelector={"zone": "z1"}, tolerations=[TOLERATE_GPU])
    api.add_pod(web_api)
    api.add_pod(on_n1("odd", "web", requests(cpu="12x", memory="1Gi"), **replicated))
    plugin = requests(cpu="100m", memory="128Mi")
    api.add_pod(on_n1("gpu-plugin", "kube-system", plugin, owner=("DaemonSet", "gpu-plugin")))
    mirror = {"kubernetes.io/config.mirror": "abc"}
    etcd = requests(cpu="200m", memory="256Mi")
    api.add_pod(on_n1("etcd-n1", "kube-system", etcd, annotations=mirror))
    leaving = on_n1("leaving", "web", requests(cpu="1"), **replicated)
    leaving["metadata"]["deletionTimestamp"] = "2024-05-01T10:00:00Z"
    api.add_pod(leaving)
    api.add_pod(on_n1("done", "web", requests(cpu="4"), phase="Succeeded"))
    # A CPU node the model never holds: what cannot be read there is nobody's concern.
    api.add_node(objects.node("cpu-1", allocatable={"cpu": "lots"}))
    cpu_pod = requests(cpu="-1")
    api.add_pod(objects.pod("batch", namespace="etl", node="cpu-1", containers=[cpu_pod]))


def samples() -> list[Sample]:
    found = [node_info(n) for n in ("n1", "n2", "n3")]
    for node in ("n1", "n2", "n3"):
        found += card(node, 0, mode=0 if node == "n1" else 2)
        found += card(node, 1)
    return found + vgpu("n1", "ml/train", 0, 4096)


# What n1's pods request, worked by hand (slots, millicores, bytes).
N1_PODS = {
    "ml/train": (6250, 16 * GI + 128 * MI),
    "web/api": (1000, 2 * GI),
    "web/odd": (0, GI),  # cpu unreadable: counted as none, with a warning
    "kube-system/gpu-plugin": (100, 128 * MI),
    "kube-system/etcd-n1": (200, 256 * MI),
    "web/leaving": (1000, 0),
}


def check_cluster(cluster: Cluster) -> None:
    """Everything the API said, as the model holds it."""
    n1, n2, n3 = cluster.nodes
    assert n1.allocatable == Allocatable(cpu_milli=16_000, memory_bytes=64 * GI, pods=110)
    assert dict(n1.labels) == {"kubernetes.io/hostname": "n1", "pool": "a100", "zone": "z1"}
    assert n1.taints == (Taint("nvidia.com/gpu", "NoSchedule", "present"),)
    assert (n1.unschedulable, n2.unschedulable, n3.unschedulable) == (False, True, False)
    assert all(c.healthy for n in cluster.nodes for c in n.cards)  # a cordon is not a fault
    assert n2.allocatable == Allocatable()  # no cpu, memory or pods given: not limited
    assert n3.allocatable == Allocatable(cpu_milli=None, memory_bytes=16 * GI)
    assert n3.taints == ()
    assert n1.other_pods == (
        # a drain moves these: where they may go is read (kube-scheduler's filters judge it)
        OtherPod(
            "web/api",
            None,
            Resources(*N1_PODS["web/api"]),
            constraints=NodeConstraints(
                (("zone", "z1"),), tolerations=(Toleration("nvidia.com/gpu", "Exists"),)
            ),
        ),
        OtherPod("web/odd", None, Resources(*N1_PODS["web/odd"]), constraints=NodeConstraints()),
    )
    # web/leaving is being deleted: it takes its share now, a new node runs no copy of it
    assert n1.resident_pods == tuple(
        OtherPod(name, None, Resources(*N1_PODS[name]), terminating=name == "web/leaving")
        for name in ("kube-system/etcd-n1", "kube-system/gpu-plugin", "web/leaving")
    )
    pods = {p.name: p for p in cluster.pods}
    assert pods["ml/train"].resources == Resources(*N1_PODS["ml/train"])
    assert pods["ml/train"].constraints == NodeConstraints(
        node_selector=(("pool", "a100"),),
        tolerations=(Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"),),
    )
    assert pods["ml/wait"].resources == Resources(8000, 8 * GI)
    assert pods["ml/wait"].constraints == NodeConstraints(
        required=(
            Term(expressions=(Requirement("zone", "In", ("z1", "z2")),)),
            Term(fields=(Requirement("metadata.name", "In", ("n2",)),)),
        ),
        tolerations=(Toleration("nvidia.com/gpu", "Exists"),),
    )
    assert pods["ml/wait"].invalid is None
    assert pods["ml/bad"].invalid == (
        "spec.tolerations[0].effect 'Sometimes' is not one of NoSchedule, PreferNoSchedule, "
        "NoExecute"
    )


def check_node_state(cluster: Cluster) -> None:
    """n1's free pod slots, cpu and memory once every pod on it is counted."""
    state = build_state(cluster)
    cpu = sum(c for c, _ in N1_PODS.values())
    memory = sum(m for _, m in N1_PODS.values())
    assert (cpu, memory) == (8550, 19 * GI + 512 * MI)
    assert state.free_resources(state.node_index["n1"]) == (
        110 - len(N1_PODS),
        16_000 - cpu,
        64 * GI - memory,
    )


async def test_every_field_reaches_the_model(kube_api: KubeApiDouble, tmp_path: Path) -> None:
    populate(kube_api)
    state = await read_kubernetes(str(kube_api.write_kubeconfig(tmp_path / "kubeconfig")))
    assert state.warnings == ()
    problems = {n.name: n.problems for n in state.nodes}
    assert problems == {
        "n1": (
            "Kubernetes: pod web/odd on node n1: container main: resources.requests.cpu '12x' "
            "is not a quantity; left out",
        ),
        "n2": (),
        "n3": (
            "Kubernetes: node n3: spec.taints[0].effect is missing; status.allocatable.cpu "
            "'12x' is not a quantity; left out",
        ),
        "cpu-1": (
            "Kubernetes: node cpu-1: status.allocatable.cpu 'lots' is not a quantity; left out",
            "Kubernetes: pod etl/batch on node cpu-1: container main: resources.requests.cpu "
            "'-1' is negative; left out",
        ),
    }
    result = assemble(samples(), state)
    check_cluster(result.cluster)
    check_node_state(result.cluster)
    # The modelled nodes' problems are warnings; cpu-1's are not (the model has no cpu-1).
    said = [w for w in result.warnings if w.startswith("Kubernetes:")]
    assert said == [*problems["n1"], *problems["n3"]]
    assert not any("unavailable cards" in w for w in result.warnings)  # a cordon is not one


async def test_the_diagnosis_reads_the_nodes_as_kube_scheduler(
    kube_api: KubeApiDouble, tmp_path: Path
) -> None:
    """ml/wait's GPUs fit on n1, its 8 cpu do not (7450m free): node-resources. n2 is
    cordoned, n3 outside its affinity. ml/bad cannot be read: invalid."""
    populate(kube_api)
    state = await read_kubernetes(str(kube_api.write_kubeconfig(tmp_path / "kubeconfig")))
    verdicts = {d.pod.name: d for d in diagnose(assemble(samples(), state).cluster).pods}
    wait = verdicts["ml/wait"]
    assert wait.cause == "node-resources"
    reasons = dict(wait.node_reasons)
    assert any("Insufficient cpu" in r for r in reasons["n1"])
    assert any("unschedulable" in r for r in reasons["n2"])
    assert any("node affinity/selector" in r for r in reasons["n3"])
    assert verdicts["ml/bad"].cause == "invalid"


async def test_a_scenario_round_trip_keeps_every_field(
    kube_api: KubeApiDouble, tmp_path: Path
) -> None:
    populate(kube_api)
    state = await read_kubernetes(str(kube_api.write_kubeconfig(tmp_path / "kubeconfig")))
    cluster = assemble(samples(), state).cluster
    again = scenario_from_data(scenario_to_data(cluster), "snapshot.yaml")
    assert again == cluster
    # Equality leaves labels out (a mapping); compare them too.
    assert [dict(n.labels) for n in again.nodes] == [dict(n.labels) for n in cluster.nodes]


# -- `xgpu-advisor snapshot`, end to end -------------------------------------------------


@pytest.fixture
def exporters() -> Iterator[str]:
    """Stand-in exporters answering /n1, /n2, /n3 with each node's exposition; the URL list."""
    with serving_exporters(samples(), ("n1", "n2", "n3")) as urls:
        yield urls


def test_snapshot_writes_what_the_loader_reads(
    kube_api_thread: KubeApiThread,
    exporters: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    kube_api_thread.call(populate, kube_api_thread.api)
    kubeconfig = kube_api_thread.api.write_kubeconfig(tmp_path / "kubeconfig")
    out = tmp_path / "snapshot.yaml"
    args = ["snapshot", "--exporters", exporters, "--kubeconfig", str(kubeconfig)]
    assert main([*args, "--output", str(out)]) == 0
    err = capsys.readouterr().err
    assert "warning: Kubernetes: node n3: spec.taints[0].effect is missing" in err
    assert "3 nodes, 6 cards, 1 running pod and 2 Pending pods" in err
    snapshot = load_scenario(out)
    check_cluster(snapshot)
    check_node_state(snapshot)
    # The file says it in the scenario's own words.
    text = out.read_text()
    for written in (
        "allocatable: {cpu: '16', memory: 64Gi, pods: 110}",
        "unschedulable: true",
        "resident_pods:",
        "- name: kube-system/gpu-plugin\n    resources: {cpu: 100m, memory: 128Mi}",
        "resources: {cpu: 6250m, memory: 16512Mi}",
    ):
        assert written in text, written


def test_bad_values_are_findings_not_crashes(
    kube_api_thread: KubeApiThread,
    exporters: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Garbage where the API keeps objects (types it would never serve) still gives a
    snapshot: warnings for nodes and bound pods, `invalid` for a Pending pod."""

    def garbage(api: KubeStore) -> None:
        populate(api)
        api.modify_node("n1", lambda n: n["spec"].update(taints="all"))
        api.modify_node("n2", lambda n: n["metadata"].update(labels=["zone"]))

        def wreck(pod: JsonObject) -> None:
            pod["spec"].update(affinity={"nodeAffinity": 3}, overhead=[], tolerations=[7])

        api.modify_pod("ml", "wait", wreck)
        no_terms: JsonObject = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {}}
        }
        api.modify_pod("ml", "bad", lambda p: p["spec"].update(affinity=no_terms))
        api.modify_node("n3", lambda n: n["metadata"]["labels"].update({"": "x"}))
        api.modify_pod("web", "api", lambda p: p["spec"].update(initContainers={"a": 1}))

    kube_api_thread.call(garbage, kube_api_thread.api)
    kubeconfig = kube_api_thread.api.write_kubeconfig(tmp_path / "kubeconfig")
    out = tmp_path / "snapshot.yaml"
    args = ["snapshot", "--exporters", exporters, "--kubeconfig", str(kubeconfig)]
    assert main([*args, "--output", str(out)]) == 0
    err = capsys.readouterr().err
    assert "warning: Kubernetes: node n1: spec.taints is not a list; left out" in err
    assert "warning: Kubernetes: node n2: metadata.labels is not an object; left out" in err
    assert "Kubernetes: pod web/api on node n1: spec.initContainers is not a list" in err
    [n3] = [line for line in err.splitlines() if "Kubernetes: node n3:" in line]
    assert n3.endswith("'12x' is not a quantity; metadata.labels has an empty key; left out")
    # What was written loads again (the command checks that before writing).
    pods = {p.name: p for p in load_scenario(out).pods}
    assert pods["ml/wait"].invalid == (
        "spec.overhead is not an object; spec.affinity.nodeAffinity is not an object; "
        "spec.tolerations[0] is not an object"
    )
    bad = pods["ml/bad"]
    assert bad.invalid is not None
    assert f"{REQUIRED_AFFINITY}.nodeSelectorTerms is empty: the pod fits no node" in bad.invalid
    assert bad.constraints.required == (Term(),)


def test_node_and_pod_builders_carry_the_fields() -> None:
    """The builders the tests above lean on write the API's own field names."""
    pod = objects.pod(
        "p", node_selector={"a": "b"}, tolerations=[TOLERATE_GPU], overhead={"cpu": "1"}
    )
    assert (pod["spec"]["nodeSelector"], pod["spec"]["tolerations"]) == (
        {"a": "b"},
        [TOLERATE_GPU],
    )
    assert pod["spec"]["overhead"] == {"cpu": "1"}
    node: Mapping[str, Any] = objects.node("n", taints=[GPU_TAINT])
    assert node["spec"]["taints"] == [GPU_TAINT]


def test_resident_pods_in_a_scenario_are_checked() -> None:
    """The scenario key snapshot writes them under, read strictly like `other_pods`."""
    node: JsonObject = {"name": "n1", "cards": [{"index": 0, "memory_mib": 1024}]}

    def load(*residents: JsonObject) -> Cluster:
        return scenario_from_data({"nodes": [{**node, "resident_pods": list(residents)}]}, "s")

    ds = {"name": "kube-system/ds", "resources": {"cpu": "100m"}}
    [read] = load(ds, {"name": "web/leaving", "terminating": True}).nodes
    assert read.resident_pods == (
        OtherPod("kube-system/ds", None, Resources(100, 0)),
        OtherPod("web/leaving", terminating=True),
    )
    with pytest.raises(ScenarioError, match=r"resident_pods\[0\]\.terminating: expected true or"):
        load({**ds, "terminating": "yes"})
    with pytest.raises(ScenarioError, match=r"^s: nodes\[0\]\.resident_pods\[1\]\.name: dup"):
        load(ds, ds)
    with pytest.raises(ScenarioError, match=r"resident_pods\[0\]\.name: expected namespace/pod"):
        load({"name": "ds"})
    with pytest.raises(ScenarioError, match=r"resident_pods\[0\]\.blocks: unknown key"):
        load({**ds, "blocks": "x"})


def test_the_objects_are_shaped_as_the_api_serves_them() -> None:
    """Every pod and node above passes the API's own schema (kubernetes-validate, strict:
    no unknown field), so the fields read are where the API puts them. n3's taint lacks
    its effect on purpose; quantities are not checked by the schema."""
    import kubernetes_validate

    store = KubeStore()
    populate(store)
    checked = 0
    for resource in ("pods", "nodes"):
        for obj in store.objects(resource):
            if obj["metadata"]["name"] != "n3":
                kubernetes_validate.validate(obj, "1.30.0", strict=True)
                checked += 1
    assert checked == 13
    [n3] = [n for n in store.objects("nodes") if n["metadata"]["name"] == "n3"]
    with pytest.raises(kubernetes_validate.ValidationError, match="'effect' is a required"):
        kubernetes_validate.validate(n3, "1.30.0", strict=True)
