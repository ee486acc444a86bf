"""GPU pods and nodes from the Kubernetes API (kubernetes_asyncio, in-cluster or kubeconfig).

One paged list of the pods that are not finished and one of the nodes. The client runs with
`_preload_content=False`, so advisor.podspec reads the API's JSON exactly as sent (the one pod
parser, shared with the exporter): every dialect, with priority, owner, annotations and
creation time. A pod the parser cannot read becomes an `invalid` pod later, never an error.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import aiohttp

from advisor.commands import InputError
from advisor.podspec import PodGpu, parse_pod
from advisor.podspec.dialects import DIALECTS
from advisor.podspec.quantity import quantity_int
from advisor.sources.http import describe, run_all
from advisor.sources.values import KubeNode, KubeState

NOT_FINISHED = "status.phase!=Succeeded,status.phase!=Failed"
PAGE_SIZE = 500
GPU_RESOURCES = frozenset(key for d in DIALECTS for key in (d.count, d.memory) if key is not None)


async def read_kubernetes(
    kubeconfig: str | None = None, *, timeout_s: float = 30.0, page_size: int = PAGE_SIZE
) -> KubeState:
    """In-cluster credentials when running in a pod and no kubeconfig is named, else the
    kubeconfig file (`kubeconfig`, $KUBECONFIG, ~/.kube/config)."""
    from kubernetes_asyncio.client import ApiClient, CoreV1Api

    configuration = await _configuration(kubeconfig)
    host = str(configuration.host)
    async with ApiClient(configuration=configuration) as client:
        api = CoreV1Api(client)
        pod_items, node_items = await run_all(
            [
                _list(
                    api.list_pod_for_all_namespaces,
                    host,
                    "pods",
                    timeout_s,
                    page_size,
                    field_selector=NOT_FINISHED,
                ),
                _list(api.list_node, host, "nodes", timeout_s, page_size),
            ]
        )
    warnings: list[str] = []
    pods: list[PodGpu] = []
    for item in pod_items:
        try:
            pod = parse_pod(item)
        except Exception as error:  # it promises not to raise; one odd pod must not stop a run
            warnings.append(f"Kubernetes: a pod the parser failed on was skipped: {error!r}")
            continue
        if pod is not None:
            pods.append(pod)
    nodes = [node for item in node_items if (node := _node(item)) is not None]
    return KubeState(f"kubernetes {host}", tuple(pods), tuple(nodes), tuple(warnings))


async def _configuration(kubeconfig: str | None) -> Any:
    from kubernetes_asyncio import config
    from kubernetes_asyncio.client import Configuration

    configuration = Configuration()
    if kubeconfig is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        try:
            config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
        except Exception as error:
            raise InputError(f"Kubernetes: in-cluster config: {describe(error)}") from None
        return configuration
    path = kubeconfig or os.environ.get("KUBECONFIG") or str(Path.home() / ".kube" / "config")
    try:
        await config.load_kube_config(
            config_file=path, client_configuration=configuration, persist_config=False
        )
    except Exception as error:  # ConfigException, OSError, YAML errors: all mean "bad file"
        raise InputError(f"Kubernetes: kubeconfig {path}: {describe(error)}") from None
    return configuration


async def _list(
    call: Any, host: str, what: str, timeout_s: float, page_size: int, **selectors: str
) -> list[Any]:
    """Every item of a paged list."""
    items: list[Any] = []
    token: str | None = None
    while True:
        options: dict[str, Any] = {"limit": page_size, **selectors}
        if token:
            options["_continue"] = token
        try:
            response = await call(**options, _preload_content=False, _request_timeout=timeout_s)
            async with response:
                status, raw = response.status, await response.read()
        except (aiohttp.ClientError, TimeoutError) as error:
            raise InputError(f"Kubernetes API {host}: cannot reach it: {describe(error)}") from None
        body = _json(raw)
        if not 200 <= status < 300 or not isinstance(body.get("items"), list):
            reason = " ".join(str(body.get(k) or "") for k in ("reason", "message")).strip()
            detail = reason or " ".join(raw[:200].decode(errors="replace").split())
            raise InputError(f"Kubernetes API {host}: list {what}: HTTP {status} {detail}")
        items.extend(body["items"])
        metadata = body.get("metadata")
        token = metadata.get("continue") if isinstance(metadata, dict) else None
        if not token:
            return items


def _json(raw: bytes) -> dict[str, Any]:
    try:
        body = json.loads(raw)
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _node(obj: Any) -> KubeNode | None:
    if not isinstance(obj, dict):
        return None
    metadata, spec, status = (_object(obj.get(k)) for k in ("metadata", "spec", "status"))
    name = metadata.get("name")
    if not isinstance(name, str) or not name:
        return None
    unavailable = None
    if spec.get("unschedulable") is True:
        unavailable = "cordoned"
    elif not _ready(status.get("conditions")):
        unavailable = "not Ready"
    allocatable = status.get("allocatable")
    advertises = isinstance(allocatable, dict) and any(
        _positive(allocatable[key]) for key in GPU_RESOURCES if key in allocatable
    )
    return KubeNode(name, unavailable, advertises)


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _ready(conditions: object) -> bool:
    if not isinstance(conditions, list):
        return True  # no word either way: assume the usual
    for condition in conditions:
        if isinstance(condition, dict) and condition.get("type") == "Ready":
            return condition.get("status") == "True"
    return True


def _positive(value: object) -> bool:
    try:
        return quantity_int(value) > 0
    except ValueError:
        return False
