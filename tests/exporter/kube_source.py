"""KubePodSource of one node against the Kubernetes API double, with quick backoffs.

A pytest plugin: `pytest_plugins = ["tests.kubeapi.fixtures", "tests.exporter.kube_source"]`
gives the `start_source` fixture, which closes every source it started.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from kubernetes_asyncio.client import ApiClient

from exporter.pods_kube import KubePodSource
from tests.kubeapi.server import KubeApiDouble

NODE = "gpu-node-1"
StartSource = Callable[..., Awaitable[KubePodSource]]


def source_for(api: KubeApiDouble, **options: Any) -> KubePodSource:
    options = {"backoff_initial_s": 0.01, "backoff_max_s": 0.05, **options}
    options.setdefault("api_client_factory", lambda: ApiClient(api.configuration()))
    return KubePodSource(NODE, **options)


@pytest.fixture
async def start_source(kube_api: KubeApiDouble) -> AsyncIterator[StartSource]:
    started: list[KubePodSource] = []

    async def start(**options: Any) -> KubePodSource:
        source = source_for(kube_api, **options)
        started.append(source)
        await source.start()
        return source

    yield start
    for source in started:
        await source.close()
