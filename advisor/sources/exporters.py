"""Exporters scraped directly (no Prometheus): the embedded default for small clusters.

Each URL is fetched concurrently and parsed with prometheus-client's text parser. An
exposition carries no `node` label: the node is the one its `xgpu_node_info` names. Samples
are fresh unless the exposition gives them timestamps. Any exporter that cannot be read makes
the whole read fail (a cluster with a node silently missing would mislead every finding).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from urllib.parse import urlsplit

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from advisor.errors import InputError
from advisor.sources.http import describe, run_all
from advisor.sources.values import FAMILIES, NODE_INFO, Sample

ACCEPT = "text/plain;version=0.0.4;q=1.0, */*;q=0.1"


def metrics_url(url: str) -> str:
    """`http://host:9400` means its /metrics; a URL with a path is taken as given."""
    url = url.strip()
    if "://" not in url:
        url = f"http://{url}"
    return url.rstrip("/") + "/metrics" if urlsplit(url).path in ("", "/") else url


def parse_exporter_list(text: str) -> tuple[str, ...]:
    return tuple(metrics_url(part) for part in text.split(",") if part.strip())


async def read_exporters(
    urls: Iterable[str], session: aiohttp.ClientSession, *, clock: float | None = None
) -> tuple[Sample, ...]:
    urls = list(urls)
    scraped = await run_all([_scrape(url, session, clock) for url in urls])
    seen: dict[str, str] = {}
    for url, (node, _) in zip(urls, scraped, strict=True):
        if node in seen:
            raise InputError(f"exporters {seen[node]} and {url} both report node {node!r}")
        seen[node] = url
    return tuple(sample for _, samples in scraped for sample in samples)


async def _scrape(
    url: str, session: aiohttp.ClientSession, clock: float | None
) -> tuple[str, list[Sample]]:
    try:
        async with session.get(url, headers={"Accept": ACCEPT}) as response:
            status, body = response.status, await response.text(errors="replace")
    except (aiohttp.ClientError, TimeoutError) as error:
        raise InputError(f"exporter {url}: cannot reach it: {describe(error)}") from None
    if status != 200:
        raise InputError(f"exporter {url}: HTTP {status}: {' '.join(body.split())[:200]}")
    now = time.time() if clock is None else clock
    try:
        return _samples(url, body, now)
    except ValueError as error:
        raise InputError(f"exporter {url}: cannot parse its metrics: {describe(error)}") from None


def _samples(url: str, text: str, now: float) -> tuple[str, list[Sample]]:
    wanted = set(FAMILIES)
    found: list[tuple[str, dict[str, str], float, float | None]] = []
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name in wanted:
                age = max(now - float(s.timestamp), 0.0) if s.timestamp is not None else None
                found.append((s.name, dict(s.labels), float(s.value), age))
    nodes = {labels.get("node", "") for name, labels, _, _ in found if name == NODE_INFO}
    nodes.discard("")
    if len(nodes) != 1:
        problem = "names several nodes" if nodes else "has no xgpu_node_info{node}"
        raise InputError(f"exporter {url}: {problem}: is it an xgpu exporter with --node set?")
    node = nodes.pop()
    samples = [
        Sample(name, {**labels, "node": node}, value, age)
        for name, labels, value, age in found
        if value == value  # NaN: no reading
    ]
    return node, samples
