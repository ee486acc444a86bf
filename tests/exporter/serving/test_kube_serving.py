"""`xgpu-exporter` with its Kubernetes collector: the API double, the fake libnvidia-ml.so.1
and a fake /proc, under one real subprocess.

Pods of node gpu-node-1 in the three dialects of docs/design.md §1 (CCE `volcano.sh/gpu-index`,
Volcano `volcano.sh/vgpu-ids-new`, HAMi `hami.io/vgpu-devices-allocated`), a pod of another
node and a finished pod. The cluster then changes while the exporter runs: pods come and go,
the watch expires (410), the API answers 500s, the API goes away and comes back. The exporter
keeps serving; while the API is unreachable the kubernetes collector reports failure and the
vGPU series keep their last good values (pods_kube.py: `PodsView.ok` False).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.exporter.fakenvml.state import FakeNvml, write_procfs
from tests.exporter.serving.kube_world import (
    BASELINE,
    CCE_TRAIN,
    CGROUPS,
    GIB,
    HAMI_LATE,
    HAMI_SVC,
    MIB,
    NODE,
    UUID,
    VC_INFER,
    Labels,
    hami_late,
    initial_pods,
    nvml_state,
    vc_infer,
)
from tests.kubeapi.server import KubeApiDouble
from tests.kubeapi.store import object_key
from tests.kubeapi.threaded import KubeApiThread
from tests.realparts import Exporter
from tests.wait import wait_until

pytestmark = pytest.mark.realservices  # xgpu-exporter and the API double

VGPU_LABELS = ("namespace", "pod", "container", "gpu_index", "gpu_uuid")
Series = dict[Labels, float]


# -- reading /metrics ----------------------------------------------------------------------


def series(text: str, name: str, labels: Labels = VGPU_LABELS) -> Series:
    """name's samples keyed by the values of `labels` (which must be all the labels there are)."""
    found: Series = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == name:
                assert set(sample.labels) == set(labels), sample
                found[tuple(sample.labels[k] for k in labels)] = sample.value
    return found


def cards(text: str, name: str) -> dict[str, float]:
    """A card-level series by gpu_index (checking each index goes with its card's UUID)."""
    found = series(text, name, ("gpu_index", "gpu_uuid"))
    assert all(uuid == UUID[int(index)] for index, uuid in found), found
    return {index: value for (index, _), value in found.items()}


def success(text: str) -> dict[str, float]:
    return {
        k[0]: v for k, v in series(text, "xgpu_exporter_collector_success", ("collector",)).items()
    }


def vgpus(text: str) -> Series:
    return series(text, "xgpu_memory_total")


def kube_ok(text: str) -> bool:
    return success(text).get("kubernetes") == 1


def assert_nvml_still_served(text: str) -> None:
    assert success(text)["nvml"] == 1
    assert cards(text, "xgpu_device_health") == {"0": 0, "1": 0, "2": 0, "3": 0}
    assert cards(text, "xgpu_card_memory_used_bytes")["3"] == 5 * GIB


def pod_lists(kube: KubeApiThread) -> list[str | None]:
    """The resourceVersion each pod list asked for (None: a consistent read), in order."""
    requests = kube.call(lambda: list(kube.api.requests))
    return [
        r.query.get("resourceVersion") for r in requests if r.path == "/api/v1/pods" and not r.watch
    ]


# -- fixtures ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kube() -> Iterator[KubeApiThread]:
    with KubeApiThread() as kube:
        for pod in initial_pods():
            kube.call(kube.api.add_pod, pod)
        yield kube


@pytest.fixture(scope="module")
def fake(fake_nvml_session: FakeNvml, tmp_path_factory: pytest.TempPathFactory) -> FakeNvml:
    return fake_nvml_session.with_own_state(tmp_path_factory.mktemp("state"), nvml_state())


@pytest.fixture(scope="module")
def procfs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_procfs(tmp_path_factory.mktemp("proc"), CGROUPS)


@pytest.fixture(scope="module")
def exporter(
    kube: KubeApiThread,
    fake: FakeNvml,
    procfs: Path,
    start_exporter: Callable[..., Exporter],
    tmp_path_factory: pytest.TempPathFactory,
) -> Exporter:
    kubeconfig = kube.api.write_kubeconfig(tmp_path_factory.mktemp("kube") / "config")
    env = fake.env()
    # As inside a pod (a DaemonSet debugged with a kubeconfig, CI in a cluster): an explicit
    # --kubeconfig must still win over the in-cluster service account.
    env["KUBERNETES_SERVICE_HOST"], env["KUBERNETES_SERVICE_PORT"] = "192.0.2.1", "443"
    args = [
        "--node", NODE,
        "--kubeconfig", str(kubeconfig),
        "--path.procfs", str(procfs),
        "--collection.freshness", "0",
        "--collection.timeout", "1",
    ]  # fmt: skip
    return start_exporter(args, env)


