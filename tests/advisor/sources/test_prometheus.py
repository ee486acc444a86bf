"""The Prometheus source against a real Prometheus serving backfilled history.

History (promtool create-blocks-from openmetrics), one sample every 15 s for an hour:
- n1: fresh (last sample 5 s ago), every series twice (two scrape jobs, as a ServiceMonitor
  and a PodMonitor of one exporter would make): cards 0 and 1 in mode 1, card 2 in mode 0;
  pod ml/a (containers x and y on cards 0 and 1), pod ml/b (memory only, card 2);
- n2: last sample 120 s ago (inside Prometheus's 5-minute lookback);
- n3: last sample 400 s ago (outside it: only the ended-node subquery sees it).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import aiohttp
import pandas as pd
import pytest
from aiohttp import web

from advisor.core.model import Placement, Pod, Request
from advisor.defaults import RightsizingSettings
from advisor.errors import SourceError
from advisor.rightsizing import HISTORY_COLUMNS, rightsize
from advisor.sources import SourceConfig, gather
from advisor.sources import history as history_module
from advisor.sources.assemble import assemble
from advisor.sources.history import chunks, usage_history
from advisor.sources.http import client_session
from advisor.sources.prometheus import PrometheusApi, read_prometheus
from tests.realparts import free_port, start_prometheus, write_backfill

pytestmark = pytest.mark.realservices  # a real Prometheus with backfilled history

MIB = 2**20
STEP = 15
AGO = {"n1": 5, "n2": 120, "n3": 400}  # seconds from the last sample to the fixture's start
NOW = time.time()  # for the fake servers only
JOBS = ("servicemonitor", "podmonitor")


def _series(metric: str, labels: dict[str, str], value: float, node: str, now: float) -> list[str]:
    lines = []
    t = now - 3600.0
    while t <= now - AGO[node]:
        for job in JOBS if node == "n1" else JOBS[:1]:
            text = ",".join(f'{k}="{v}"' for k, v in {**labels, "job": job}.items())
            lines.append((t, job, f"{metric}{{{text}}} {value} {t:.3f}"))
        t += STEP
    # OpenMetrics wants each series' samples together, in time order.
    return [line for _, _, line in sorted(lines, key=lambda x: (x[1], x[0]))]


def history_lines(now: float) -> list[str]:
    families: dict[str, list[str]] = {}

    def add(metric: str, node: str, value: float, **labels: str) -> None:
        families.setdefault(metric, []).extend(
            _series(metric, {"node": node, **labels}, value, node, now)
        )

    for node in AGO:
        add("xgpu_node_info", node, 1)
        for index in (0, 1, 2):
            card = {"gpu_index": str(index), "gpu_uuid": f"GPU-{node}-{index}"}
            add("xgpu_card_info", node, 1, model="Tesla T4", driver_version="550", **card)
            add("xgpu_card_memory_total_bytes", node, 16384 * MIB, **card)
            add("xgpu_device_health", node, 0, **card)
            add("gpu_schedule_policy", node, 1 if index < 2 else 0, **card)
    vgpus = [  # node, pod, container, card, memory MiB, used MiB, core %
        ("n1", "a", "x", 0, 2048, 1000, 10),
        ("n1", "a", "x", 1, 2048, 1100, 10),
        ("n1", "a", "y", 0, 1024, 500, 5),
        ("n1", "a", "y", 1, 1024, 600, 5),
        ("n1", "b", "b", 2, 8192, 4096, 0),
        ("n2", "c", "c", 0, 4096, 10, 0),
    ]
    for node, pod, container, index, memory, used, core in vgpus:
        labels = {
            "namespace": "ml",
            "pod": pod,
            "container": container,
            "gpu_index": str(index),
            "gpu_uuid": f"GPU-{node}-{index}",
        }
        add("xgpu_memory_total", node, memory * MIB, **labels)
        add("xgpu_memory_used", node, used * MIB, **labels)
        if core:
            add("xgpu_core_percentage_total", node, core, **labels)
            add("xgpu_core_percentage_used", node, core / 2, **labels)
    lines = []
    for metric, samples in families.items():
        lines += [f"# TYPE {metric} gauge", *samples]
    return lines


@dataclass(frozen=True)
class Backfilled:
    url: str
    now: float  # when the history was written: its ages count from here


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backfilled]:
    home = tmp_path_factory.mktemp("prometheus-history")
    now = time.time()
    write_backfill(history_lines(now), home / "data")
    server = start_prometheus(home)
    yield Backfilled(server.url, now)
    server.stop()


async def read(url: str, stale_after_s: float) -> tuple:  # type: ignore[type-arg]
    async with client_session(10) as session:
        return await read_prometheus(url, session, stale_after_s=stale_after_s)


async def test_current_state_from_instant_queries(prometheus: Backfilled) -> None:
    result = assemble(await read(prometheus.url, 60), stale_after_s=60)
    (n1,) = result.cluster.nodes
    assert n1.name == "n1"
    assert [(c.index, c.memory_mib, c.model, c.healthy) for c in n1.cards] == [
        (i, 16384, "Tesla T4", True) for i in (0, 1, 2)
    ]
    # twins from two scrape jobs collapse; containers sum per card
    assert result.cluster.pods == (
        Pod("ml/a", Request(gpus=2, memory_mib=6144, core_percent=30), Placement("n1", (0, 1))),
        Pod("ml/b", Request(gpus=1, memory_mib=8192), Placement("n1", (2,))),
    )
    assert result.warnings == ()
    # n2's newest samples are 120 s old: flagged and left out, never used; n3 ended 400 s
    # ago, inside twice the limit plus Prometheus's 5-minute lookback
    n2, n3 = result.stale
    assert (n2.subject, n2.metric, n2.ended) == ("node n2", "xgpu_node_info", False)
    assert 115 < n2.age_s < 200
    assert (n3.subject, n3.ended) == ("node n3", True)


async def test_nodes_whose_series_ended_are_flagged(prometheus: Backfilled) -> None:
    result = assemble(await read(prometheus.url, 300), stale_after_s=300)
    assert [n.name for n in result.cluster.nodes] == ["n1", "n2"]
    assert "ml/c" in {p.name for p in result.cluster.pods}
    (stale,) = result.stale
    assert (stale.subject, stale.ended) == ("node n3", True)
    assert 390 < stale.age_s < 480  # subquery steps: to the evaluation interval (1 s here)


async def test_gather_reports_its_source_and_missing_kubernetes(prometheus: Backfilled) -> None:
    gathered = await gather(SourceConfig(prometheus=prometheus.url, stale_after_s=60))
    assert gathered.source == f"prometheus {prometheus.url}"
    assert len(gathered.cluster.nodes) == 1
    assert [s.subject for s in gathered.stale] == ["node n2", "node n3"]
    assert gathered.warnings[-1].startswith("no Kubernetes source: Pending pods are unknown")


async def test_usage_history_frame(prometheus: Backfilled) -> None:
    owners = {"ml/a": "Deployment/ml/a"}
    frame = await usage_history(
        prometheus.url, window=1800, step=60, end=prometheus.now, owners=owners
    )
    assert list(frame.columns) == list(HISTORY_COLUMNS)
    assert str(frame["timestamp"].dt.tz) == "UTC"
    assert frame["gpu_index"].dtype == "int64"
    assert not frame.duplicated(
        ["timestamp", "node", "namespace", "pod", "container", "gpu_index"]
    ).any()
    x0 = frame[(frame["pod"] == "a") & (frame["container"] == "x") & (frame["gpu_index"] == 0)]
    assert len(x0) == 31  # 30 minutes at 1-minute steps, both ends included
    assert set(x0["owner"]) == {"Deployment/ml/a"}
    assert set(x0["memory_allotted_bytes"]) == {2048.0 * MIB}  # twins deduplicated, not summed
    assert set(x0["memory_used_bytes"]) == {1000.0 * MIB}
    assert set(x0["core_allotted_percent"]) == {10.0}
    assert set(x0["core_used_percent"]) == {5.0}
    b = frame[frame["pod"] == "b"]
    assert set(b["owner"]) == {""}
    assert b["core_allotted_percent"].isna().all()  # memory isolation: no core series
    assert set(frame["node"]) == {"n1", "n2"}  # n3 ran no vGPU


async def test_usage_history_feeds_rightsizing(prometheus: Backfilled) -> None:
    frame = await usage_history(prometheus.url, window=1800, step=60, end=prometheus.now)
    # Half an hour is too little history for the defaults (24 h): asked for less, it advises.
    by_default = rightsize(frame)["workloads"][0]
    assert by_default["not_advised"].startswith("not enough history (")
    result = rightsize(frame, settings=RightsizingSettings(min_history_s=1800, min_samples=30))
    x = next(w for w in result["workloads"] if (w["workload"], w["container"]) == ("ml/a", "x"))
    assert x["memory_mib"]["allotted"] == 2048
    assert x["memory_mib"]["used_peak"] == 1100.0  # card 1 uses the most
    assert x["memory_mib"]["recommended"] == 1408  # 1100 x 1.2, up to 128 MiB
    assert x["core_percent"]["used_p95"] == 5.0


async def test_usage_history_of_a_quiet_window_is_empty(prometheus: Backfilled) -> None:
    frame = await usage_history(prometheus.url, window=600, step=60, end=prometheus.now - 86400)
    assert list(frame.columns) == list(HISTORY_COLUMNS)
    assert frame.empty
    assert rightsize(frame)["workloads"] == []


async def test_long_windows_split_into_several_range_queries(
    prometheus: Backfilled, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole = await usage_history(prometheus.url, window=1200, step=30, end=prometheus.now)
    monkeypatch.setattr(history_module, "MAX_POINTS", 7)
    pieces = await usage_history(prometheus.url, window=1200, step=30, end=prometheus.now)
    pd.testing.assert_frame_equal(whole, pieces)
    assert len(whole) > 40 * 4


def test_chunks_cover_the_grid_once() -> None:
    assert chunks(0, 10, 1) == [(0, 10)]
    assert history_module.MAX_POINTS == 10_000
    grid = [t for first, last in chunks(0, 30_000, 1) for t in range(int(first), int(last) + 1)]
    assert grid == list(range(30_001))


async def test_history_needs_a_positive_window() -> None:
    with pytest.raises(ValueError, match="window must be positive"):
        await usage_history("http://127.0.0.1:1", window=0, step=60)


# -- bad answers -----------------------------------------------------------------------------


async def test_unreachable_prometheus_is_one_clear_error() -> None:
    port = free_port()  # nothing listens there
    with pytest.raises(SourceError) as caught:
        await gather(SourceConfig(prometheus=f"http://127.0.0.1:{port}"))
    message = str(caught.value)
    assert message.startswith(f"Prometheus http://127.0.0.1:{port}: cannot reach it: ")
    assert "\n" not in message


async def test_a_query_prometheus_rejects(prometheus: Backfilled) -> None:
    async with client_session(5) as session:
        with pytest.raises(SourceError, match=r"query `sum\(` failed: bad_data: "):
            await PrometheusApi(prometheus.url, session).instant("sum(", 0)


@pytest.fixture
async def fake() -> AsyncIterator[tuple[str, dict[str, web.Response]]]:
    """A server answering each path with what the test put in the dict."""
    answers: dict[str, web.Response] = {}

    async def handle(request: web.Request) -> web.Response:
        return answers.get(request.query.get("query", request.path)) or vector()

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    yield f"http://127.0.0.1:{port}", answers
    await runner.cleanup()


def scalar(value: float) -> web.Response:
    data = {"resultType": "scalar", "result": [value, str(value)]}
    return web.json_response({"status": "success", "data": data})


def vector(*metrics: dict[str, str]) -> web.Response:
    result = [{"metric": m, "value": [NOW, "1"]} for m in metrics]
    return web.json_response(
        {"status": "success", "data": {"resultType": "vector", "result": result}}
    )


async def test_not_prometheus(fake: tuple[str, dict[str, web.Response]]) -> None:
    url, answers = fake
    answers["time()"] = web.Response(status=500, text="<html>oops</html>")
    with pytest.raises(SourceError, match=r"HTTP 500 without a JSON answer"):
        await gather(SourceConfig(prometheus=url))


async def test_partial_answers_are_errors(fake: tuple[str, dict[str, web.Response]]) -> None:
    url, answers = fake
    answers["time()"] = scalar(NOW)
    partial = {
        "status": "success",
        "warnings": ["No StoreAPIs matched for this query"],
        "data": {"resultType": "vector", "result": []},
    }
    async with aiohttp.ClientSession() as session:
        api = PrometheusApi(url, session)
        answers["up"] = web.json_response(partial)
        with pytest.raises(SourceError, match=r"partial answer to `up`: No StoreAPIs matched"):
            await api.instant("up", NOW)


async def test_series_without_node_label(fake: tuple[str, dict[str, web.Response]]) -> None:
    url, answers = fake
    answers["time()"] = scalar(NOW)
    memory = "max by (node, gpu_index, gpu_uuid) (xgpu_card_memory_total_bytes)"
    answers[memory] = vector({"gpu_index": "0", "gpu_uuid": "GPU-0"})
    with pytest.raises(SourceError, match=r"without a node label \(xgpu_card_memory_total_bytes\)"):
        await read(url, 60)
