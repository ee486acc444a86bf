"""A local Kubernetes API double for tests (pods and nodes, list and watch, injected faults).

In a test module: `pytest_plugins = ["tests.kubeapi.fixtures"]`, then ask for `kube_api`
(async, on the test's loop) or `kube_api_thread` (its own thread, for sync code and
subprocesses; `write_kubeconfig` gives them a kubeconfig). Build objects with
`tests.kubeapi.objects`; wait for background effects with `tests.kubeapi.wait.eventually`.
"""

from __future__ import annotations

from tests.kubeapi.server import KubeApiDouble, RecordedRequest
from tests.kubeapi.threaded import KubeApiThread
from tests.kubeapi.wait import eventually

__all__ = ["KubeApiDouble", "KubeApiThread", "RecordedRequest", "eventually"]
