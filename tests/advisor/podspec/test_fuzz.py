"""parse_pod never raises: random objects, and well-shaped pods with garbage in every slot."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.core.model import Request
from advisor.podspec import AllocatedCard, ContainerGpu, PodGpu, parse_pod
from tests.fastloop import examples

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30),
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.one_of(st.text(max_size=10), st.integers()), inner, max_size=4)
    ),
    max_leaves=20,
)

RESOURCE_KEYS = [
    "volcano.sh/gpu-mem.128Mi",
    "volcano.sh/gpu-core.percentage",
    "volcano.sh/vgpu-number",
    "volcano.sh/vgpu-memory",
    "volcano.sh/vgpu-cores",
    "volcano.sh/vgpu-memory-percentage",
    "nvidia.com/gpu",
    "nvidia.com/gpumem",
    "nvidia.com/gpucores",
    "nvidia.com/gpumem-percentage",
    "cpu",
]
ANNOTATION_KEYS = [
    "volcano.sh/gpu-index",
    "volcano.sh/vgpu-ids-new",
    "hami.io/vgpu-devices-allocated",
    "other",
]
quantities = st.one_of(
    st.integers(0, 64).map(str),
    st.sampled_from(["1k", "2Ki", "500m", "-1", "1e3", "1e99999", "", " 8 ", "x"]),
    json_values,
)
hami_cards = st.lists(
    st.tuples(st.sampled_from(["GPU-a", "GPU-b", ""]), st.integers(0, 4096), st.integers(0, 100)),
    max_size=3,
).map(lambda cards: "".join(f"{u},NVIDIA,{m},{c}:" for u, m, c in cards))
allocation_text = st.one_of(
    st.lists(hami_cards, max_size=4).map(";".join),
    st.lists(hami_cards, max_size=4).map(lambda entries: "".join(e + ";" for e in entries)),
    st.text(alphabet="0123456789,:; GPU-abNVIDA", max_size=60),
)
card_lists = st.lists(st.integers(-1, 9).map(str), max_size=4).map(",".join)


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A well-typed value most of the time, any JSON value otherwise."""
    return st.one_of(*[strategy] * 5, json_values)


containers = st.fixed_dictionaries(
    {},
    optional={
        "name": maybe(st.sampled_from(["a", "b", "train", ""])),
        "resources": maybe(
            st.fixed_dictionaries(
                {},
                optional={
                    "limits": maybe(st.dictionaries(st.sampled_from(RESOURCE_KEYS), quantities)),
                    "requests": maybe(st.dictionaries(st.sampled_from(RESOURCE_KEYS), quantities)),
                },
            )
        ),
    },
)
DIALECT_KEYS = [key for key in RESOURCE_KEYS if key != "cpu"]
gpu_containers = st.fixed_dictionaries(
    {
        "name": st.sampled_from(["a", "b", "train"]),
        "resources": st.fixed_dictionaries(
            {
                "limits": st.dictionaries(
                    st.sampled_from(DIALECT_KEYS), st.integers(1, 64).map(str), min_size=1
                ).flatmap(
                    lambda limits: st.dictionaries(
                        st.sampled_from(RESOURCE_KEYS), quantities, max_size=2
                    ).map(lambda extra: {**limits, **extra})
                )
            },
            optional={"requests": st.dictionaries(st.sampled_from(RESOURCE_KEYS), quantities)},
        ),
    }
)
pods = st.fixed_dictionaries(
    {
        "metadata": maybe(
            st.fixed_dictionaries(
                {},
                optional={
                    "name": maybe(st.text(max_size=10)),
                    "namespace": maybe(st.text(max_size=10)),
                    "uid": maybe(st.text(max_size=10)),
                    "creationTimestamp": json_values,
                    "labels": maybe(
                        st.dictionaries(
                            st.sampled_from(["volcano.sh/gpu-num", "app"]),
                            maybe(st.integers(-2, 9).map(str)),
                        )
                    ),
                    "annotations": maybe(
                        st.dictionaries(
                            st.sampled_from(ANNOTATION_KEYS),
                            maybe(st.one_of(allocation_text, card_lists)),
                        )
                    ),
                    "ownerReferences": maybe(
                        st.lists(
                            maybe(
                                st.fixed_dictionaries(
                                    {"controller": maybe(st.booleans())},
                                    optional={"kind": json_values, "name": json_values},
                                )
                            ),
                            max_size=3,
                        )
                    ),
                },
            )
        ),
        "spec": maybe(
            st.fixed_dictionaries(
                {
                    "containers": maybe(
                        st.lists(
                            st.one_of(gpu_containers, maybe(containers)), min_size=1, max_size=4
                        )
                    )
                },
                optional={
                    "initContainers": maybe(st.lists(maybe(containers), max_size=2)),
                    "nodeName": json_values,
                    "priority": json_values,
                },
            )
        ),
        "status": maybe(
            st.fixed_dictionaries(
                {},
                optional={
                    "phase": json_values,
                    "containerStatuses": maybe(
                        st.lists(
                            maybe(
                                st.fixed_dictionaries(
                                    {
                                        "name": maybe(st.sampled_from(["a", "b", "train"])),
                                        "containerID": maybe(
                                            st.sampled_from(["containerd://x", "docker://", ""])
                                        ),
                                    }
                                )
                            ),
                            max_size=3,
                        )
                    ),
                },
            )
        ),
    }
)


