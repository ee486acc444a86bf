"""Paged lists within a byte cap (`advisor.sources.kubepages`): the real kubernetes_asyncio
client against the local API double."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.errors import SourceError
from advisor.sources.kubernetes import read_kubernetes
from tests.advisor.sources.builders import cce_pod
from tests.kubeapi.server import KubeApiDouble

pytestmark = pytest.mark.realservices  # the Kubernetes API double

pytest_plugins = ["tests.kubeapi.fixtures"]

PODS = [cce_pod(f"ml/p{i}", node="n1", cards=(0,)) for i in range(5)]


def one_pod_bytes() -> int:
    """About what one pod adds to a page (its JSON), for caps between one and two pods."""
    return len(json.dumps(PODS[0]).encode())


async def test_a_page_past_the_cap_is_asked_again_smaller(
    kube_api: KubeApiDouble, tmp_path: Path
) -> None:
    for pod in PODS:
        kube_api.add_pod(pod)
    config = str(kube_api.write_kubeconfig(tmp_path / "kubeconfig"))
    # Room for one pod and the list's own fields, not for two: every pod still arrives.
    cap = int(one_pod_bytes() * 1.5) + 200
    state = await read_kubernetes(config, page_size=4, max_page_bytes=cap)
    assert sorted(p.key for p in state.pods) == [f"ml/p{i}" for i in range(5)]
    limits = [r.query["limit"] for r in kube_api.requests if r.path == "/api/v1/pods"]
    assert limits[:3] == ["4", "2", "1"]  # halved until a page fits
    assert set(limits[3:]) == {"1"}  # and kept small for the rest
    assert len(limits) == 3 + 4  # the pages that fit: five of one pod


async def test_one_object_past_the_cap_is_a_one_line_error(
    kube_api: KubeApiDouble, tmp_path: Path
) -> None:
    kube_api.add_pod(PODS[0])
    config = str(kube_api.write_kubeconfig(tmp_path / "kubeconfig"))
    with pytest.raises(SourceError) as caught:
        await read_kubernetes(config, max_page_bytes=100)
    message = str(caught.value)
    assert (
        message == f"Kubernetes API {kube_api.url}: list pods: one object is larger than 100 bytes"
    )
