"""Exporters scraped directly (no Prometheus): the embedded default for small clusters.

Each URL is fetched concurrently and parsed with prometheus-client's text parser. An
exposition carries no `node` label: the node is the one its `xgpu_node_info` names. Samples
are fresh unless the exposition gives them timestamps. Any exporter that cannot be read makes
the whole read fail (a cluster with a node silently missing would mislead every finding).
"""

from __future__ import annotations

import codecs
import time
from collections.abc import Iterable
from urllib.parse import urlsplit

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from advisor.defaults import DEFAULT_MAX_EXPORTER_BYTES
from advisor.errors import SourceError
from advisor.sources.answers import AnswerLimit, fetch
from advisor.sources.http import checked_url, describe, run_all, shown_url
from advisor.sources.series import label_problem, one_line, series_name, value_problem
from advisor.sources.values import FAMILIES, NODE_INFO, Sample

ACCEPT = "text/plain;version=0.0.4;q=1.0, */*;q=0.1"
# One node's exposition is kilobytes (a few cards, a few dozen pods); 16 MiB is room to spare.
EXPORTER_LIMIT = AnswerLimit(DEFAULT_MAX_EXPORTER_BYTES, "--exporters.max-answer-bytes")


def metrics_url(url: str) -> str:
    """`http://host:19400` means its /metrics; a URL with a path is taken as given."""
    url = url.strip()
    if "://" not in url:
        url = f"http://{url}"
    url = checked_url(url, "exporter")
    return url.rstrip("/") + "/metrics" if urlsplit(url).path in ("", "/") else url


def parse_exporter_list(text: str) -> tuple[str, ...]:
    return tuple(metrics_url(part) for part in text.split(",") if part.strip())


async def read_exporters(
    urls: Iterable[str],
    session: aiohttp.ClientSession,
    *,
    clock: float | None = None,
    limit: AnswerLimit = EXPORTER_LIMIT,
) -> tuple[Sample, ...]:
    urls = list(urls)
    scraped = await run_all([_scrape(url, session, clock, limit) for url in urls])
    seen: dict[str, str] = {}
    for url, (node, _) in zip(urls, scraped, strict=True):
        if node in seen:
            raise SourceError(
                f"exporters {shown_url(seen[node])} and {shown_url(url)} both report node {node!r}"
            )
        seen[node] = url
    return tuple(sample for _, samples in scraped for sample in samples)


async def _scrape(
    url: str, session: aiohttp.ClientSession, clock: float | None, limit: AnswerLimit
) -> tuple[str, list[Sample]]:
    try:
        answer = await fetch(
            session, url, limit, f"exporter {shown_url(url)}", headers={"Accept": ACCEPT}
        )
        status, body = answer.status, answer.body.decode(_charset(answer.charset), "replace")
    except (aiohttp.ClientError, TimeoutError, ValueError) as error:  # ValueError: a bad URL
        raise SourceError(
            f"exporter {shown_url(url)}: cannot reach it: {describe(error)}"
        ) from None
    if status != 200:
        raise SourceError(f"exporter {shown_url(url)}: HTTP {status}: {one_line(body, 200)}")
    if body.lstrip()[:1] == "<":  # no exposition line starts so; a page does
        raise SourceError(
            f"exporter {shown_url(url)}: HTTP 200 with an HTML page, not metrics (a login "
            "page or a proxy in front of it? is this an xgpu exporter's /metrics?)"
        )
    now = time.time() if clock is None else clock
    try:
        return _samples(url, body, now)
    except ValueError as error:  # the parser quotes the line: it may be 100 KB long
        raise SourceError(
            f"exporter {shown_url(url)}: cannot parse its metrics: {one_line(describe(error))}"
        ) from None


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
        problem = "names several nodes" if nodes else f"has no {NODE_INFO}{{node}}"
        raise SourceError(
            f"exporter {shown_url(url)}: {problem}: is it an xgpu exporter with --node set?"
        )
    node = nodes.pop()
    samples: list[Sample] = []
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    for name, labels, value, age in found:
        invalid = label_problem(name, labels) or value_problem(value, value)
        key = (name, tuple(sorted(labels.items())))
        if invalid is None and key in seen:  # which of the two is true cannot be told
            invalid = "given twice"
        if invalid is not None:  # the exporter writes no NaN: present but unusable
            shown = series_name(name, labels)
            raise SourceError(f"exporter {shown_url(url)}: invalid series {shown}: {invalid}")
        seen.add(key)
        samples.append(Sample(name, {**labels, "node": node}, value, age))
    return node, samples


def _charset(charset: str | None) -> str:
    try:
        return codecs.lookup(charset or "utf-8").name
    except LookupError:
        return "utf-8"
