"""The API double answers the real kubernetes_asyncio client as kube-apiserver would."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import aiohttp
import pytest
from kubernetes_asyncio import config, watch
from kubernetes_asyncio.client import ApiClient, Configuration, CoreV1Api, PolicyV1Api
from kubernetes_asyncio.client.exceptions import ApiException

from tests.kubeapi import objects
from tests.kubeapi.server import KubeApiDouble
from tests.kubeapi.threaded import KubeApiThread
from tests.wait import eventually

pytestmark = pytest.mark.realservices  # the Kubernetes API double

pytest_plugins = ["tests.kubeapi.fixtures"]


@pytest.fixture
async def core(kube_api: KubeApiDouble) -> AsyncIterator[CoreV1Api]:
    async with ApiClient(kube_api.configuration()) as client:
        yield CoreV1Api(client)


async def _raw(core: CoreV1Api, **query: Any) -> aiohttp.ClientResponse:
    """The pod list endpoint's own HTTP answer (a list, or a watch stream)."""
    response = await core.list_pod_for_all_namespaces(_preload_content=False, **query)
    assert isinstance(response, aiohttp.ClientResponse)
    return response


async def _events(response: aiohttp.ClientResponse, count: int) -> list[tuple[str, Any]]:
    """The first `count` events of a raw watch response (type, object)."""
    events: list[tuple[str, Any]] = []
    while len(events) < count:
        line = await asyncio.wait_for(response.content.readline(), 5)
        if not line:
            break
        event = json.loads(line)
        events.append((event["type"], event["object"]))
    return events


def _names(events: list[tuple[str, Any]]) -> list[tuple[str, str]]:
    return [(kind, obj["metadata"].get("name", "")) for kind, obj in events]


async def test_typed_list_filters_by_node_and_labels(
    kube_api: KubeApiDouble, core: CoreV1Api
) -> None:
    kube_api.add_pod(objects.pod("a", node="n1", labels={"app": "x"}))
    kube_api.add_pod(objects.pod("b", node="n2", labels={"app": "x"}))
    kube_api.add_pod(objects.pod("c", node="n1", namespace="ml", labels={"app": "y"}))

    on_n1 = await core.list_pod_for_all_namespaces(field_selector="spec.nodeName=n1")
    assert [p.metadata.name for p in on_n1.items] == ["a", "c"]
    assert on_n1.metadata.resource_version == str(kube_api.resource_version)
    assert on_n1.items[0].status.container_statuses[0].container_id.startswith("containerd://")

    labelled = await core.list_pod_for_all_namespaces(label_selector="app in (y, z),!missing")
    assert [p.metadata.name for p in labelled.items] == ["c"]
    in_ml = await core.list_namespaced_pod("ml")
    assert [p.metadata.name for p in in_ml.items] == ["c"]
    not_n1 = await core.list_pod_for_all_namespaces(field_selector="spec.nodeName!=n1")
    assert [p.metadata.name for p in not_n1.items] == ["b"]


async def test_raw_list_is_the_apis_json(kube_api: KubeApiDouble, core: CoreV1Api) -> None:
    sent = objects.pod("a", node="n1", annotations={"hami.io/x": "1"})
    kube_api.add_pod(sent)
    response = await _raw(core)
    body = await response.json()
    assert body["kind"] == "PodList"
    (item,) = body["items"]
    assert "kind" not in item  # as kube-apiserver: list items carry no kind
    assert item["metadata"]["annotations"] == {"hami.io/x": "1"}
    assert item["metadata"]["resourceVersion"] == body["metadata"]["resourceVersion"]
    kube_api.items_with_kind = True  # for clients that insist on it
    response = await _raw(core)
    assert (await response.json())["items"][0]["kind"] == "Pod"


async def test_unknown_field_selector_is_a_bad_request(core: CoreV1Api) -> None:
    with pytest.raises(ApiException) as caught:
        await core.list_pod_for_all_namespaces(field_selector="spec.nodeNam=n1")
    assert caught.value.status == 400
    assert "field label not supported" in json.loads(caught.value.body or "{}")["message"]


