"""HTTP endpoints over a real aiohttp server: negotiation, gzip, health, readiness, landing page."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp.test_utils import BaseTestServer, TestServer

from exporter.collection import Engine
from exporter.scenario_pods import ScenarioPodSource
from exporter.server import accepts_gzip, make_app, wants_openmetrics
from exporter.simulate import SimulatedReader

DATA = Path(__file__).parent / "data"
PROMETHEUS_ACCEPT = (
    "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;"
    "q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
)


@pytest.mark.parametrize(
    ("accept", "openmetrics"),
    [
        ("", False),
        ("*/*", False),
        ("text/plain;version=0.0.4", False),
        (PROMETHEUS_ACCEPT, True),
        ("application/openmetrics-text", True),
        ("application/openmetrics-text;q=0.2,text/plain;q=0.9", False),
        ("application/openmetrics-text;q=0", False),
    ],
)
def test_content_negotiation(accept: str, openmetrics: bool) -> None:
    assert wants_openmetrics(accept) is openmetrics


def test_gzip_negotiation() -> None:
    assert accepts_gzip("gzip, deflate")
    assert not accepts_gzip("identity")
    assert not accepts_gzip("gzip;q=0")


@pytest.fixture
async def server() -> AsyncIterator[BaseTestServer]:
    pods = ScenarioPodSource(DATA / "exporter-node.yaml", "gpu-node-1")
    cluster = pods.load()
    reader = SimulatedReader(cluster.nodes[0], lambda: pods.view().allotments)
    engine = Engine(node="gpu-node-1", reader=reader, pods=pods, resolver=reader)
    async with TestServer(make_app(engine)) as test_server:
        yield test_server


@pytest.mark.realservices  # an aiohttp server
async def test_endpoints(server: BaseTestServer) -> None:
    async with aiohttp.ClientSession(auto_decompress=False) as http:
        async with http.get(server.make_url("/readyz")) as r:
            assert r.status == 503  # no collection yet
        async with http.get(server.make_url("/healthz")) as r:
            assert r.status == 200
        headers = {"Accept-Encoding": "identity"}
        async with http.get(server.make_url("/metrics"), headers=headers) as r:
            assert r.status == 200
            assert r.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
            assert "Content-Encoding" not in r.headers
            text = await r.text()
            assert 'xgpu_node_info{node="gpu-node-1"} 1.0' in text
        async with http.get(
            server.make_url("/metrics"), headers={**headers, "Accept": PROMETHEUS_ACCEPT}
        ) as r:
            assert r.headers["Content-Type"].startswith(
                "application/openmetrics-text; version=1.0.0"
            )
            assert (await r.text()).endswith("# EOF\n")
        async with http.get(server.make_url("/metrics"), headers={"Accept-Encoding": "gzip"}) as r:
            assert r.headers["Content-Encoding"] == "gzip"
            body = await r.read()
            assert body[:2] == b"\x1f\x8b"
        async with http.get(server.make_url("/readyz")) as r:
            assert r.status == 200
        async with http.get(server.make_url("/")) as r:
            page = await r.text()
            assert r.headers["Content-Type"].startswith("text/html")
            assert "gpu-node-1" in page
            assert 'href="/metrics"' in page
            assert "<td>nvml</td>" in page