def assert_well_formed(pod: PodGpu | None) -> None:
    if pod is None:
        return
    assert isinstance(pod, PodGpu)
    hash(pod)
    for text in (pod.namespace, pod.name, pod.uid, pod.phase, pod.dialect, pod.key):
        assert isinstance(text, str)
    assert pod.dialect in ("cce", "volcano-vgpu", "hami")
    assert isinstance(pod.priority, int)
    assert all(isinstance(p, str) and p for p in pod.problems)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in pod.annotations.items())
    assert pod.containers
    requests = [pod.request] + [c.request for c in pod.containers]
    for request in requests:
        assert request is None or isinstance(request, Request)
        if request is not None:
            assert min(request.gpus, request.memory_mib, request.core_percent) >= 0
    for container in pod.containers:
        assert isinstance(container, ContainerGpu)
        assert container.container_id is None or isinstance(container.container_id, str)
        assert all(isinstance(card, AllocatedCard) for card in container.allocated)
        if container.request is None:
            assert pod.request is None  # never silently unreadable
    if pod.request is None:
        assert pod.problems


@settings(max_examples=examples(300))
@given(json_values)
def test_any_json_value(obj: object) -> None:
    assert_well_formed(parse_pod(obj))


@settings(max_examples=examples(500))
@given(pods)
def test_pod_shaped_garbage(obj: dict[str, Any]) -> None:
    assert_well_formed(parse_pod(obj))


DIALECT_SHAPES = {
    "cce": (["volcano.sh/gpu-mem.128Mi", "volcano.sh/gpu-core.percentage"], "volcano.sh/gpu-index"),
    "volcano-vgpu": (
        ["volcano.sh/vgpu-number", "volcano.sh/vgpu-memory", "volcano.sh/vgpu-cores"],
        "volcano.sh/vgpu-ids-new",
    ),
    "hami": (
        ["nvidia.com/gpu", "nvidia.com/gpumem", "nvidia.com/gpucores"],
        "hami.io/vgpu-devices-allocated",
    ),
}


@st.composite
def allocated_pods(draw: st.DrawFn) -> dict[str, Any]:
    """One dialect, its allocation annotation, sidecars and init containers around it."""
    dialect = draw(st.sampled_from(sorted(DIALECT_SHAPES)))
    keys, annotation = DIALECT_SHAPES[dialect]
    spec_containers: list[Any] = []
    for i in range(draw(st.integers(1, 4))):
        if draw(st.booleans()):
            limits = {key: draw(st.integers(0, 4).map(str) | quantities) for key in keys}
            spec_containers.append({"name": f"c{i}", "resources": {"limits": limits}})
        else:
            spec_containers.append({"name": f"c{i}"})
    value = draw(allocation_text if dialect != "cce" else card_lists | allocation_text)
    return {
        "metadata": {
            "name": "p",
            "namespace": "ns",
            "uid": "u",
            "labels": {"volcano.sh/gpu-num": draw(st.integers(0, 4).map(str))},
            "annotations": {annotation: value},
        },
        "spec": {
            "containers": spec_containers,
            "initContainers": [{"name": "init"}] * draw(st.integers(0, 2)),
        },
    }


@settings(max_examples=examples(500))
@given(allocated_pods())
def test_allocation_garbage(obj: dict[str, Any]) -> None:
    assert_well_formed(parse_pod(obj))
