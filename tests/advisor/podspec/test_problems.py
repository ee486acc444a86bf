"""Every way a pod object can be unreadable becomes a problem that names the field."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from advisor.core.model import Request
from advisor.podspec import PodGpu, parse_pod

Pod = dict[str, Any]


def base(limits: dict[str, Any] | None = None, **labels: str) -> Pod:
    return {
        "metadata": {
            "name": "train",
            "namespace": "ml",
            "uid": "u-1",
            "labels": dict(labels),
            "annotations": {},
        },
        "spec": {
            "nodeName": "n1",
            "containers": [
                {"name": "train", "resources": {"limits": limits or {"nvidia.com/gpumem": "1024"}}}
            ],
        },
        "status": {"phase": "Running"},
    }


def parsed(obj: Pod) -> PodGpu:
    pod = parse_pod(obj)
    assert pod is not None
    return pod


def limits_of(obj: Pod) -> dict[str, Any]:
    limits: dict[str, Any] = obj["spec"]["containers"][0]["resources"]["limits"]
    return limits


CCE_MEM = "volcano.sh/gpu-mem.128Mi"


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("abc", "container train: volcano.sh/gpu-mem.128Mi 'abc' is not an integer"),
        ("-8", "container train: volcano.sh/gpu-mem.128Mi '-8' is negative"),
        ("500m", "container train: volcano.sh/gpu-mem.128Mi '500m' is not an integer"),
        ("1e999999999", "container train: volcano.sh/gpu-mem.128Mi '1e999999999' is out of range"),
        (
            "9223372036854775808",
            "container train: volcano.sh/gpu-mem.128Mi '9223372036854775808' is out of range",
        ),
        (2.5, "container train: volcano.sh/gpu-mem.128Mi 2.5 is not an integer"),
        (True, "container train: volcano.sh/gpu-mem.128Mi True is not an integer"),
        ({"x": 1}, "container train: volcano.sh/gpu-mem.128Mi {'x': 1} is not an integer"),
        ("١٢", "container train: volcano.sh/gpu-mem.128Mi '١٢' is not an integer"),
    ],
)
def test_unreadable_quantity(value: object, problem: str) -> None:
    pod = parsed(base({CCE_MEM: value}))
    assert pod.problems == (problem,)
    assert pod.containers[0].request is None
    assert pod.request is None


def test_long_garbage_is_cut_short_in_the_message() -> None:
    pod = parsed(base({CCE_MEM: "x" * 10_000}))
    (problem,) = pod.problems
    assert len(problem) < 120
    assert problem.endswith("... is not an integer")


@pytest.mark.parametrize(
    ("label", "problem"),
    [
        ("two", "label volcano.sh/gpu-num 'two' is not an integer"),
        ("-2", "label volcano.sh/gpu-num '-2' is negative"),
        ("1.5", "label volcano.sh/gpu-num '1.5' is not an integer"),
    ],
)
def test_unreadable_cce_card_count(label: str, problem: str) -> None:
    pod = parsed(base({CCE_MEM: "8"}, **{"volcano.sh/gpu-num": label}))
    assert pod.problems == (problem,)
    assert pod.request is None


def test_card_count_label_is_ignored_outside_cce() -> None:
    pod = parsed(base({"nvidia.com/gpumem": "1024"}, **{"volcano.sh/gpu-num": "two"}))
    assert pod.problems == ()


@pytest.mark.parametrize(
    ("limits", "problem"),
    [
        (
            {"volcano.sh/gpu-core.percentage": "50"},
            "container train: volcano.sh/gpu-mem.128Mi is missing",
        ),
        (
            {"volcano.sh/vgpu-cores": "50"},
            "container train: volcano.sh/vgpu-number and volcano.sh/vgpu-memory are both "
            "missing, so Volcano reads no card request",
        ),
        (
            {"volcano.sh/vgpu-number": "2", "volcano.sh/vgpu-memory-percentage": "0"},
            "container train: volcano.sh/vgpu-memory-percentage '0' is outside 1..100: "
            "Volcano would give it no memory",
        ),
        (
            {"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory-percentage": "150"},
            "container train: volcano.sh/vgpu-memory-percentage '150' is outside 1..100: "
            "Volcano would give it more than a card, so never place it",
        ),
        (
            {"nvidia.com/gpu": "1", "nvidia.com/gpumem-percentage": "half"},
            "container train: nvidia.com/gpumem-percentage 'half' is not an integer",
        ),
    ],
)
def test_memory_the_scheduler_cannot_read(limits: dict[str, str], problem: str) -> None:
    pod = parsed(base(limits))
    assert pod.problems == (problem,)
    assert pod.request is None


def test_unreadable_share_still_reports_bad_core() -> None:
    pod = parsed(
        base(
            {"nvidia.com/gpu": "1", "nvidia.com/gpumem-percentage": "x", "nvidia.com/gpucores": "y"}
        )
    )
    assert pod.problems == (
        "container train: nvidia.com/gpumem-percentage 'x' is not an integer",
        "container train: nvidia.com/gpucores 'y' is not an integer",
    )


def test_one_container_in_two_dialects_is_read_in_the_first() -> None:
    pod = parsed(base({CCE_MEM: "8", "nvidia.com/gpu": "1"}))
    assert pod.dialect == "cce"
    assert pod.problems == ("container train asks in several dialects (cce, hami); read as cce",)
    assert pod.request == Request(gpus=1, memory_mib=1024)


def test_mixed_dialects_in_one_pod() -> None:
    obj = base({CCE_MEM: "8"})
    obj["spec"]["containers"].append(
        {"name": "b", "resources": {"limits": {"nvidia.com/gpumem": "512"}}}
    )
    pod = parsed(obj)
    assert pod.dialect == "cce"
    assert [c.request for c in pod.containers] == [
        Request(gpus=1, memory_mib=1024),
        Request(gpus=1, memory_mib=512),
    ]
    assert pod.request is None
    assert pod.problems == ("pod mixes dialects (cce, hami); read as cce, not modelled",)


def test_different_card_counts_are_not_modelled() -> None:
    obj = base({"nvidia.com/gpu": "2", "nvidia.com/gpumem": "1024"})
    obj["spec"]["containers"].append(
        {"name": "b", "resources": {"limits": {"nvidia.com/gpumem": "512"}}}
    )
    pod = parsed(obj)
    assert pod.request is None
    assert pod.problems == ("2 GPU containers with different card counts are not modelled",)


def test_one_unreadable_container_leaves_the_pod_without_request() -> None:
    obj = base({"nvidia.com/gpumem": "1024"})
    obj["spec"]["containers"].append(
        {"name": "b", "resources": {"limits": {"nvidia.com/gpumem": "lots"}}}
    )
    pod = parsed(obj)
    assert pod.containers[0].request == Request(gpus=1, memory_mib=1024)
    assert pod.request is None
    assert pod.problems == ("container b: nvidia.com/gpumem 'lots' is not an integer",)


HAMI = "hami.io/vgpu-devices-allocated"
VOLCANO = "volcano.sh/vgpu-ids-new"
INDEX = "volcano.sh/gpu-index"


@pytest.mark.parametrize(
    ("limits", "key", "value", "problem"),
    [
        (
            {"nvidia.com/gpumem": "1024"},
            HAMI,
            "GPU-a,NVIDIA,1024:",
            f"annotation {HAMI}: card entry 'GPU-a,NVIDIA,1024' has 3 fields, "
            "expected UUID,Type,memMiB,cores",
        ),
        (
            {"nvidia.com/gpumem": "1024"},
            HAMI,
            "GPU-a,NVIDIA,lots,0:",
            f"annotation {HAMI}: card entry 'GPU-a,NVIDIA,lots,0': 'lots' is not an integer",
        ),
        (
            {"nvidia.com/gpumem": "1024"},
            HAMI,
            ",NVIDIA,1024,0:",
            f"annotation {HAMI}: card entry ',NVIDIA,1024,0' has an empty UUID",
        ),
        (
            {"volcano.sh/vgpu-memory": "1024"},
            VOLCANO,
            "A,NVIDIA,1024,0:;B,NVIDIA,1024,0:",
            f"annotation {VOLCANO}: 2 container entries do not match the pod's 1 container, "
            "1 of them asking for GPUs",
        ),
        (
            {CCE_MEM: "8"},
            INDEX,
            "0,x",
            f"annotation {INDEX}: 'x' is not an integer",
        ),
        ({CCE_MEM: "8"}, INDEX, "1,1", f"annotation {INDEX}: card 1 is listed twice in '1,1'"),
        ({CCE_MEM: "8"}, INDEX, " , ", f"annotation {INDEX}: ' , ' lists no card"),
        (
            {CCE_MEM: "8"},
            INDEX,
            "0,1",
            f"container train: annotation {INDEX} lists 2 cards, the request asks 1",
        ),
        (
            {"nvidia.com/gpu": "2", "nvidia.com/gpumem": "1024"},
            HAMI,
            "GPU-a,NVIDIA,1024,0:",
            f"container train: annotation {HAMI} lists 1 card, the request asks 2",
        ),
    ],
)
def test_unreadable_allocation(limits: dict[str, str], key: str, value: str, problem: str) -> None:
    obj = base(limits)
    obj["metadata"]["annotations"][key] = value
    pod = parsed(obj)
    assert pod.problems == (problem,)
    assert pod.containers[0].request is not None  # the request itself is still read


def test_allocation_of_another_dialect_is_not_read() -> None:
    obj = base({"nvidia.com/gpumem": "1024"})
    obj["metadata"]["annotations"][INDEX] = "garbage"
    pod = parsed(obj)
    assert pod.problems == ()
    assert pod.containers[0].allocated == ()


def test_allocation_handing_cards_to_a_non_gpu_container_is_a_problem() -> None:
    obj = base({"nvidia.com/gpumem": "1024"})
    obj["spec"]["containers"].insert(0, {"name": "sidecar"})
    # One entry per container, but the first (the sidecar's) holds cards.
    obj["metadata"]["annotations"][HAMI] = "A,NVIDIA,1024,0:;B,NVIDIA,1024,0:;"
    pod = parsed(obj)
    assert pod.problems == (
        f"annotation {HAMI}: 2 container entries do not match the pod's 2 containers, "
        "1 of them asking for GPUs",
    )
    assert pod.containers[0].allocated == ()


def test_trailing_empty_entries_are_tolerated() -> None:
    obj = base({"nvidia.com/gpumem": "1024"})
    obj["spec"]["containers"].append({"name": "sidecar"})
    obj["metadata"]["annotations"][HAMI] = "A,NVIDIA,1024,0:;;;;"
    pod = parsed(obj)
    assert pod.problems == ()
    assert [c.card for c in pod.containers[0].allocated] == ["A"]


def set_path(obj: Pod, path: str, value: object) -> None:
    *parents, last = path.split(".")
    for part in parents:
        obj = obj[part]
    obj[last] = value


@pytest.mark.parametrize(
    ("path", "value", "problem"),
    [
        ("metadata.name", None, "metadata.name is missing"),
        ("metadata.namespace", 7, "metadata.namespace 7 is not a string"),
        ("metadata.uid", None, "metadata.uid is missing"),
        (
            "metadata.creationTimestamp",
            1714557600,
            "metadata.creationTimestamp 1714557600 is not a string",
        ),
        ("metadata.labels", "app=x", "metadata.labels is not an object"),
        ("metadata.annotations", ["a"], "metadata.annotations is not an object"),
        ("metadata.annotations", {"a": 1}, "metadata.annotations['a'] 1 is not a string"),
        ("metadata.ownerReferences", {"kind": "Job"}, "metadata.ownerReferences is not a list"),
        (
            "metadata.ownerReferences",
            [{"controller": True, "name": "j"}],
            "metadata.ownerReferences[0].kind is missing",
        ),
        ("spec.nodeName", ["n1"], "spec.nodeName ['n1'] is not a string"),
        ("spec.priority", "high", "spec.priority 'high' is not an integer"),
        ("spec.priority", True, "spec.priority True is not an integer"),
        ("status", "Running", "status is not an object"),
        ("status.phase", 3, "status.phase 3 is not a string"),
        ("status.containerStatuses", {}, "status.containerStatuses is not a list"),
        ("status.containerStatuses", [None], "status.containerStatuses[0] is not an object"),
        (
            "status.containerStatuses",
            [{"containerID": "x"}],
            "status.containerStatuses[0].name is missing",
        ),
        (
            "status.containerStatuses",
            [{"name": "train", "containerID": 5}],
            "status.containerStatuses[0].containerID 5 is not a string",
        ),
    ],
)
def test_unreadable_pod_field(path: str, value: object, problem: str) -> None:
    obj = base()
    set_path(obj, path, value)
    pod = parsed(obj)
    assert pod.problems == (problem,)
    assert pod.request == Request(gpus=1, memory_mib=1024)


def test_unreadable_field_falls_back_to_default() -> None:
    obj = base()
    obj["spec"]["priority"] = "high"
    obj["status"]["phase"] = 3
    obj["metadata"]["name"] = None
    pod = parsed(obj)
    assert (pod.priority, pod.phase, pod.name, pod.key) == (0, "Unknown", "", "ml/")


Mutation = Callable[[Pod], None]


def _containers_not_list(obj: Pod) -> None:
    obj["spec"]["containers"] = {"train": {}}


def _junk_container(obj: Pod) -> None:
    obj["spec"]["containers"].insert(0, "nginx")


def _nameless(obj: Pod) -> None:
    del obj["spec"]["containers"][0]["name"]


def _bad_resources(obj: Pod) -> None:
    obj["spec"]["containers"].append({"name": "web", "resources": "lots"})


def _bad_requests(obj: Pod) -> None:
    obj["spec"]["containers"][0]["resources"]["requests"] = ["cpu"]


@pytest.mark.parametrize(
    ("mutate", "problems", "gpu_pod"),
    [
        (_containers_not_list, ("spec.containers is not a list",), False),
        (_junk_container, ("spec.containers[0] is not an object",), True),
        (_nameless, ("spec.containers[0].name is missing",), True),
        (_bad_resources, ("container web: resources is not an object",), True),
        (_bad_requests, ("container train: resources.requests is not an object",), True),
    ],
)
def test_unreadable_containers(mutate: Mutation, problems: tuple[str, ...], gpu_pod: bool) -> None:
    obj = base()
    mutate(obj)
    pod = parse_pod(obj)
    if not gpu_pod:
        assert pod is None  # nothing readable asks for a GPU
        return
    assert pod is not None
    assert pod.problems == problems


def test_nameless_container_is_named_by_position_in_problems() -> None:
    obj = base({"nvidia.com/gpumem": "x"})
    del obj["spec"]["containers"][0]["name"]
    pod = parsed(obj)
    assert pod.containers[0].name == ""
    assert pod.problems == (
        "spec.containers[0].name is missing",
        "container #0: nvidia.com/gpumem 'x' is not an integer",
    )


@pytest.mark.parametrize("obj", [None, "pod", 42, [base()], {"metadata": "x"}, {}])
def test_not_a_gpu_pod(obj: object) -> None:
    assert parse_pod(obj) is None
