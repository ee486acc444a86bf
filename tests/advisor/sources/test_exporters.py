"""Scraping exporters directly: expositions served over real HTTP, parsed by prometheus-client.

(The real `xgpu-exporter --simulate` processes are scraped in test_live.py.)
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from aiohttp import web

from advisor.core.model import Placement, Pod, Request
from advisor.errors import SourceError
from advisor.sources import SourceConfig, gather
from advisor.sources.exporters import metrics_url, parse_exporter_list, read_exporters
from advisor.sources.http import client_session
from tests.realparts import free_port

pytestmark = pytest.mark.realservices  # stand-in exporters served over HTTP

GIB = 2**30


def exposition(node: str, *, timestamp_ms: int | None = None, node_info: bool = True) -> str:
    ts = f" {timestamp_ms}" if timestamp_ms is not None else ""
    card = '{gpu_index="0",gpu_uuid="GPU-a"}'
    vgpu = '{namespace="ml",pod="p",container="c",gpu_index="0",gpu_uuid="GPU-a"}'
    lines = [
        "# HELP xgpu_memory_total Bytes allotted.",
        "# TYPE xgpu_memory_total gauge",
        f"xgpu_memory_total{vgpu} {4 * GIB}{ts}",
        "# TYPE xgpu_core_percentage_total gauge",
        f"xgpu_core_percentage_total{vgpu} 20{ts}",
        "# TYPE gpu_schedule_policy gauge",
        f"gpu_schedule_policy{card} 1{ts}",
        "# TYPE xgpu_device_health gauge",
        f"xgpu_device_health{card} 0{ts}",
        "# TYPE xgpu_card_info gauge",
        'xgpu_card_info{gpu_index="0",gpu_uuid="GPU-a",model="Tesla T4",driver_version="1"} 1' + ts,
        "# TYPE xgpu_card_memory_total_bytes gauge",
        f"xgpu_card_memory_total_bytes{card} {16 * GIB}{ts}",
        "# TYPE xgpu_exporter_build_info gauge",
        'xgpu_exporter_build_info{version="0.1.0",python_version="3.11"} 1',
    ]
    if node_info:
        lines += ["# TYPE xgpu_node_info gauge", f'xgpu_node_info{{node="{node}"}} 1{ts}']
    return "\n".join(lines) + "\n"


Serve = Callable[..., Awaitable[list[str]]]


@pytest.fixture
async def serve() -> AsyncIterator[Serve]:
    """`await serve(response, ...)`: one server per response, answering /metrics; their URLs."""
    runners: list[web.AppRunner] = []

    async def start(*responses: web.Response) -> list[str]:
        urls = []
        for response in responses:

            async def handle(_: web.Request, answer: web.Response = response) -> web.Response:
                return answer

            app = web.Application()
            app.router.add_get("/metrics", handle)
            runner = web.AppRunner(app)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", 0).start()
            runners.append(runner)
            urls.append(f"http://127.0.0.1:{runner.addresses[0][1]}")
        return urls

    yield start
    for runner in runners:
        await runner.cleanup()


def text(body: str, status: int = 200) -> web.Response:
    return web.Response(text=body, status=status, content_type="text/plain")


async def test_nodes_come_from_node_info(serve: Serve) -> None:
    urls = await serve(text(exposition("gpu-1")), text(exposition("gpu-2")))
    gathered = await gather(SourceConfig(exporters=tuple(f"{u}/metrics" for u in urls)))
    assert [n.name for n in gathered.cluster.nodes] == ["gpu-1", "gpu-2"]
    assert gathered.cluster.pods[0] == Pod(
        "ml/p", Request(gpus=1, memory_mib=4096, core_percent=20), Placement("gpu-1", (0,))
    )
    assert gathered.source.startswith("exporters http://127.0.0.1:")
    assert gathered.stale == ()


async def test_timestamped_samples_age(serve: Serve) -> None:
    now = 1_800_000_000.0
    urls = await serve(
        text(exposition("gpu-1", timestamp_ms=int((now - 600) * 1000))),
        text(exposition("gpu-2", timestamp_ms=int((now - 10) * 1000))),
    )
    async with client_session(5) as session:
        samples = await read_exporters([f"{u}/metrics" for u in urls], session, clock=now)
    ages = {s.label("node"): s.age_s for s in samples if s.metric == "xgpu_node_info"}
    assert ages == {"gpu-1": pytest.approx(600), "gpu-2": pytest.approx(10)}


async def test_no_node_info(serve: Serve) -> None:
    (url,) = await serve(text(exposition("x", node_info=False)))
    with pytest.raises(SourceError, match=r"has no xgpu_node_info\{node\}: is it an xgpu exporter"):
        await gather(SourceConfig(exporters=(f"{url}/metrics",)))


async def test_two_exporters_claiming_one_node(serve: Serve) -> None:
    urls = await serve(text(exposition("gpu-1")), text(exposition("gpu-1")))
    with pytest.raises(SourceError, match=r"both report node 'gpu-1'"):
        await gather(SourceConfig(exporters=tuple(f"{u}/metrics" for u in urls)))


async def test_http_error_names_the_exporter(serve: Serve) -> None:
    urls = await serve(text(exposition("gpu-1")), text("collector exploded\n", status=500))
    with pytest.raises(SourceError) as caught:
        await gather(SourceConfig(exporters=tuple(f"{u}/metrics" for u in urls)))
    assert str(caught.value) == f"exporter {urls[1]}/metrics: HTTP 500: collector exploded"


async def test_garbage_exposition(serve: Serve) -> None:
    (url,) = await serve(text('xgpu_node_info{node="a" 1\n'))
    with pytest.raises(SourceError, match=r"cannot parse its metrics"):
        await gather(SourceConfig(exporters=(f"{url}/metrics",)))


async def test_unreachable_exporter() -> None:
    port = free_port()
    with pytest.raises(SourceError) as caught:
        await gather(SourceConfig(exporters=(f"http://127.0.0.1:{port}/metrics",)))
    assert str(caught.value).startswith(f"exporter http://127.0.0.1:{port}/metrics: cannot reach")


def test_exporter_urls() -> None:
    assert metrics_url("10.0.0.1:9400") == "http://10.0.0.1:9400/metrics"
    assert metrics_url("http://h:9400/") == "http://h:9400/metrics"
    assert metrics_url("https://h/x/metrics") == "https://h/x/metrics"
    assert parse_exporter_list(" a:1, ,b:2 ") == ("http://a:1/metrics", "http://b:2/metrics")