async def test_pages_with_limit_and_continue_until_compacted(
    kube_api: KubeApiDouble, core: CoreV1Api
) -> None:
    for i in range(5):
        kube_api.add_pod(objects.pod(f"p{i}", node="n1"))
    first = await core.list_pod_for_all_namespaces(limit=2)
    assert [p.metadata.name for p in first.items] == ["p0", "p1"]
    assert first.metadata.remaining_item_count == 3
    second = await core.list_pod_for_all_namespaces(limit=2, _continue=first.metadata._continue)
    assert [p.metadata.name for p in second.items] == ["p2", "p3"]
    kube_api.add_pod(objects.pod("later"))
    kube_api.compact()  # the list's version is now older than the history
    with pytest.raises(ApiException) as caught:
        await core.list_pod_for_all_namespaces(limit=2, _continue=second.metadata._continue)
    assert caught.value.status == 410


async def test_watch_replays_from_a_version_and_follows_the_selector(
    kube_api: KubeApiDouble, core: CoreV1Api
) -> None:
    kube_api.add_pod(objects.pod("a", node="n1"))
    since = kube_api.resource_version
    kube_api.add_pod(objects.pod("b", node="n1"))
    kube_api.add_pod(objects.pod("elsewhere", node="n2"))
    response = await _raw(
        core, field_selector="spec.nodeName=n1", watch=True, resource_version=str(since)
    )
    async with response:
        assert _names(await _events(response, 1)) == [("ADDED", "b")]
        kube_api.modify_pod("default", "elsewhere", lambda p: p["spec"].update(nodeName="n1"))
        kube_api.modify_pod("default", "a", lambda p: p["status"].update(phase="Succeeded"))
        kube_api.modify_pod("default", "b", lambda p: p["spec"].update(nodeName="n3"))
        kube_api.delete_pod("default", "a")
        events = await _events(response, 4)
    assert _names(events) == [
        ("ADDED", "elsewhere"),  # entered the selector
        ("MODIFIED", "a"),
        ("DELETED", "b"),  # left the selector
        ("DELETED", "a"),
    ]
    versions = [int(obj["metadata"]["resourceVersion"]) for _, obj in events]
    assert versions == sorted(versions)
    assert versions[-1] == kube_api.resource_version
    assert events[0][1]["kind"] == "Pod"  # watch objects do carry kind


async def test_watch_without_version_starts_with_the_current_state(
    kube_api: KubeApiDouble, core: CoreV1Api
) -> None:
    kube_api.add_pod(objects.pod("a", node="n1"))
    stream = watch.Watch().stream(core.list_pod_for_all_namespaces, timeout_seconds=60)
    seen = []
    async with stream:
        async for event in stream:
            seen.append((event["type"], event["object"].metadata.name))
            kube_api.end_watches()  # as when timeoutSeconds runs out: the stream ends
    assert seen == [("ADDED", "a")]


async def test_too_old_version_is_an_error_event_with_410(
    kube_api: KubeApiDouble, core: CoreV1Api
) -> None:
    kube_api.add_pod(objects.pod("a"))
    old = kube_api.resource_version
    kube_api.add_pod(objects.pod("b"))
    kube_api.compact()
    response = await _raw(core, watch=True, resource_version=str(old))
    async with response:
        assert response.status == 200
        ((kind, obj),) = await _events(response, 2)
    assert kind == "ERROR"
    assert (obj["kind"], obj["code"], obj["reason"]) == ("Status", 410, "Expired")
    # The client library's own Watch turns it into ApiException(410).
    stream = watch.Watch().stream(core.list_pod_for_all_namespaces, resource_version=str(old))
    async with stream:
        with pytest.raises(ApiException) as caught:
            await stream.next()
    assert caught.value.status == 410


async def test_history_limit_expires_old_versions() -> None:
    async with KubeApiDouble(history_limit=2) as api:
        start = api.resource_version
        for name in "abc":
            api.add_pod(objects.pod(name))
        for since, expect in ((start, "ERROR"), (start + 1, "ADDED")):
            async with ApiClient(api.configuration()) as client:
                response = await _raw(CoreV1Api(client), watch=True, resource_version=str(since))
                async with response:
                    assert [kind for kind, _ in await _events(response, 1)] == [expect]


