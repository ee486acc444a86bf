"""KubePodSource against the local API double, through the real kubernetes_asyncio client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from exporter.allotments import Allotment
from exporter.cli import parse_args
from exporter.pods_kube import KubePodSource
from tests.exporter.kube_source import NODE, StartSource
from tests.kubeapi import objects
from tests.kubeapi.objects import JsonObject, container_id
from tests.kubeapi.server import KubeApiDouble
from tests.kubeapi.wait import eventually

pytestmark = pytest.mark.realservices  # the Kubernetes API double

pytest_plugins = ["tests.kubeapi.fixtures", "tests.exporter.kube_source"]

MIB = 2**20


def hami_pod(name: str, allocated: str, *, node: str = NODE, **options: Any) -> JsonObject:
    limits = {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 4096, "nvidia.com/gpucores": 30}
    return objects.pod(
        name,
        node=node,
        annotations={"hami.io/vgpu-devices-allocated": allocated},
        containers=[objects.container("main", limits=limits)],
        **options,
    )


def volcano_pod(name: str, allocated: str, *, node: str = NODE) -> JsonObject:
    limits = {"volcano.sh/vgpu-number": 2, "volcano.sh/vgpu-memory": 2048}
    return objects.pod(
        name,
        node=node,
        annotations={"volcano.sh/vgpu-ids-new": allocated},
        containers=[objects.container("infer", limits=limits), objects.container("sidecar")],
    )


def cce_pod(
    name: str, indices: str, *, gpus: int, units: int, core: int | None = None
) -> JsonObject:
    limits = {"volcano.sh/gpu-mem.128Mi": units}
    if core is not None:
        limits["volcano.sh/gpu-core.percentage"] = core
    return objects.pod(
        name,
        node=NODE,
        labels={"volcano.sh/gpu-num": str(gpus)},
        annotations={"volcano.sh/gpu-index": indices},
        containers=[objects.container("train", limits=limits)],
    )


def cards(source: KubePodSource) -> set[tuple[str, str, str, int, int | None]]:
    """(pod, container, card, MiB, core) of every allotment in the view."""
    return {
        (a.pod, a.container, a.card, a.memory_bytes // MIB, a.core_percent)
        for a in source.view().allotments
    }


async def test_initial_list_reads_each_dialect_of_this_node_only(
    kube_api: KubeApiDouble, start_source: StartSource
) -> None:
    hami = kube_api.add_pod(hami_pod("hami", "GPU-aaa,NVIDIA,4096,30:;"))
    kube_api.add_pod(volcano_pod("volcano", "GPU-bbb,NVIDIA,2048,0:GPU-ccc,NVIDIA,2048,0:"))
    kube_api.add_pod(cce_pod("cce", "0,1", gpus=2, units=64, core=20))
    kube_api.add_pod(hami_pod("elsewhere", "GPU-zzz,NVIDIA,4096,30:;", node="gpu-node-2"))
    kube_api.add_pod(objects.pod("cpu-only", node=NODE))
    kube_api.add_pod(hami_pod("done", "GPU-aaa,NVIDIA,4096,30:;", phase="Succeeded"))
    kube_api.add_pod(hami_pod("crashed", "GPU-aaa,NVIDIA,4096,30:;", phase="Failed"))

    source = await start_source()

    view = source.view()
    assert (view.ok, view.error) == (True, None)
    assert cards(source) == {
        ("hami", "main", "GPU-aaa", 4096, 30),
        ("volcano", "infer", "GPU-bbb", 2048, None),  # core 0: memory isolation only
        ("volcano", "infer", "GPU-ccc", 2048, None),
        ("cce", "train", "0", 4096, 10),  # 64 x 128 MiB and 20 % split over 2 cards
        ("cce", "train", "1", 4096, 10),
    }
    first = next(a for a in view.allotments if a.pod == "hami")
    assert first == Allotment(
        namespace="default",
        pod="hami",
        container="main",
        card="GPU-aaa",
        memory_bytes=4096 * MIB,
        core_percent=30,
        pod_uid=hami["metadata"]["uid"],
        container_id=container_id("default", "hami", "main"),  # "containerd://" dropped
    )
    (listed, *_) = kube_api.requests
    assert listed.query["fieldSelector"] == f"spec.nodeName={NODE}"
    assert not listed.watch


async def test_follows_pods_added_changed_and_deleted(
    kube_api: KubeApiDouble, start_source: StartSource
) -> None:
    source = await start_source()
    assert source.view().allotments == ()
    await kube_api.wait_for_watches(1)
    watching = kube_api.requests[-1]
    assert watching.watch
    assert watching.query["resourceVersion"] == str(kube_api.resource_version)
    assert watching.query["allowWatchBookmarks"] == "True"

    kube_api.add_pod(hami_pod("a", "GPU-aaa,NVIDIA,4096,30:;"))
    kube_api.add_pod(hami_pod("other-node", "GPU-zzz,NVIDIA,4096,30:;", node="gpu-node-2"))
    await eventually(lambda: cards(source) == {("a", "main", "GPU-aaa", 4096, 30)})

    def move_to_second_card(pod: JsonObject) -> None:
        pod["metadata"]["annotations"]["hami.io/vgpu-devices-allocated"] = (
            "GPU-bbb,NVIDIA,4096,30:;"
        )

    kube_api.modify_pod("default", "a", move_to_second_card)
    kube_api.add_pod(cce_pod("b", "3", gpus=1, units=8))
    await eventually(
        lambda: (
            cards(source) == {("a", "main", "GPU-bbb", 4096, 30), ("b", "train", "3", 1024, None)}
        )
    )

    kube_api.modify_pod("default", "a", lambda pod: pod["status"].update(phase="Succeeded"))
    await eventually(lambda: cards(source) == {("b", "train", "3", 1024, None)})
    kube_api.delete_pod("default", "b")
    await eventually(lambda: cards(source) == set())
    assert source.view().ok
    assert source.lists == 1


async def test_unreadable_allocation_is_counted_and_gives_no_allotments(
    kube_api: KubeApiDouble, start_source: StartSource
) -> None:
    kube_api.add_pod(hami_pod("good", "GPU-aaa,NVIDIA,4096,30:;"))
    kube_api.add_pod(hami_pod("bad", "GPU-bbb,NVIDIA,lots,30:;"))
    source = await start_source()

    view = source.view()
    assert cards(source) == {("good", "main", "GPU-aaa", 4096, 30)}
    assert view.ok
    assert source.problems == 1
    assert view.error is not None
    assert "1 pod with" in view.error
    assert "default/bad" in view.error
    assert "hami.io/vgpu-devices-allocated" in view.error

    def repair(pod: JsonObject) -> None:
        pod["metadata"]["annotations"]["hami.io/vgpu-devices-allocated"] = "GPU-bbb,NVIDIA,1024,5:;"

    kube_api.modify_pod("default", "bad", repair)
    await eventually(lambda: source.problems == 0)
    assert source.view().error is None
    assert ("bad", "main", "GPU-bbb", 1024, 5) in cards(source)


async def test_cce_memory_comes_from_the_request_when_the_split_is_uneven(
    kube_api: KubeApiDouble, start_source: StartSource
) -> None:
    kube_api.add_pod(cce_pod("odd", "0,1,2", gpus=3, units=4))  # 512 MiB over 3 cards
    source = await start_source()
    assert cards(source) == {("odd", "train", str(i), 170, None) for i in range(3)}


async def test_bookmarks_move_the_resource_version(
    kube_api: KubeApiDouble, start_source: StartSource
) -> None:
    source = await start_source()
    await kube_api.wait_for_watches(1)
    kube_api.add_pod(objects.pod("not-ours", node="gpu-node-2"))  # invisible to our watch
    assert source.resource_version != str(kube_api.resource_version)
    assert kube_api.send_bookmarks() == 1
    await eventually(lambda: source.resource_version == str(kube_api.resource_version))
    assert source.view().allotments == ()


async def test_a_pod_larger_than_old_aiohttp_line_limits_arrives(
    kube_api: KubeApiDouble, start_source: StartSource
) -> None:
    source = await start_source()
    await kube_api.wait_for_watches(1)
    pod = hami_pod("big", "GPU-aaa,NVIDIA,4096,30:;")
    pod["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"] = (
        "x" * 600_000
    )
    kube_api.add_pod(pod)
    await eventually(lambda: cards(source) == {("big", "main", "GPU-aaa", 4096, 30)})
    assert source.view().ok


async def test_view_is_rebuilt_only_on_change(
    kube_api: KubeApiDouble, start_source: StartSource
) -> None:
    kube_api.add_pod(hami_pod("a", "GPU-aaa,NVIDIA,4096,30:;"))
    source = await start_source()
    first = source.view()
    assert source.view() is first
    kube_api.modify_pod("default", "a", lambda pod: pod["metadata"].update(labels={"x": "y"}))
    await eventually(lambda: source.resource_version == str(kube_api.resource_version))
    assert source.view() is first  # the allotments did not change
    kube_api.add_pod(hami_pod("b", "GPU-bbb,NVIDIA,4096,30:;"))
    await eventually(lambda: source.view() is not first)
    assert len(source.view().allotments) == 2
    assert isinstance(source.view().allotments, tuple)


async def test_kubeconfig_file_is_read_when_not_in_a_cluster(
    kube_api: KubeApiDouble, start_source: StartSource, tmp_path: Path
) -> None:
    kube_api.add_pod(hami_pod("a", "GPU-aaa,NVIDIA,4096,30:;"))
    path = kube_api.write_kubeconfig(tmp_path / "config")
    source = await start_source(api_client_factory=None, kubeconfig=str(path), in_cluster=False)
    assert source.view().ok
    assert cards(source) == {("a", "main", "GPU-aaa", 4096, 30)}


async def test_a_missing_kubeconfig_from_the_environment_is_blamed_on_the_environment(
    start_source: StartSource, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The exporter's --kubeconfig defaults to nothing, so that a file $KUBECONFIG names is
    said to be named by $KUBECONFIG, as the advisor says it (it once said --kubeconfig)."""
    missing = tmp_path / "gone"
    monkeypatch.setenv("KUBECONFIG", str(missing))
    args = parse_args(["--node", "n1"])
    assert args.kubeconfig is None
    source = await start_source(
        api_client_factory=None, kubeconfig=args.kubeconfig, in_cluster=False,
        start_timeout_s=2.0,
    )  # fmt: skip
    view = source.view()
    assert not view.ok
    assert view.error is not None
    assert f"kubeconfig {missing}: no such file (named by $KUBECONFIG)" in view.error


