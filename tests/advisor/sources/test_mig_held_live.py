"""The MIG instances bound pods' processes use (`xgpu_mig_instance_pod_memory_used_bytes`),
read by both live sources and assembled (docs/design.md §13): from a real Prometheus serving
backfilled history (two scrape jobs of one exporter, a pod's two containers in one
instance: one series per pod and instance), and from an exporter scraped directly.

Node m: an A100 in MIG mode, four 1g.5gb (slices 0..3) and a 3g.20gb; ml/a's processes use
slice 2, ml/b's slice 3; ml/c, the oldest, runs none, so it alone is guessed.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator

import pytest
from aiohttp import web

from advisor.podspec.node import NodeScheduling
from advisor.sources.assemble import assemble
from advisor.sources.exporters import read_exporters
from advisor.sources.http import client_session
from advisor.sources.mignodes import MIG_STRATEGY_LABEL
from advisor.sources.prometheus import read_prometheus
from advisor.sources.values import (
    CARD_HEALTH,
    CARD_INFO,
    CARD_MEMORY,
    CARD_MIG_MODE,
    MIB,
    MIG_INSTANCE,
    MIG_POD,
    NODE_INFO,
    KubeNode,
    KubeState,
    Sample,
)
from tests.advisor.sources.builders import parsed
from tests.advisor.sources.test_assemble_mig import _mig_pod
from tests.realparts import start_prometheus, write_backfill

pytestmark = pytest.mark.realservices  # a real Prometheus; an exporter over HTTP

A100 = "NVIDIA A100-SXM4-40GB"
LAYOUT = (("1g.5gb", 0), ("1g.5gb", 1), ("1g.5gb", 2), ("1g.5gb", 3), ("3g.20gb", 4))
USES = (("a", "x", 2, 300), ("a", "y", 2, 200), ("b", "b", 3, 100))  # pod, container, slice, MiB
AGO = 5  # seconds from the last sample to the history's end
JOBS = ("servicemonitor", "podmonitor")

Series = tuple[str, dict[str, str], float]


def _instance(start: int) -> dict[str, str]:
    (gi, profile) = next((i, p) for i, (p, s) in enumerate(LAYOUT, 1) if s == start)
    card = {"gpu_index": "0", "gpu_uuid": "GPU-m-0"}
    return {**card, "GPU_I_ID": str(gi), "GPU_I_PROFILE": profile, "mig_start": str(start)}


def exporter_series() -> list[Series]:
    """What m's exporter serves (no `node` label but on xgpu_node_info)."""
    card = {"gpu_index": "0", "gpu_uuid": "GPU-m-0"}
    series: list[Series] = [
        (NODE_INFO, {"node": "m"}, 1.0),
        (CARD_INFO, {**card, "model": A100, "driver_version": "550"}, 1.0),
        (CARD_MEMORY, card, 40960.0 * MIB),
        (CARD_HEALTH, card, 0.0),
        (CARD_MIG_MODE, card, 1.0),
    ]
    series += [(MIG_INSTANCE, _instance(start), 4864.0 * MIB) for _, start in LAYOUT]
    for pod, container, start, mib in USES:
        labels = {"namespace": "ml", "pod": pod, "container": container, **_instance(start)}
        series.append((MIG_POD, labels, mib * MIB))
    return series


def _text(labels: dict[str, str]) -> str:
    return ",".join(f'{k}="{v}"' for k, v in labels.items())


def history_lines(now: float) -> list[str]:
    """Ten minutes of samples every 15 s, each series twice (two scrape jobs), with the
    `node` label the scrape config adds."""
    lines: list[str] = []
    for metric in dict.fromkeys(m for m, _, _ in exporter_series()):
        lines.append(f"# TYPE {metric} gauge")
        for name, labels, value in exporter_series():
            if name != metric:
                continue
            for job in JOBS:  # OpenMetrics: each series' samples together, in time order
                text = _text({**labels, "node": "m", "job": job})
                t = now - 600.0
                while t <= now - AGO:
                    lines.append(f"{metric}{{{text}}} {value} {t:.3f}")
                    t += 15
    return lines


def _kube() -> KubeState:
    pods = tuple(
        parsed(_mig_pod(f"ml/{name}", "1g.5gb", node="m", created=f"2024-05-01T{hour}:00:00Z"))
        for name, hour in (("a", "10"), ("b", "11"), ("c", "09"))
    )
    mixed = NodeScheduling(labels={MIG_STRATEGY_LABEL: "mixed"})
    return KubeState("k", pods, (KubeNode("m", scheduling=mixed),))


def _check_assembled(samples: tuple[Sample, ...]) -> None:
    result = assemble(samples, _kube(), stale_after_s=60)
    held = {p.name: p.mig_instances for p in result.cluster.pods}
    assert held == {"ml/a": ((0, 2),), "ml/b": ((0, 3),), "ml/c": ((0, 0),)}
    assert result.warnings == (
        "which MIG instance each pod holds is not reported where it runs no GPU process: "
        "ml/c given the first of their profile by card, then slice",
    )


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    home = tmp_path_factory.mktemp("prometheus-mig")
    write_backfill(history_lines(time.time()), home / "data")
    server = start_prometheus(home)
    yield server.url
    server.stop()


async def test_prometheus_gives_one_series_per_pod_and_instance(prometheus: str) -> None:
    async with client_session(10) as session:
        samples = await read_prometheus(prometheus, session, stale_after_s=60)
    used = sorted(
        ((dict(s.labels), s.value) for s in samples if s.metric == MIG_POD),
        key=lambda x: x[0]["pod"],
    )
    # twins collapse (max), containers sum: a pod's use of the instance
    assert used == [
        ({"node": "m", "namespace": "ml", "pod": "a", **_instance(2)}, 500.0 * MIB),
        ({"node": "m", "namespace": "ml", "pod": "b", **_instance(3)}, 100.0 * MIB),
    ]
    ages = [s.age_s for s in samples if s.metric == MIG_POD]
    assert all(age is not None and AGO - 1 < age < 60 for age in ages)
    _check_assembled(samples)


@pytest.fixture
async def exporter() -> AsyncIterator[str]:
    lines = []
    for metric in dict.fromkeys(m for m, _, _ in exporter_series()):
        lines.append(f"# TYPE {metric} gauge")
        lines += [f"{n}{{{_text(ls)}}} {v}" for n, ls, v in exporter_series() if n == metric]
    body = "\n".join(lines) + "\n"

    async def handle(_: web.Request) -> web.Response:
        return web.Response(text=body, content_type="text/plain")

    app = web.Application()
    app.router.add_get("/metrics", handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}/metrics"
    await runner.cleanup()


async def test_an_exporter_scraped_directly_gives_each_containers_use(exporter: str) -> None:
    async with client_session(10) as session:
        samples = await read_exporters([exporter], session)
    used = sorted(
        (s.label("pod"), s.label("container"), s.label("mig_start"), s.label("node"))
        for s in samples
        if s.metric == MIG_POD
    )
    assert used == [("a", "x", "2", "m"), ("a", "y", "2", "m"), ("b", "b", "3", "m")]
    _check_assembled(samples)