def restore(api: KubeApiDouble) -> None:
    """Back to `initial_pods()`, one change per difference: the exporter shows the baseline
    only once it has seen every one of them."""
    api.clear_faults()
    wanted = {object_key(p): p for p in initial_pods()}
    for obj in api.objects("pods"):
        key = object_key(obj)
        if key not in wanted:
            api.delete("pods", key)
        elif obj["metadata"].get("annotations") != wanted[key]["metadata"]["annotations"]:
            api.replace_pod(wanted[key])  # the tests change pods only through annotations
    present = {object_key(o) for o in api.objects("pods")}
    for key, obj in wanted.items():
        if key not in present:
            api.add_pod(obj)


@pytest.fixture
def cluster(kube: KubeApiThread, exporter: Exporter) -> Iterator[KubeApiThread]:
    """The API double, with the initial pods and a healthy exporter before and after."""
    yield kube
    kube.call(restore, kube.api)
    text = exporter.metrics_when(lambda t: kube_ok(t) and vgpus(t) == BASELINE)
    assert vgpus(text) == BASELINE
    assert "Traceback" not in exporter.log()


# -- tests ---------------------------------------------------------------------------------


def test_every_vgpu_of_the_node_in_each_dialect(exporter: Exporter, cluster: KubeApiThread) -> None:
    text = exporter.metrics_when(lambda t: vgpus(t) == BASELINE)
    # allotted memory as each dialect says; the other node's and the finished pod are absent
    assert vgpus(text) == BASELINE
    assert series(text, "xgpu_core_percentage_total") == {
        ("team-b", "vc-infer", "infer", "2", UUID[2]): 30,
        ("team-c", "hami-svc", "svc", "3", UUID[3]): 20,
    }  # CCE without a core request: memory isolation, no core series
    assert series(text, "xgpu_memory_used") == {
        ("team-a", "cce-train", "train", "0", UUID[0]): GIB,
        ("team-a", "cce-train", "train", "1", UUID[1]): 2 * GIB,
        ("team-b", "vc-infer", "infer", "2", UUID[2]): 1536 * MIB,
        ("team-c", "hami-svc", "svc", "3", UUID[3]): 700 * MIB,
    }
    assert series(text, "xgpu_core_percentage_used") == {
        ("team-a", "cce-train", "train", "0", UUID[0]): 15,
        ("team-a", "cce-train", "train", "1", UUID[1]): 25,
        ("team-b", "vc-infer", "infer", "2", UUID[2]): 12,
        ("team-c", "hami-svc", "svc", "3", UUID[3]): 8,
    }
    assert cards(text, "gpu_schedule_policy") == {"0": 0, "1": 0, "2": 1, "3": 1}
    assert cards(text, "xgpu_card_vgpus") == {"0": 1, "1": 1, "2": 1, "3": 1}
    assert cards(text, "xgpu_card_memory_allotted_bytes") == {
        "0": 4096 * MIB,
        "1": 4096 * MIB,
        "2": 2048 * MIB,
        "3": 3000 * MIB,
    }
    assert cards(text, "xgpu_card_core_allotted_ratio") == {"0": 0, "1": 0, "2": 0.3, "3": 0.2}
    # the host process, and hami-late's before its pod exists
    assert cards(text, "xgpu_card_unattributed_memory_bytes") == {
        "0": 256 * MIB,
        "1": 0,
        "2": 0,
        "3": 300 * MIB,
    }
    assert success(text) == {"nvml": 1, "kubernetes": 1, "attribution": 1}
    assert series(text, "xgpu_node_info", ("node",)) == {(NODE,): 1}
    # the first list came from the watch cache ("0"), only for this node
    requests = cluster.call(lambda: list(cluster.api.requests))
    assert requests[0].query.get("fieldSelector") == f"spec.nodeName={NODE}"
    assert pod_lists(cluster)[0] == "0"


def test_a_pod_added_appears_with_its_usage(exporter: Exporter, cluster: KubeApiThread) -> None:
    cluster.call(cluster.api.add_pod, hami_late())
    text = exporter.metrics_when(lambda t: vgpus(t) == BASELINE | HAMI_LATE)
    assert vgpus(text) == BASELINE | HAMI_LATE
    late = ("team-c", "hami-late", "worker", "3", UUID[3])
    assert series(text, "xgpu_memory_used")[late] == 300 * MIB
    assert series(text, "xgpu_core_percentage_total")[late] == 10
    assert series(text, "xgpu_core_percentage_used")[late] == 5
    assert cards(text, "xgpu_card_unattributed_memory_bytes")["3"] == 0
    assert cards(text, "xgpu_card_vgpus")["3"] == 2
    assert cards(text, "xgpu_card_memory_allotted_bytes")["3"] == 4000 * MIB
    assert cards(text, "xgpu_card_core_allotted_ratio")["3"] == 0.3