async def test_too_old_version_as_http_410(core: CoreV1Api, kube_api: KubeApiDouble) -> None:
    kube_api.watch_gone_as_http = True
    kube_api.add_pod(objects.pod("a"))
    kube_api.compact()
    response = await _raw(core, watch=True, resource_version="5")
    async with response:
        assert response.status == 410
        assert (await response.json())["reason"] == "Expired"


async def test_expire_bookmark_and_end(kube_api: KubeApiDouble, core: CoreV1Api) -> None:
    kube_api.add_pod(objects.pod("a", node="n1"))
    response = await _raw(
        core,
        watch=True,
        resource_version=str(kube_api.resource_version),
        allow_watch_bookmarks=True,
    )
    async with response:
        await kube_api.wait_for_watches(1)
        kube_api.add_pod(objects.pod("b", node="n2"))
        assert kube_api.send_bookmarks() == 1
        kube_api.expire_watches()
        events = await _events(response, 3)
        assert await response.content.read() == b""  # ended after the ERROR
    assert [kind for kind, _ in events] == ["ADDED", "BOOKMARK", "ERROR"]
    assert events[1][1]["metadata"]["resourceVersion"] == str(kube_api.resource_version)
    assert events[2][1]["code"] == 410
    await eventually(lambda: kube_api.open_watches == 0, what="the expired watch closed")


async def test_periodic_bookmarks_only_when_asked(kube_api: KubeApiDouble, core: CoreV1Api) -> None:
    kube_api.bookmark_interval_s = 0.02
    quiet = await _raw(core, watch=True)
    async with quiet:
        asked = await _raw(core, watch=True, allow_watch_bookmarks=True)
        async with asked:
            # five intervals on the double's own clock, counted by the watch that asked
            assert [k for k, _ in await _events(asked, 5)] == ["BOOKMARK"] * 5
        kube_api.end_watches()
        assert await quiet.content.read() == b""  # opened first, and sent none


async def test_injected_errors_and_dropped_connections(
    kube_api: KubeApiDouble, core: CoreV1Api
) -> None:
    kube_api.fail_next(1, status_code=500, target="list")
    with pytest.raises(ApiException) as caught:
        await core.list_pod_for_all_namespaces()
    assert caught.value.status == 500
    await core.list_pod_for_all_namespaces()  # only one was injected

    # aiohttp resends a GET once when its connection drops: one drop goes unnoticed.
    kube_api.fail_next(1, status_code=None)
    await core.list_pod_for_all_namespaces()
    kube_api.fail_next(2, status_code=None)
    with pytest.raises(aiohttp.ServerDisconnectedError):
        await core.list_pod_for_all_namespaces()

    kube_api.fail_next(1, status_code=503, target="watch")
    await core.list_pod_for_all_namespaces()  # a list is not a watch
    response = await _raw(core, watch=True)
    async with response:
        assert response.status == 503


async def test_drop_cuts_an_open_watch_mid_stream(kube_api: KubeApiDouble, core: CoreV1Api) -> None:
    kube_api.add_pod(objects.pod("a"))
    response = await _raw(core, watch=True)
    async with response:
        assert _names(await _events(response, 1)) == [("ADDED", "a")]
        assert kube_api.drop_watches() == 1
        with pytest.raises(aiohttp.ClientPayloadError):
            await asyncio.wait_for(response.content.read(), 5)


async def test_down_refuses_then_comes_back_on_the_same_port(
    kube_api: KubeApiDouble, core: CoreV1Api
) -> None:
    kube_api.add_pod(objects.pod("a"))
    await core.list_pod_for_all_namespaces()  # leaves a kept-alive connection
    port = kube_api.port
    await kube_api.go_down()
    for _ in range(2):  # the kept-alive connection, then a refused one
        with pytest.raises(aiohttp.ClientError):
            await core.list_pod_for_all_namespaces()
    await kube_api.come_up()
    assert kube_api.port == port
    pods = await core.list_pod_for_all_namespaces()
    assert [p.metadata.name for p in pods.items] == ["a"]


async def test_slow_answers(kube_api: KubeApiDouble, core: CoreV1Api) -> None:
    kube_api.delay_s = 0.3
    with pytest.raises(asyncio.TimeoutError):
        await core.list_pod_for_all_namespaces(_request_timeout=0.05)


