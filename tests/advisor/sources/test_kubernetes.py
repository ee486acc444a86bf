"""The Kubernetes source: the real kubernetes_asyncio client against the local API double."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.commands import InputError
from advisor.core.model import Request
from advisor.sources.assemble import assemble
from advisor.sources.kubernetes import read_kubernetes
from advisor.sources.values import KubeNode
from tests.advisor.sources.builders import cce_pod
from tests.kubeapi import objects
from tests.kubeapi.server import KubeApiDouble

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
    assert state.nodes == (
        KubeNode("n1", None, True),
        KubeNode("n2", "cordoned", False),
        KubeNode("n3", "not Ready", False),
    )
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
    kube_api.fail_next(1, status_code=500, target="list")
    with pytest.raises(InputError) as caught:
        await read_kubernetes(str(config))
    message = str(caught.value)
    assert message.startswith(f"Kubernetes API {kube_api.url}: list ")
    assert "HTTP 500 InternalError injected fault" in message


async def test_forbidden(kube_api: KubeApiDouble, tmp_path: Path) -> None:
    config = kube_api.write_kubeconfig(tmp_path / "kubeconfig")
    kube_api.fail_next(2, status_code=403, target="list")
    with pytest.raises(InputError, match=r"HTTP 403 Forbidden"):
        await read_kubernetes(str(config))


async def test_unreachable_api(kube_api: KubeApiDouble, tmp_path: Path) -> None:
    config = kube_api.write_kubeconfig(tmp_path / "kubeconfig")
    await kube_api.go_down()
    with pytest.raises(InputError, match=rf"^Kubernetes API {kube_api.url}: cannot reach it: "):
        await read_kubernetes(str(config), timeout_s=5)


async def test_missing_kubeconfig(tmp_path: Path) -> None:
    path = tmp_path / "nope"
    with pytest.raises(InputError, match=rf"^Kubernetes: kubeconfig {path}: "):
        await read_kubernetes(str(path))
