"""KubePodSource under faults: expired watches, dropped connections, API errors and outages,
slow answers, bad credentials and malformed pods. The exporter must keep serving throughout."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kubernetes_asyncio.client import ApiClient, Configuration

from exporter.pods_kube import ApiError, KubePodSource, WatchExpired
from tests.exporter.kube_source import NODE, StartSource, source_for
from tests.fastloop import examples
from tests.kubeapi import objects
from tests.kubeapi.objects import JsonObject
from tests.kubeapi.server import KubeApiDouble
from tests.kubeapi.wait import eventually

pytestmark = pytest.mark.realservices  # the Kubernetes API double

pytest_plugins = ["tests.kubeapi.fixtures", "tests.exporter.kube_source"]

ALLOCATION = "hami.io/vgpu-devices-allocated"
HAMI_LIMITS = {"nvidia.com/gpu": 1, "nvidia.com/gpumem": 1024, "nvidia.com/gpucores": 10}


def gpu_pod(name: str, card: str = "GPU-aaa", *, node: str = NODE) -> JsonObject:
    return objects.pod(
        name,
        node=node,
        annotations={ALLOCATION: f"{card},NVIDIA,1024,10:;"},
        containers=[objects.container("main", limits=HAMI_LIMITS)],
    )


def pods(source: KubePodSource) -> dict[str, str]:
    return {a.pod: a.card for a in source.view().allotments}


def lists(api: KubeApiDouble) -> list[str | None]:
    """The resourceVersion each list asked for (None: a consistent read)."""
    return [
        r.query.get("resourceVersion")
        for r in api.requests
        if r.path == "/api/v1/pods" and not r.watch
    ]


async def test_expired_watch_relists_without_losing_updates(
    kube_api: KubeApiDouble, start_source: StartSource
) -> None:
    kube_api.add_pod(gpu_pod("a"))
    kube_api.add_pod(gpu_pod("b"))
    source = await start_source()
    await kube_api.wait_for_watches(1)
    # The watch ends; before the source comes back the world changes and the history is
    # compacted, so resuming from its resourceVersion answers 410 and only a relist helps.
    kube_api.end_watches()
    kube_api.add_pod(gpu_pod("c"))
    kube_api.delete_pod("default", "a")
    kube_api.modify_pod(
        "default",
        "b",
        lambda p: p["metadata"]["annotations"].update({ALLOCATION: "GPU-bbb,NVIDIA,1024,10:;"}),
    )
    kube_api.compact()
    await eventually(lambda: pods(source) == {"b": "GPU-bbb", "c": "GPU-aaa"})
    assert source.lists == 2
    assert lists(kube_api) == ["0", None]  # our version is gone: no stale cache read
    assert source.view().ok
    kube_api.add_pod(gpu_pod("d"))  # and it watches again from the new list
    await eventually(lambda: "d" in pods(source))


@pytest.mark.parametrize("as_http", [False, True], ids=["error-event", "http-410"])
async def test_410_mid_stream_or_on_connect_relists(
    kube_api: KubeApiDouble, start_source: StartSource, as_http: bool
) -> None:
    kube_api.watch_gone_as_http = as_http
    source = await start_source()
    await kube_api.wait_for_watches(1)
    if as_http:
        kube_api.end_watches()
        kube_api.add_pod(gpu_pod("a"))
        kube_api.compact()
    else:
        kube_api.add_pod(gpu_pod("a"))
        kube_api.expire_watches()  # ERROR event after the ADDED
    await eventually(lambda: source.lists == 2)
    await eventually(lambda: pods(source) == {"a": "GPU-aaa"})
    assert source.view().ok


async def test_dropped_watch_reconnects_and_catches_up(
    kube_api: KubeApiDouble, start_source: StartSource
) -> None:
    kube_api.add_pod(gpu_pod("a"))
    source = await start_source()
    await kube_api.wait_for_watches(1)
    seen = source.resource_version
    kube_api.drop_watches()
    kube_api.add_pod(gpu_pod("b"))
    kube_api.delete_pod("default", "a")
    await eventually(lambda: pods(source) == {"b": "GPU-aaa"})
    await eventually(lambda: source.view().ok)
    assert lists(kube_api) == ["0", seen]  # relisted, never back in time
    await kube_api.wait_for_watches(1)
    kube_api.add_pod(gpu_pod("c"))
    await eventually(lambda: set(pods(source)) == {"b", "c"})


async def test_a_version_the_server_cannot_serve_falls_back_to_a_consistent_list(
    kube_api: KubeApiDouble, start_source: StartSource
) -> None:
    source = await start_source()
    await kube_api.wait_for_watches(1)
    seen = source.resource_version
    kube_api.fail_next(1, status_code=504, target="list")  # "Too large resource version"
    kube_api.drop_watches()
    await eventually(lambda: source.lists == 2)
    assert lists(kube_api) == ["0", seen, None]
    assert source.view().ok


async def test_api_errors_keep_the_last_allotments_and_report_until_recovery(
    kube_api: KubeApiDouble, start_source: StartSource
) -> None:
    kube_api.add_pod(gpu_pod("a"))
    source = await start_source()
    await kube_api.wait_for_watches(1)
    kube_api.fail_next(10_000, status_code=500)
    kube_api.drop_watches()
    await eventually(lambda: "list failed: Kubernetes API 500" in (source.view().error or ""))
    view = source.view()
    assert not view.ok
    assert pods(source) == {"a": "GPU-aaa"}  # the last good ones, flagged stale
    failing = len(kube_api.requests)
    await eventually(lambda: len(kube_api.requests) >= failing + 3, what="keeps retrying")
    kube_api.clear_faults()
    kube_api.add_pod(gpu_pod("b"))
    await eventually(lambda: source.view().ok)
    assert set(pods(source)) == {"a", "b"}
    assert source.view().error is None


async def test_api_down_at_start_does_not_block_and_recovers(
    kube_api: KubeApiDouble, start_source: StartSource
) -> None:
    kube_api.add_pod(gpu_pod("a"))
    await kube_api.go_down()
    # start() returns after the first failed attempt, long before its own timeout.
    source = await asyncio.wait_for(start_source(start_timeout_s=600.0), 10)
    view = source.view()
    assert (view.ok, view.allotments) == (False, ())
    assert view.error is not None
    assert view.error.startswith("Kubernetes API:")
    await asyncio.sleep(0.1)
    await kube_api.come_up()
    await eventually(lambda: source.view().ok)
    assert pods(source) == {"a": "GPU-aaa"}


async def test_outage_while_running(kube_api: KubeApiDouble, start_source: StartSource) -> None:
    kube_api.add_pod(gpu_pod("a"))
    source = await start_source()
    await kube_api.wait_for_watches(1)
    await kube_api.go_down()
    await eventually(lambda: not source.view().ok)
    assert pods(source) == {"a": "GPU-aaa"}
    kube_api.delete_pod("default", "a")  # missed while down
    await kube_api.come_up()
    await eventually(lambda: source.view().ok)
    assert pods(source) == {}


async def test_slow_first_list_lets_start_return(
    kube_api: KubeApiDouble, start_source: StartSource
) -> None:
    kube_api.add_pod(gpu_pod("a"))
    kube_api.delay_s = 0.5
    source = await start_source(start_timeout_s=0.05)
    assert source.lists == 0  # start() returned while the list was still on its way
    view = source.view()
    assert not view.ok
    assert view.error == "no pod list from the Kubernetes API yet"
    await eventually(lambda: source.view().ok)
    assert pods(source) == {"a": "GPU-aaa"}


async def test_rejected_credentials_are_reloaded() -> None:
    token = ["expired"]
    made: list[ApiClient] = []

    async with KubeApiDouble(require_token="fresh") as api:

        def factory() -> ApiClient:
            config = Configuration(host=api.url, api_key={"BearerToken": token[0]})
            config.api_key_prefix = {"BearerToken": "Bearer"}
            made.append(ApiClient(config))
            return made[-1]

        source = source_for(api, api_client_factory=factory)
        try:
            await source.start()
            error = source.view().error
            assert error is not None
            assert "401" in error
            token[0] = "fresh"  # e.g. a rotated service account token
            await eventually(lambda: source.view().ok)
            assert len(made) >= 2
        finally:
            await source.close()
        await eventually(lambda: api.open_watches == 0)


async def test_close_stops_watching(kube_api: KubeApiDouble) -> None:
    source = source_for(kube_api)
    await source.start()
    await kube_api.wait_for_watches(1)
    await source.close()
    await eventually(lambda: kube_api.open_watches == 0)
    seen = len(kube_api.requests)
    await asyncio.sleep(0.1)
    assert len(kube_api.requests) == seen


# -- malformed pods never stop the source -----------------------------------------------

_PIECES = st.sampled_from(
    ["GPU-a", "GPU-b", ",", ":", ";", "NVIDIA", "1024", "-5", "30", "", " ", "0", "x", "1e3"]
)
_NUMBER = st.sampled_from(["1024", "512", "30", "0"]) | st.sampled_from(
    ["-5", "x", "", "1e3", " 7 "]
)
_CARD_ENTRY = st.builds(
    "{},{},{},{}".format,
    st.sampled_from(["GPU-a", "GPU-b", ""]),
    st.just("NVIDIA"),
    _NUMBER,
    _NUMBER,
)
_CONTAINER_ENTRY = st.lists(_CARD_ENTRY, min_size=1, max_size=2).map(
    lambda cards: "".join(f"{c}:" for c in cards)
)
_ALLOCATION_TEXT = (
    st.lists(_PIECES, max_size=12).map("".join)  # junk
    | st.lists(_CONTAINER_ENTRY, min_size=1, max_size=2).map(";".join)  # HAMi/Volcano-shaped
    | st.lists(st.sampled_from(["0", "1", "3", "1", "-1", "x", " "]), max_size=2).map(",".join)
)
_JSON_SCALAR = st.none() | st.booleans() | st.integers() | st.text(max_size=8)
_ANNOTATIONS = st.dictionaries(
    st.sampled_from([ALLOCATION, "volcano.sh/vgpu-ids-new", "volcano.sh/gpu-index", "other"]),
    _ALLOCATION_TEXT | _JSON_SCALAR,
    max_size=2,
)
_LIMITS = st.dictionaries(
    st.sampled_from(
        [
            "nvidia.com/gpu",
            "nvidia.com/gpumem",
            "volcano.sh/vgpu-number",
            "volcano.sh/vgpu-memory",
            "volcano.sh/gpu-mem.128Mi",
            "volcano.sh/gpu-core.percentage",
        ]
    ),
    st.sampled_from(["1", "2", "0", "-1", "4096", "1Gi", "x", ""]) | _JSON_SCALAR,
    max_size=2,
)
# A well-formed request per allocation annotation, so that fuzzed allocations get read.
_DIALECT_LIMITS = {
    ALLOCATION: {"nvidia.com/gpu": "1", "nvidia.com/gpumem": "1024"},
    "volcano.sh/vgpu-ids-new": {"volcano.sh/vgpu-number": "1", "volcano.sh/vgpu-memory": "1024"},
    "volcano.sh/gpu-index": {"volcano.sh/gpu-mem.128Mi": "8"},
}


@st.composite
def _pod_shape(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """(annotations, limits): one dialect's allocation, mostly fuzzed, plus odd extras."""
    key = draw(st.sampled_from(sorted(_DIALECT_LIMITS)))
    valid = "0" if key == "volcano.sh/gpu-index" else "GPU-a,NVIDIA,1024,0:"
    annotations = {key: draw(st.just(valid) | _ALLOCATION_TEXT), **draw(_ANNOTATIONS)}
    limits = {**_DIALECT_LIMITS[key], **draw(_LIMITS)}
    return annotations, limits