async def test_in_cluster_without_a_service_account_reports_and_does_not_raise(
    start_source: StartSource, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    source = await start_source(api_client_factory=None, in_cluster=True, start_timeout_s=2.0)
    view = source.view()
    assert not view.ok
    assert view.allotments == ()
    assert view.error is not None
    assert view.error.startswith("Kubernetes API:")


def test_node_name_is_required() -> None:
    with pytest.raises(ValueError, match="NODE_NAME"):
        KubePodSource("")


async def test_pods_holding_mig_instances_are_named_for_their_processes(
    kube_api: KubeApiDouble, start_source: StartSource
) -> None:
    """A pod bound here asking MIG instances (`nvidia.com/mig-<P>`) or whole cards with no
    vGPU allotted (`nvidia.com/gpu`, a single-strategy node's instances) gets no allotment,
    but its containers are who a process on a MIG instance may belong to; a vGPU pod's, a
    Pending pod's and another node's are not."""
    mig = kube_api.add_pod(
        objects.pod(
            "tune",
            node=NODE,
            containers=[
                objects.container("worker", limits={"nvidia.com/mig-1g.10gb": 1}),
                objects.container("log"),
            ],
        )
    )
    plain = objects.container("main", limits={"nvidia.com/gpu": 1})
    kube_api.add_pod(objects.pod("single", node=NODE, containers=[plain]))
    kube_api.add_pod(hami_pod("hami", "GPU-aaa,NVIDIA,4096,30:;"))
    waiting = [objects.container("w", limits={"nvidia.com/mig-1g.10gb": 1})]
    kube_api.add_pod(objects.pod("waiting", phase="Pending", containers=waiting))
    kube_api.add_pod(objects.pod("away", node="gpu-node-2", containers=waiting))

    source = await start_source()

    view = source.view()
    assert {(a.pod, a.container) for a in view.allotments} == {("hami", "main")}
    assert {(c.pod, c.container) for c in view.mig_containers} == {
        ("tune", "worker"),
        ("single", "main"),
    }
    (worker,) = [c for c in view.mig_containers if c.pod == "tune"]
    assert worker.pod_uid == mig["metadata"]["uid"]
    assert worker.container_id == container_id("default", "tune", "worker")