def test_a_deleted_pod_disappears_and_its_usage_turns_unattributed(
    exporter: Exporter, cluster: KubeApiThread
) -> None:
    exporter.metrics_when(lambda t: vgpus(t) == BASELINE)
    cluster.call(cluster.api.delete_pod, "team-a", "cce-train")
    text = exporter.metrics_when(lambda t: vgpus(t) == VC_INFER | HAMI_SVC)
    assert vgpus(text) == VC_INFER | HAMI_SVC
    for name in ("xgpu_memory_used", "xgpu_core_percentage_used"):
        assert not any(labels[1] == "cce-train" for labels in series(text, name)), name
    assert cards(text, "gpu_schedule_policy") == {"0": 2, "1": 2, "2": 1, "3": 1}
    assert cards(text, "xgpu_card_unattributed_memory_bytes") == {
        "0": GIB + 256 * MIB,
        "1": 2 * GIB,
        "2": 0,
        "3": 300 * MIB,
    }


def test_watch_expiry_relists_and_loses_no_update(
    exporter: Exporter, cluster: KubeApiThread
) -> None:
    cluster.run(cluster.api.wait_for_watches(1))
    lists_before = len(pod_lists(cluster))

    def expire_then_change(api: KubeApiDouble) -> None:
        # One step on the API's loop: the open watch gets its 410 first, so the changes
        # after it reach the exporter only through the relist.
        api.expire_watches()
        api.add_pod(hami_late())
        api.delete_pod("team-a", "cce-train")
        api.replace_pod(vc_infer(memory_mib=4096))

    cluster.call(expire_then_change, cluster.api)
    bigger = dict.fromkeys(VC_INFER, 4096 * MIB)
    wanted = bigger | HAMI_SVC | HAMI_LATE
    text = exporter.metrics_when(lambda t: vgpus(t) == wanted)
    assert vgpus(text) == wanted
    assert success(text)["kubernetes"] == 1
    assert None in pod_lists(cluster)[lists_before:]  # a consistent relist, not a cache read
    cluster.call(cluster.api.delete_pod, "team-c", "hami-late")  # and it watches again
    text = exporter.metrics_when(lambda t: vgpus(t) == bigger | HAMI_SVC)
    assert vgpus(text) == bigger | HAMI_SVC


def test_api_errors_keep_the_last_allotments_until_it_recovers(
    exporter: Exporter, cluster: KubeApiThread
) -> None:
    cluster.run(cluster.api.wait_for_watches(1))
    lists_before = len(pod_lists(cluster))

    def break_api(api: KubeApiDouble) -> None:
        api.fail_next(10_000, status_code=500)
        api.drop_watches()

    cluster.call(break_api, cluster.api)
    text = exporter.metrics_when(lambda t: not kube_ok(t))
    assert success(text)["kubernetes"] == 0
    cluster.call(cluster.api.delete_pod, "team-b", "vc-infer")  # unseen while failing
    # it retries (with back-off) and every retry fails
    wait_until(lambda: len(pod_lists(cluster)) >= lists_before + 2, what="two failed retries")
    text = exporter.metrics()
    assert success(text)["kubernetes"] == 0
    assert vgpus(text) == BASELINE  # the last good allotments
    assert series(text, "xgpu_memory_used")[("team-b", "vc-infer", "infer", "2", UUID[2])] > 0
    assert_nvml_still_served(text)

    cluster.call(cluster.api.clear_faults)
    text = exporter.metrics_when(lambda t: kube_ok(t) and vgpus(t) == CCE_TRAIN | HAMI_SVC)
    assert success(text)["kubernetes"] == 1
    assert vgpus(text) == CCE_TRAIN | HAMI_SVC
    assert cards(text, "gpu_schedule_policy")["2"] == 2


def test_api_down_then_back(exporter: Exporter, cluster: KubeApiThread) -> None:
    cluster.run(cluster.api.wait_for_watches(1))
    cluster.run(cluster.api.go_down())
    try:
        text = exporter.metrics_when(lambda t: not kube_ok(t))
        assert success(text)["kubernetes"] == 0
        assert vgpus(text) == BASELINE
        assert_nvml_still_served(text)
        status, _, page = exporter.get("/")
        assert status == 200
        assert "Kubernetes API" in page.decode()  # the landing page says why
        # the world moves on meanwhile
        cluster.call(cluster.api.add_pod, hami_late())
        cluster.call(cluster.api.delete_pod, "team-a", "cce-train")
        time.sleep(0.3)  # a few refused attempts
        text = exporter.metrics()
        assert success(text)["kubernetes"] == 0
        assert vgpus(text) == BASELINE
    finally:
        cluster.run(cluster.api.come_up())
    wanted = VC_INFER | HAMI_SVC | HAMI_LATE
    text = exporter.metrics_when(lambda t: kube_ok(t) and vgpus(t) == wanted)
    assert success(text)["kubernetes"] == 1
    assert vgpus(text) == wanted
    assert_nvml_still_served(text)
