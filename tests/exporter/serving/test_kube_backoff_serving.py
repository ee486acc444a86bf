"""`--kubernetes.backoff-initial` and `--kubernetes.backoff-max` in a real `xgpu-exporter`
against the Kubernetes API double: while every pod list fails, a short back-off re-lists
many times a second, and the exporter syncs as soon as the API answers again.

The counts below cannot be reached with the defaults (0.5 s doubling to 30 s: ~5 lists in
the first 5 s), nor with the short initial back-off alone (doubling past 10 s after ~10
failures): they take both flags.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.kubeapi.threaded import KubeApiThread
from tests.realparts import Exporter
from tests.wait import wait_until

pytestmark = pytest.mark.realservices  # xgpu-exporter and the API double

LISTS_WANTED = 25  # failed lists in a row


@pytest.fixture
def kube() -> Iterator[KubeApiThread]:
    with KubeApiThread() as kube:
        yield kube


def pod_lists(kube: KubeApiThread) -> int:
    requests = kube.call(lambda: list(kube.api.requests))
    return sum(1 for r in requests if r.path == "/api/v1/pods" and not r.watch)


def kubernetes_success(exporter: Exporter) -> bool:
    return 'xgpu_exporter_collector_success{collector="kubernetes"} 1.0' in exporter.metrics()


def test_a_short_back_off_relists_fast_and_recovers_at_once(
    kube: KubeApiThread, start_exporter: Callable[..., Exporter], tmp_path: Path
) -> None:
    kube.call(kube.api.fail_next, 100_000, status_code=500, target="list")
    kubeconfig = kube.api.write_kubeconfig(tmp_path / "kubeconfig")
    exporter = start_exporter(
        [
            "--node", "gpu-node-1",
            "--kubeconfig", str(kubeconfig),
            "--no-collector.nvml",
            "--no-collector.attribution",
            "--collection.freshness", "0",
            "--kubernetes.backoff-initial=20ms",
            "--kubernetes.backoff-max=0.1",
        ]
    )  # fmt: skip
    try:
        wait_until(lambda: pod_lists(kube) >= LISTS_WANTED, timeout_s=10, what="the relists")
        assert not kubernetes_success(exporter)

        kube.call(kube.api.clear_faults)
        wait_until(lambda: kubernetes_success(exporter), timeout_s=5, what="the recovery")
        assert "Traceback" not in exporter.log()
    finally:
        exporter.stop()  # before the API double goes away
