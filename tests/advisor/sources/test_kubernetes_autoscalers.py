"""HorizontalPodAutoscalers read live (docs/design.md §12.1): `autoscaling/v2` from the API
double (paged, 403 and 404 as kube-apiserver answers), through the real kubernetes_asyncio
client, assemble, `snapshot` and `diagnose --kubeconfig`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.core.hpa import Autoscaler, PodMetric
from advisor.scenario import load_scenario, scenario_from_data, scenario_to_data
from advisor.sources.assemble import assemble
from advisor.sources.kubernetes import read_kubernetes
from advisor.sources.values import Sample
from tests.advisor.sources.builders import card, cce_pod, node_info, vgpu
from tests.advisor.sources.pages_server import serving_exporters
from tests.kubeapi import objects
from tests.kubeapi.server import KubeApiDouble
from tests.kubeapi.store import KubeStore
from tests.kubeapi.threaded import KubeApiThread

pytestmark = pytest.mark.realservices  # the Kubernetes API double

pytest_plugins = ["tests.kubeapi.fixtures"]

HPAS = "/apis/autoscaling/v2/horizontalpodautoscalers"
CORE = "xgpu_core_percentage_used"


def populate(api: KubeStore) -> None:
    """One node of two 16 GiB cards; a Deployment's replica (its ReplicaSet's pod) runs on
    card 0 asking 8 GiB; three HPAs on it and one whose controller has not acted yet."""
    api.add_node(objects.node("n1", allocatable={"volcano.sh/gpu-mem.128Mi": 256}))
    replica = cce_pod("web/infer-5d8f7-abcde", memory_mib=8192, node="n1", cards=(0,))
    replica["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "infer-5d8f7", "controller": True}
    ]
    api.add_pod(replica)
    metrics = [
        objects.pods_metric(CORE, "60"),
        objects.pods_metric("xgpu_memory_used_bytes", "1500m"),
        # not per-pod GPU series: left out
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization"}}},
        {"type": "External", "external": {"metric": {"name": "queue_depth"}}},
    ]
    api.create(
        "horizontalpodautoscalers",
        objects.hpa(
            "infer",
            namespace="web",
            target=("Deployment", "infer"),
            min_replicas=1,
            max_replicas=5,
            current_replicas=1,
            metrics=metrics,
        ),
    )
    api.create(
        "horizontalpodautoscalers",
        objects.hpa("fresh", namespace="web", target=("Deployment", "infer"), max_replicas=3),
    )
    # scaled to zero, no pod to tell: its xGPU series says it is a GPU workload
    batch = objects.hpa(
        "batch",
        namespace="ml",
        target=("StatefulSet", "workers"),
        current_replicas=2,
        metrics=[objects.pods_metric(CORE, "80")],
    )
    api.create("horizontalpodautoscalers", batch)
    # a CPU-only Deployment's HPA: no GPU pod, no xGPU series, left out
    frontend = cce_pod("web/frontend-6c7d8-xyz12")
    del frontend["spec"]["containers"][0]["resources"]["limits"]
    frontend["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "frontend-6c7d8",
            "controller": True,
        }
    ]
    api.add_pod(frontend)
    cpu = objects.hpa("frontend", namespace="web", target=("Deployment", "frontend"))
    api.create("horizontalpodautoscalers", cpu)


def samples() -> list[Sample]:
    return [
        node_info("n1"),
        *card("n1", 0),
        *card("n1", 1),
        *vgpu("n1", "web/infer-5d8f7-abcde", 0, 8192),
    ]


EXPECTED = (
    Autoscaler("ml/batch", "StatefulSet/ml/workers", 1, 10, 2, (PodMetric(CORE, 80.0),)),
    # no status.currentReplicas yet: the one pod the Deployment runs
    Autoscaler("web/fresh", "Deployment/web/infer", 1, 3, 1),
    Autoscaler(
        "web/infer",
        "Deployment/web/infer",
        1,
        5,
        1,
        (PodMetric(CORE, 60.0), PodMetric("xgpu_memory_used_bytes", 1.5)),
    ),
)


async def test_hpas_are_read_paged_and_kept_by_the_snapshot(
    kube_api: KubeApiDouble, tmp_path: Path
) -> None:
    populate(kube_api)
    kubeconfig = str(kube_api.write_kubeconfig(tmp_path / "kubeconfig"))
    state = await read_kubernetes(kubeconfig, page_size=1)
    assert state.warnings == ()
    assert state.autoscalers == EXPECTED
    listed = [r for r in kube_api.requests if r.path == HPAS]
    assert len(listed) == 4  # one HPA a page
    assert [bool(r.query.get("continue")) for r in listed] == [False, True, True, True]
    cluster = assemble(samples(), state).cluster
    assert cluster.autoscalers == EXPECTED
    assert scenario_from_data(scenario_to_data(cluster), "snapshot.yaml") == cluster


@pytest.mark.parametrize(
    ("status_code", "why"), [(403, "HTTP 403 Forbidden injected fault"), (404, "HTTP 404 NotFound")]
)
async def test_a_failing_or_unserved_list_is_a_warning_and_the_run_goes_on(
    kube_api: KubeApiDouble, tmp_path: Path, status_code: int, why: str
) -> None:
    """403: the role lacks the rule; 404: the cluster serves no autoscaling/v2."""
    populate(kube_api)
    if status_code == 404:
        kube_api.autoscaling_v2 = False
    else:
        kube_api.fail_next(status_code=status_code, resource="horizontalpodautoscalers")
    state = await read_kubernetes(str(kube_api.write_kubeconfig(tmp_path / "kubeconfig")))
    assert [w.split(": list ")[-1] for w in state.warnings] == [
        f"horizontalpodautoscalers: {why}"
        + (" the server could not find the requested resource" if status_code == 404 else "")
        + "; autoscalers are left out (no reachable replicas)"
    ]
    assert state.autoscalers == ()
    assert [p.key for p in state.pods] == ["web/infer-5d8f7-abcde"]


async def test_an_hpa_the_scenario_could_not_hold_is_left_out_with_a_warning(
    kube_api: KubeApiDouble, tmp_path: Path
) -> None:
    populate(kube_api)
    broken = objects.hpa("broken", namespace="web", min_replicas=3, max_replicas=2)
    kube_api.create("horizontalpodautoscalers", broken)
    nameless = objects.hpa("nameless", namespace="web")
    nameless["spec"]["scaleTargetRef"] = {"kind": "Deployment"}
    kube_api.create("horizontalpodautoscalers", nameless)
    # an average the API would refuse, and a Pods metric aiming at no AverageValue
    odd = objects.hpa(
        "odd",
        namespace="web",
        target=("Deployment", "infer"),
        current_replicas=1,
        metrics=[
            objects.pods_metric(CORE, "0"),
            objects.pods_metric(CORE, "lots"),
        ],
    )
    kube_api.create("horizontalpodautoscalers", odd)
    state = await read_kubernetes(str(kube_api.write_kubeconfig(tmp_path / "kubeconfig")))
    assert state.warnings == (
        "Kubernetes: HPA web/broken: maxReplicas 2 below minReplicas 3 or 1; left out",
        "Kubernetes: HPA web/nameless: spec.scaleTargetRef names no object; left out",
    )
    assert [a.name for a in state.autoscalers] == ["ml/batch", "web/fresh", "web/infer", "web/odd"]
    assert state.autoscalers[-1].metrics == ()


# -- `snapshot` and `diagnose --kubeconfig`, end to end -----------------------------------


@pytest.fixture
def exporters() -> Iterator[str]:
    with serving_exporters(samples(), ("n1",)) as urls:
        yield urls


def test_diagnose_live_shows_the_reach_and_the_snapshot_keeps_the_hpas(
    kube_api_thread: KubeApiThread,
    exporters: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    kube_api_thread.call(populate, kube_api_thread.api)
    kubeconfig = kube_api_thread.api.write_kubeconfig(tmp_path / "kubeconfig")
    live = ["--exporters", exporters, "--kubeconfig", str(kubeconfig)]
    assert main(["diagnose", *live, "--format", "json"]) == 0
    reach = {a["name"]: a for a in json.loads(capsys.readouterr().out)["autoscalers"]}
    # 8 GiB replicas: card 0 holds one more, card 1 two; web/infer adds 4, web/fresh 2
    assert reach["web/infer"]["placeable"] == 3
    assert reach["web/infer"]["status"] == "blocked"
    assert reach["web/fresh"]["placeable"] == 2
    assert reach["web/fresh"]["status"] == "reachable"
    assert reach["ml/batch"]["status"] == "unknown-template"
    assert main(["diagnose", *live]) == 0
    assert "Autoscalers" in capsys.readouterr().out
    out = tmp_path / "snapshot.yaml"
    assert main(["snapshot", *live, "--output", str(out)]) == 0
    assert load_scenario(out).autoscalers == EXPECTED