async def test_get_nodes_and_missing_objects(kube_api: KubeApiDouble, core: CoreV1Api) -> None:
    kube_api.add_node(objects.node("n1", allocatable={"volcano.sh/gpu-mem.128Mi": 256}))
    kube_api.add_node(objects.node("n2", unschedulable=True))
    nodes = await core.list_node(field_selector="spec.unschedulable=false")
    assert [n.metadata.name for n in nodes.items] == ["n1"]
    assert (await core.read_node("n2")).spec.unschedulable is True
    kube_api.add_pod(objects.pod("a", namespace="ml"))
    assert (await core.read_namespaced_pod("a", "ml")).metadata.namespace == "ml"
    with pytest.raises(ApiException) as caught:
        await core.read_namespaced_pod("a", "default")
    assert caught.value.status == 404
    assert kube_api.requests[-1].path == "/api/v1/namespaces/default/pods/a"


async def test_token_is_required_when_configured() -> None:
    async with KubeApiDouble(require_token="s3cret") as api:
        async with ApiClient(Configuration(host=api.url)) as anonymous:
            with pytest.raises(ApiException) as caught:
                await CoreV1Api(anonymous).list_pod_for_all_namespaces()
            assert caught.value.status == 401
        async with ApiClient(api.configuration()) as client:
            await CoreV1Api(client).list_pod_for_all_namespaces()


async def test_mutations_keep_identity_and_reject_duplicates(kube_api: KubeApiDouble) -> None:
    created = kube_api.add_pod(objects.pod("a"))
    with pytest.raises(KeyError):
        kube_api.add_pod(objects.pod("a"))
    replaced = kube_api.replace_pod(objects.pod("a", node="n1"))
    assert replaced["metadata"]["uid"] == created["metadata"]["uid"]
    assert int(replaced["metadata"]["resourceVersion"]) > int(
        created["metadata"]["resourceVersion"]
    )
    created["metadata"]["name"] = "changed by the test"  # callers get copies
    assert [p["metadata"]["name"] for p in kube_api.objects("pods")] == ["a"]


def test_threaded_double_serves_sync_code_and_kubeconfig_files(tmp_path: Path) -> None:
    with KubeApiThread(require_token="t0k3n") as kube:
        kube.call(kube.api.add_pod, objects.pod("a", node="n1"))
        path = kube.api.write_kubeconfig(tmp_path / "kubeconfig")

        async def names() -> list[str]:
            client = await config.new_client_from_config(config_file=str(path))
            async with client:
                pods = await CoreV1Api(client).list_pod_for_all_namespaces()
            return [p.metadata.name for p in pods.items]

        assert asyncio.run(names()) == ["a"]
        assert kube.call(lambda: kube.api.resource_version) > 1000


async def test_pdbs_list_by_namespace_and_fail_alone(kube_api: KubeApiDouble) -> None:
    """policy/v1 PodDisruptionBudgets: listed in all namespaces or one, typed by the real
    client; a fault aimed at them leaves the pod list alone."""
    selector = {"matchLabels": {"app": "a"}}
    kube_api.add_pdb(objects.pdb("a", namespace="ml", selector=selector, disruptions_allowed=0))
    kube_api.add_pdb(objects.pdb("b", namespace="web", selector={}))
    async with ApiClient(kube_api.configuration()) as client:
        policy, core = PolicyV1Api(client), CoreV1Api(client)
        every = await policy.list_pod_disruption_budget_for_all_namespaces()
        assert [(p.metadata.namespace, p.metadata.name) for p in every.items] == [
            ("ml", "a"),
            ("web", "b"),
        ]
        assert every.items[0].spec.selector.match_labels == {"app": "a"}
        assert every.items[0].status.disruptions_allowed == 0
        one = await policy.list_namespaced_pod_disruption_budget("web")
        assert [p.metadata.name for p in one.items] == ["b"]
        response = cast(  # the raw HTTP answer, as _preload_content=False asks
            aiohttp.ClientResponse,
            await policy.list_pod_disruption_budget_for_all_namespaces(_preload_content=False),
        )
        async with response:
            assert (await response.json())["apiVersion"] == "policy/v1"

        kube_api.fail_next(1, status_code=403, target="list", resource="poddisruptionbudgets")
        await core.list_pod_for_all_namespaces()  # not aimed at pods
        with pytest.raises(ApiException) as caught:
            await policy.list_pod_disruption_budget_for_all_namespaces()
        assert caught.value.status == 403
        assert json.loads(cast(bytes, caught.value.body))["reason"] == "Forbidden"
        await policy.list_pod_disruption_budget_for_all_namespaces()  # only one was injected


