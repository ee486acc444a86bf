"""Pytest fixtures for the Kubernetes API double.

Load them from a test module with `pytest_plugins = ["tests.kubeapi.fixtures"]`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from tests.kubeapi.server import KubeApiDouble
from tests.kubeapi.threaded import KubeApiThread


@pytest.fixture
async def kube_api() -> AsyncIterator[KubeApiDouble]:
    """A fresh double on a free loopback port, serving on the test's own event loop."""
    async with KubeApiDouble() as api:
        yield api


@pytest.fixture
def kube_api_thread() -> Iterator[KubeApiThread]:
    """A fresh double on its own thread, for sync code or a subprocess (`write_kubeconfig`)."""
    with KubeApiThread() as kube:
        yield kube