def _fuzzed_pod(i: int, annotations: dict[str, Any], limits: dict[str, Any]) -> JsonObject:
    pod = objects.pod(
        f"p{i}", node=NODE, containers=[{"name": "main", "resources": {"limits": limits}}]
    )
    pod["metadata"]["annotations"] = annotations
    pod["metadata"]["labels"] = {"volcano.sh/gpu-num": annotations.get("other", "2")}
    return pod


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_pod_shape(), min_size=1, max_size=4))
def test_malformed_pods_through_list_and_watch_never_crash(
    shapes: list[tuple[dict[str, Any], dict[str, Any]]],
) -> None:
    async def scenario() -> None:
        async with KubeApiDouble() as api:
            half = len(shapes) // 2
            for i, (annotations, limits) in enumerate(shapes[:half]):
                api.add_pod(_fuzzed_pod(i, annotations, limits))
            source = source_for(api)
            await source.start()
            try:
                for i, (annotations, limits) in enumerate(shapes[half:], start=half):
                    api.add_pod(_fuzzed_pod(i, annotations, limits))
                api.modify_pod("default", "p0", lambda p: p["metadata"].update(labels={"x": "y"}))
                api.add_pod(gpu_pod("marker"))  # events arrive in order: all before it are in
                await eventually(lambda: "marker" in pods(source))
                view = source.view()
                assert view.ok
                assert source.problems <= len(shapes)
                assert all(a.memory_bytes >= 0 for a in view.allotments)
                assert all(a.core_percent is None or a.core_percent > 0 for a in view.allotments)
                api.delete_pod("default", "p0")
                api.delete_pod("default", "marker")
                await eventually(lambda: "marker" not in pods(source))
                assert "p0" not in pods(source)
            finally:
                await source.close()

    asyncio.run(scenario())


