"""parse_pod on realistic pod objects of each dialect (fixtures in pods/)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from advisor.core.model import Request
from advisor.core.profiles import profile_for
from advisor.podspec import AllocatedCard, ContainerGpu, PodGpu, parse_pod

PODS = Path(__file__).parent / "pods"


def load(name: str) -> dict[str, Any]:
    pod: dict[str, Any] = json.loads((PODS / f"{name}.json").read_text())
    return pod


def parsed(obj: object) -> PodGpu:
    pod = parse_pod(obj)
    assert pod is not None
    return pod


@pytest.mark.parametrize("path", sorted(PODS.glob("*.json")), ids=lambda p: p.stem)
def test_fixtures_are_valid_pod_objects(path: Path) -> None:
    kubernetes_validate.validate(json.loads(path.read_text()), "1.30.0", strict=True)


def test_cce_pending_pod() -> None:
    pod = parsed(load("cce_pending"))
    assert pod.key == "default/infer-b-7c9d"
    assert pod.uid == "6b1e0d7e-1f1c-4f44-8d49-1b7e3f0c2a11"
    assert (pod.node, pod.phase, pod.priority) == (None, "Pending", 100)
    assert pod.owner == "ReplicaSet/default/infer-b-7c9d5f"
    assert pod.created == "2024-05-01T10:00:00Z"
    assert pod.dialect == "cce"
    assert pod.request == Request(gpus=2, memory_mib=64 * 128, core_percent=20)
    assert pod.containers == (
        ContainerGpu(name="infer", container_id=None, request=pod.request, allocated=()),
    )
    assert pod.problems == ()
    assert profile_for("cce").request_problem(pod.request) is None


def test_cce_running_pod_takes_cards_from_gpu_index() -> None:
    pod = parsed(load("cce_running"))
    assert (pod.node, pod.phase, pod.owner) == ("gpu-node-1", "Running", "StatefulSet/ml/train-a")
    assert pod.request == Request(gpus=1, memory_mib=96 * 128)  # no label: one card
    (train,) = pod.containers
    assert train.container_id == "4f1b2c3d4e5f60718293a4b5c6d7e8f9"
    # The annotation holds only indices; per-card values are the even split of the request.
    assert train.allocated == (AllocatedCard(card="0", memory_mib=12288, core_percent=0),)
    assert pod.annotations["scheduling.k8s.io/group-name"] == "train-a"
    assert pod.problems == ()


def test_cce_two_cards_split_evenly() -> None:
    obj = load("cce_pending")
    obj["metadata"]["annotations"] = {"volcano.sh/gpu-index": "3,1"}
    (infer,) = parsed(obj).containers
    assert infer.allocated == (
        AllocatedCard(card="3", memory_mib=4096, core_percent=10),
        AllocatedCard(card="1", memory_mib=4096, core_percent=10),
    )


def test_cce_uneven_split_leaves_per_card_values_unknown() -> None:
    obj = load("cce_pending")
    obj["metadata"]["labels"]["volcano.sh/gpu-num"] = "3"
    obj["metadata"]["annotations"] = {"volcano.sh/gpu-index": "0,1,2"}
    pod = parsed(obj)
    assert pod.request == Request(gpus=3, memory_mib=8192, core_percent=20)
    assert pod.containers[0].allocated[0] == AllocatedCard("0", None, None)
    assert pod.problems == ()  # even-split rules are request_problem's business
    assert profile_for("cce").request_problem(pod.request) is not None


def test_volcano_vgpu_running_pod_totals_are_per_card_times_cards() -> None:
    pod = parsed(load("volcano_vgpu_running"))
    assert pod.dialect == "volcano-vgpu"
    assert pod.request == Request(gpus=2, memory_mib=16000, core_percent=100)
    assert pod.owner is None
    (worker,) = pod.containers
    assert worker.container_id == "0123456789abcdef"
    assert worker.allocated == (
        AllocatedCard("GPU-5b3a3c1e-7d8e-4f9a-b0c1-d2e3f4a5b6c7", 8000, 50),
        AllocatedCard("GPU-9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a", 8000, 50),
    )
    assert pod.problems == ()


def test_volcano_vgpu_pending_pod() -> None:
    pod = parsed(load("volcano_vgpu_pending"))
    assert pod.request == Request(gpus=1, memory_mib=3000, core_percent=0)
    assert pod.containers[0].allocated == ()
    assert pod.problems == ()


def test_hami_running_pod_aligns_allocation_past_init_and_sidecar() -> None:
    pod = parsed(load("hami_running"))
    assert pod.dialect == "hami"
    assert pod.owner == "Job/team-a/trainer"
    assert [c.name for c in pod.containers] == ["trainer"]  # sidecar and init ignored
    (trainer,) = pod.containers
    assert trainer.container_id == "2222"  # cri-o:// stripped
    assert trainer.request == Request(gpus=2, memory_mib=8192, core_percent=60)
    assert [card.card for card in trainer.allocated] == [
        "GPU-aaaa1111-2222-3333-4444-555566667777",
        "GPU-bbbb1111-2222-3333-4444-555566667777",
    ]
    assert {(c.memory_mib, c.core_percent) for c in trainer.allocated} == {(4096, 30)}
    assert pod.request == trainer.request
    assert pod.problems == ()


def test_hami_pending_pod() -> None:
    pod = parsed(load("hami_pending"))
    assert pod.request == Request(gpus=1, memory_mib=10240)
    assert (pod.node, pod.phase) == (None, "Pending")
    assert pod.problems == ()


def test_cpu_only_pod_is_not_a_gpu_pod() -> None:
    assert parse_pod(load("cpu_only")) is None


def test_zero_gpu_request_is_not_a_gpu_container() -> None:
    obj = load("cpu_only")
    obj["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] = "0"
    assert parse_pod(obj) is None


def test_init_containers_asking_gpus_are_ignored() -> None:
    obj = load("cpu_only")
    obj["spec"]["initContainers"] = [
        {"name": "warmup", "resources": {"limits": {"nvidia.com/gpu": "1"}}}
    ]
    assert parse_pod(obj) is None


def test_requests_are_read_when_limits_lack_the_resource() -> None:
    obj = load("hami_pending")
    resources = obj["spec"]["containers"][0]["resources"]
    resources["requests"] = {"nvidia.com/gpumem": "2048", "nvidia.com/gpucores": "25"}
    resources["limits"] = {"nvidia.com/gpu": "2", "nvidia.com/gpumem": "4096"}
    pod = parsed(obj)
    assert pod.request == Request(gpus=2, memory_mib=8192, core_percent=50)


def test_quantities_with_suffixes_and_json_integers() -> None:
    obj = load("hami_pending")
    obj["spec"]["containers"][0]["resources"]["limits"] = {
        "nvidia.com/gpu": 2,
        "nvidia.com/gpumem": "4Ki",
    }
    assert parsed(obj).request == Request(gpus=2, memory_mib=8192)


def test_memory_alone_means_one_card() -> None:
    obj = load("volcano_vgpu_pending")
    obj["spec"]["containers"][0]["resources"]["limits"] = {"volcano.sh/vgpu-memory": "1024"}
    assert parsed(obj).request == Request(gpus=1, memory_mib=1024)


def hami_container(name: str, gpus: int, mem: int, cores: int = 0) -> dict[str, Any]:
    limits = {"nvidia.com/gpu": str(gpus), "nvidia.com/gpumem": str(mem)}
    if cores:
        limits["nvidia.com/gpucores"] = str(cores)
    return {"name": name, "image": "x", "resources": {"limits": limits}}


def test_several_containers_with_same_card_count_add_up() -> None:
    obj = load("hami_pending")
    obj["spec"]["containers"] = [
        hami_container("a", 2, 1024, 10),
        {"name": "sidecar", "image": "x"},
        hami_container("b", 2, 2048, 20),
    ]
    obj["metadata"]["annotations"] = {
        "hami.io/vgpu-devices-allocated": "U1,NVIDIA,1024,10:U2,NVIDIA,1024,10:;;"
        "U1,NVIDIA,2048,20:U2,NVIDIA,2048,20:;"
    }
    pod = parsed(obj)
    assert [c.name for c in pod.containers] == ["a", "b"]
    assert pod.request == Request(gpus=2, memory_mib=2 * 1024 + 2 * 2048, core_percent=60)
    assert [c.card for c in pod.containers[1].allocated] == ["U1", "U2"]
    assert pod.containers[1].allocated[0].memory_mib == 2048
    assert pod.problems == ()


def test_volcano_allocation_lists_only_gpu_containers() -> None:
    obj = load("volcano_vgpu_pending")
    worker = obj["spec"]["containers"][0]
    obj["spec"]["containers"] = [{"name": "proxy", "image": "envoy"}, worker]
    obj["metadata"]["annotations"] = {"volcano.sh/vgpu-ids-new": "GPU-1,NVIDIA,3000,0:"}
    pod = parsed(obj)
    assert pod.containers[0].allocated == (AllocatedCard("GPU-1", 3000, 0),)
    assert pod.problems == ()


def test_cce_containers_share_the_pod_label_and_cards() -> None:
    obj = load("cce_running")
    train = obj["spec"]["containers"][0]
    helper = copy.deepcopy(train)
    helper["name"] = "helper"
    helper["resources"]["limits"] = {"volcano.sh/gpu-mem.128Mi": "32"}
    obj["spec"]["containers"].append(helper)
    obj["metadata"]["labels"]["volcano.sh/gpu-num"] = "2"
    obj["metadata"]["annotations"]["volcano.sh/gpu-index"] = "0,1"
    pod = parsed(obj)
    assert pod.request == Request(gpus=2, memory_mib=128 * 128)
    assert pod.containers[1].container_id is None  # not in containerStatuses
    assert [c.memory_mib for c in pod.containers[1].allocated] == [2048, 2048]
    assert pod.problems == ()


def test_owner_is_first_controller_reference() -> None:
    obj = load("cce_pending")
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "1"},
        {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "2", "controller": True},
        {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "name": "r",
            "uid": "3",
            "controller": True,
        },
    ]
    assert parsed(obj).owner == "Job/default/j"
    del obj["metadata"]["ownerReferences"][1:]
    assert parsed(obj).owner is None


def test_annotations_are_read_only_and_defaults_fill_gaps() -> None:
    obj = load("hami_pending")
    del obj["status"]
    del obj["spec"]["priority"]
    pod = parsed(obj)
    assert (pod.phase, pod.priority) == ("Unknown", 0)
    with pytest.raises(TypeError):
        pod.annotations["x"] = "y"  # type: ignore[index]