async def test_volcano_crds_are_served_as_custom_resources(kube_api: KubeApiDouble) -> None:
    """PodGroups (namespaced) and Queues (cluster-scoped) at their group/version paths, as
    custom resources are listed (kind and apiVersion on every item); without the CRDs their
    paths answer 404 "the server could not find the requested resource"."""
    from kubernetes_asyncio.client import CustomObjectsApi

    kube_api.create("podgroups", objects.podgroup("pg", namespace="ml", min_member=2))
    kube_api.create("queues", objects.queue("training", weight=2))
    async with ApiClient(kube_api.configuration()) as client:
        custom = CustomObjectsApi(client)
        group, version = "scheduling.volcano.sh", "v1beta1"
        groups = await custom.list_cluster_custom_object(group, version, "podgroups")
        assert (groups["kind"], groups["apiVersion"]) == ("PodGroupList", f"{group}/{version}")
        assert [(i["kind"], i["metadata"]["name"]) for i in groups["items"]] == [("PodGroup", "pg")]
        in_ml = await custom.list_namespaced_custom_object(group, version, "ml", "podgroups")
        assert len(in_ml["items"]) == 1
        queue = await custom.get_cluster_custom_object(group, version, "queues", "training")
        assert queue["spec"]["weight"] == 2
        kube_api.volcano = False
        with pytest.raises(ApiException) as missing:
            await custom.list_cluster_custom_object(group, version, "queues")
        assert missing.value.status == 404
        assert "could not find the requested resource" in str(missing.value.body)
        # the built-in kinds beside them are listed without kind on their items
        core = CoreV1Api(client)
        kube_api.create("resourcequotas", objects.resource_quota("q", namespace="ml", hard={}))
        quotas = await core.list_namespaced_resource_quota("ml", _preload_content=False)
        assert isinstance(quotas, aiohttp.ClientResponse)
        body = json.loads(await quotas.read())
        assert body["kind"] == "ResourceQuotaList"
        assert "kind" not in body["items"][0]


async def test_hpas_are_served_at_autoscaling_v2(kube_api: KubeApiDouble) -> None:
    """HorizontalPodAutoscalers at /apis/autoscaling/v2, read into the client's own models;
    a cluster that does not serve the group answers 404, as kube-apiserver does."""
    from kubernetes_asyncio.client import AutoscalingV2Api

    metrics = [objects.pods_metric("xgpu_core_percentage_used", "60")]
    kube_api.create("horizontalpodautoscalers", objects.hpa("a", namespace="web", metrics=metrics))
    kube_api.create("horizontalpodautoscalers", objects.hpa("b", namespace="ml"))
    async with ApiClient(kube_api.configuration()) as client:
        api = AutoscalingV2Api(client)
        listed = await api.list_horizontal_pod_autoscaler_for_all_namespaces(limit=1)
        assert [i.metadata.name for i in listed.items] == ["b"]  # ml/b sorts first
        rest = await api.list_horizontal_pod_autoscaler_for_all_namespaces(
            _continue=listed.metadata._continue
        )
        assert [i.metadata.name for i in rest.items] == ["a"]
        target = rest.items[0].spec.metrics[0].pods.target
        assert (target.type, target.average_value) == ("AverageValue", "60")
        in_web = await api.list_namespaced_horizontal_pod_autoscaler("web")
        assert [i.spec.scale_target_ref.name for i in in_web.items] == ["web"]
        one = await api.read_namespaced_horizontal_pod_autoscaler("b", "ml")
        assert one.spec.max_replicas == 10
        kube_api.autoscaling_v2 = False
        with pytest.raises(ApiException) as missing:
            await api.list_horizontal_pod_autoscaler_for_all_namespaces()
        assert missing.value.status == 404