_JSON = st.recursive(
    _JSON_SCALAR,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=12,
)


@settings(max_examples=examples(300), deadline=None)
@given(
    kind=st.sampled_from(["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "SURPRISE"]),
    metadata=st.fixed_dictionaries(
        {"name": st.just("p"), "namespace": st.just("default")},
        optional={"annotations": _JSON, "labels": _JSON, "uid": _JSON, "resourceVersion": _JSON},
    ),
    spec=_JSON,
    status=_JSON,
)
def test_any_event_object_is_applied_without_raising(
    kind: str, metadata: dict[str, Any], spec: Any, status: Any
) -> None:
    source = KubePodSource(NODE)
    source._apply({"type": kind, "object": {"metadata": metadata, "spec": spec, "status": status}})
    view = source.view()
    assert source.problems <= 1
    assert all(a.pod == "p" for a in view.allotments)


@pytest.mark.parametrize(
    ("event", "error"),
    [
        ({"type": "ERROR", "object": objects.status(410, "Expired", "too old")}, WatchExpired),
        ({"type": "ERROR", "object": objects.status(500, "InternalError", "boom")}, ApiError),
        ({"type": "ADDED"}, ApiError),
        (["not", "an", "event"], ApiError),
    ],
)
def test_error_and_malformed_events_end_the_watch(event: object, error: type[Exception]) -> None:
    with pytest.raises(error):
        KubePodSource(NODE)._apply(event)


async def test_watches_that_end_at_once_do_not_spin(
    kube_api: KubeApiDouble, start_source: StartSource
) -> None:
    source = await start_source(watch_timeout_s=0)  # the double then ends each watch at once

    def watches() -> int:
        return sum(1 for r in kube_api.requests if r.watch)

    await eventually(lambda: watches() >= 3, what="it keeps watching")
    before = watches()
    await asyncio.sleep(0.3)
    assert watches() - before < 60  # backed off (0.01 s .. 0.05 s), not thousands
    assert source.view().ok  # an empty watch is no failure
