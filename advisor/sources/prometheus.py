"""Prometheus's HTTP API with aiohttp: the current state from instant queries.

Any store that speaks the API (Thanos, Mimir, VictoriaMetrics, federation) works unchanged.
Queries are aggregated server-side to what the model needs: `max by` collapses the twins that
two scrape jobs of one exporter make, and a pod's containers are summed per card (per MIG
instance for what a MIG pod's processes use there, which says the instance it holds), so
the answer grows with cards and pods, not with containers or jobs. Every family is read
twice at one evaluation time, the server's own (no clock skew): its values, and
`timestamp()` of its newest sample, which gives each series' age. Prometheus marks the
series of a vanished target stale at once, so instant queries no longer see them; a
subquery over `timestamp(xgpu_node_info)` finds such nodes, which are reported stale, not
silently lost.
"""

from __future__ import annotations

import math
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import aiohttp

from advisor.defaults import DEFAULT_MAX_SERIES
from advisor.errors import SourceError, known
from advisor.sources.access import PrometheusAccess
from advisor.sources.answers import AnswerLimit, TooDeep, fetch, parse_json
from advisor.sources.http import checked_url, describe, run_all, shown_url
from advisor.sources.series import (
    label_problem,
    number,
    one_line,
    series_name,
    string_labels,
    value_problem,
)
from advisor.sources.values import (
    CARD_HEALTH,
    CARD_INFO,
    CARD_MEMORY,
    CARD_MIG_MODE,
    CARD_MODE,
    COLLECTOR_SUCCESS,
    MIG_INSTANCE,
    MIG_POD,
    NODE_INFO,
    VGPU_CORE,
    VGPU_MEMORY,
    Sample,
)

Labels = dict[str, str]
T = TypeVar("T")
# A snapshot of 5,000 nodes x 8 cards and 30,000 vGPUs reads about 500,000 series in all
# (each family twice: values and sample times).
VGPU_KEY = ("node", "namespace", "pod", "gpu_index")
CARD_KEY = ("node", "gpu_index", "gpu_uuid")
MIG_KEY = (*CARD_KEY, "GPU_I_ID", "GPU_I_PROFILE", "mig_start")
MIG_POD_KEY = ("node", "namespace", "pod", *MIG_KEY[1:])
Selector = Callable[[str], str]
CREDENTIALS = "--prometheus.bearer-token-file, --prometheus.basic-auth-file, --prometheus.header"


class PrometheusApi:
    """The few endpoints the advisor reads; every failure is one SourceError naming the URL
    (never a credential). Every metric selector of every query carries `access.matchers`."""

    def __init__(
        self,
        url: str,
        session: aiohttp.ClientSession,
        access: PrometheusAccess | None = None,
        limit: AnswerLimit | None = None,
        max_series: int = DEFAULT_MAX_SERIES,
    ) -> None:
        self.url = checked_url(url, "Prometheus").rstrip("/")
        self.max_series = self.series_left = max_series
        self.session = session
        self.access = access or PrometheusAccess()
        self.limit = limit or AnswerLimit()
        self._headers = dict(self.access.headers)
        if urlsplit(url).username is not None and "authorization" in map(str.lower, self._headers):
            raise self.fail("credentials in the URL and in a flag: give one")
        tls = self.access.tls()
        self._ssl: ssl.SSLContext | bool = True if tls is None else tls

    def fail(self, problem: str) -> SourceError:
        return SourceError(f"Prometheus {shown_url(self.url)}: {problem}")

    def select(self, metric: str) -> str:
        return self.access.select(metric)

    async def _data(self, path: str, params: dict[str, str]) -> dict[str, Any]:
        expr = params.get("query", "")
        source = f"Prometheus {shown_url(self.url)}"
        try:
            answer = await fetch(
                self.session,
                self.url + path,
                self.limit,
                source,
                params=params,
                headers=self._headers,
                ssl=self._ssl,
            )
        except (aiohttp.ClientError, TimeoutError, ValueError) as error:  # ValueError: bad URL
            raise self.fail(f"cannot reach it: {describe(error)}") from None
        status, body = answer.status, answer.body
        if status in (401, 403):
            raise self.fail(f"HTTP {status}: access refused (credentials: {CREDENTIALS})")
        try:
            parsed = parse_json(body)
        except TooDeep:
            raise self.fail(f"answer to `{expr}` is JSON nested too deep") from None
        except ValueError:
            parsed = None
        if not isinstance(parsed, dict):
            raise self.fail(f"HTTP {status} without a JSON answer (is this Prometheus's API?)")
        if parsed.get("status") != "success":
            kind, text = parsed.get("errorType", f"HTTP {status}"), parsed.get("error", "")
            raise self.fail(f"query `{expr}` failed: {one_line(kind)}: {one_line(text)}")
        if parsed.get("warnings"):  # e.g. Thanos with a store down: a partial answer
            warnings = parsed["warnings"]
            shown = "; ".join(one_line(w) for w in warnings) if isinstance(warnings, list) else ""
            raise self.fail(f"partial answer to `{expr}`: {shown or one_line(warnings)}")
        data = parsed.get("data")
        if not isinstance(data, dict):
            raise self.fail(f"answer to `{expr}` has no data")
        return data

    async def server_time(self) -> float:
        """The server's clock: every later query is evaluated at this one instant."""
        data = await self._data("/api/v1/query", {"query": "time()"})
        result = data.get("result")
        if data.get("resultType") == "vector" and isinstance(result, list) and len(result) == 1:
            # VictoriaMetrics answers a scalar as a vector of one series without labels.
            item = result[0]
            result = item.get("value") if isinstance(item, dict) else None
        at = number(result[1]) if isinstance(result, list) and len(result) == 2 else None
        if at is None or not math.isfinite(at):
            raise self.fail("answer to `time()` is not a scalar")
        return at

    async def instant(self, expr: str, at: float) -> list[tuple[Labels, object]]:
        """Each series' labels and raw value (a string, as the API writes numbers); the
        caller judges the value, knowing what it stands for."""
        data = await self._data("/api/v1/query", {"query": expr, "time": f"{at:.3f}"})
        if data.get("resultType") != "vector":
            raise self.fail(f"`{expr}` gave a {one_line(data.get('resultType'))}, not a vector")
        return self._once(expr, [self._point(expr, item) for item in self._items(data)])

    async def range(
        self, expr: str, start: float, end: float, step: float, metric: str = ""
    ) -> list[tuple[Labels, list[tuple[float, float]]]]:
        """Each series' points; a point that is not a finite, non-negative number within
        bounds is an error naming the series (`metric` and its labels)."""
        params = {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
        data = await self._data("/api/v1/query_range", params)
        if data.get("resultType") != "matrix":
            raise self.fail(f"`{expr}` gave a {one_line(data.get('resultType'))}, not a matrix")
        series = []
        for item in self._items(data):
            labels = string_labels(item.get("metric")) if isinstance(item, dict) else None
            raw = item.get("values") if isinstance(item, dict) else None
            if labels is None or not isinstance(raw, list):
                raise self.fail(f"malformed series in the answer to `{expr}`")
            points = []
            for pair in raw:
                t, v = (pair[0], pair[1]) if isinstance(pair, list) and len(pair) == 2 else (0, 0)
                time_, value = number(t), number(v)
                if not isinstance(pair, list) or len(pair) != 2 or time_ is None:
                    raise self.fail(f"malformed point in the answer to `{expr}`")
                problem = value_problem(value, v)
                if problem is not None:
                    raise self.invalid(metric or expr, labels, problem)
                points.append((time_, known(value, "a point's value, checked above")))
            series.append((labels, points))
        return self._once(expr, series)

    def _once(self, expr: str, series: list[tuple[Labels, T]]) -> list[tuple[Labels, T]]:
        """`series`, refused when two share their labels: Prometheus never answers so (a
        vector cannot hold one label set twice), so a proxy merging servers or a broken
        server does, and which of two values is true cannot be told."""
        seen: set[tuple[tuple[str, str], ...]] = set()
        for labels, _ in series:
            key = tuple(sorted(labels.items()))
            if key in seen:
                shown = series_name("", labels)
                raise self.fail(f"answer to `{expr}` holds the series {shown} twice")
            seen.add(key)
        return series

    def invalid(self, metric: str, labels: Labels, problem: str) -> SourceError:
        return self.fail(f"invalid series {series_name(metric, labels)}: {problem}")

    def _point(self, expr: str, item: Any) -> tuple[Labels, object]:
        labels = string_labels(item.get("metric")) if isinstance(item, dict) else None
        value = item.get("value") if isinstance(item, dict) else None
        if labels is None or not isinstance(value, list) or len(value) != 2:
            raise self.fail(f"malformed sample in the answer to `{expr}`")
        return labels, value[1]

    def _items(self, data: dict[str, Any]) -> list[Any]:
        """The result's series, counted against the cap on series in all: each parsed series
        is kept until the model is built, so their number, not only each answer's bytes,
        bounds the memory a read takes."""
        result = data.get("result")
        items = result if isinstance(result, list) else []
        self.series_left -= len(items)
        if self.series_left < 0:
            raise self.fail(f"more than {self.max_series:,} series (--prometheus.max-series)")
        return items


@dataclass(frozen=True, slots=True)
class _Family:
    metric: str
    value: str  # PromQL: one series per key
    newest: str  # PromQL: per key, the timestamp its value's samples were taken at


# Every expression is built here from `select(metric)`, the metric's selector with the
# --prometheus.selector matchers, so no query can leave them out. We build these few shapes
# ourselves; editing them through a PromQL parser (the one on PyPI is a native extension that
# cannot print a tree back) would add a dependency to do what construction already ensures.
def _latest(metric: str, key: tuple[str, ...], select: Selector) -> _Family:
    by, series = ", ".join(key), select(metric)
    return _Family(metric, f"max by ({by}) ({series})", f"max by ({by}) (timestamp({series}))")


def _per_pod(metric: str, key: tuple[str, ...], select: Selector) -> _Family:
    by, inner = ", ".join(key), ", ".join((*key, "container"))
    series = select(metric)
    return _Family(
        metric,
        f"sum by ({by}) (max by ({inner}) ({series}))",
        # A pod's card (or instance) is as old as its oldest container there.
        f"min by ({by}) (max by ({inner}) (timestamp({series})))",
    )


def families(select: Selector) -> tuple[_Family, ...]:
    return (
        _latest(NODE_INFO, ("node",), select),
        _latest(CARD_INFO, (*CARD_KEY, "model"), select),
        _latest(CARD_MEMORY, CARD_KEY, select),
        _latest(CARD_HEALTH, CARD_KEY, select),
        _latest(CARD_MODE, CARD_KEY, select),
        _latest(CARD_MIG_MODE, CARD_KEY, select),
        _latest(MIG_INSTANCE, MIG_KEY, select),
        _per_pod(VGPU_MEMORY, VGPU_KEY, select),
        _per_pod(VGPU_CORE, VGPU_KEY, select),
        _per_pod(MIG_POD, MIG_POD_KEY, select),
        _latest(COLLECTOR_SUCCESS, ("node", "collector"), select),
    )


def ended_query(select: Selector, stale_after_s: float) -> str:
    window = max(int(2 * stale_after_s), 60)
    return f"max by (node) (max_over_time(timestamp({select(NODE_INFO)})[{window}s:]))"


async def read_prometheus(
    url: str,
    session: aiohttp.ClientSession,
    *,
    stale_after_s: float,
    access: PrometheusAccess | None = None,
    limit: AnswerLimit | None = None,
    max_series: int = DEFAULT_MAX_SERIES,
) -> tuple[Sample, ...]:
    """The exporter's series at the server's now, with ages. Nodes whose series ended within
    twice `stale_after_s` (plus the store's lookback, 5 minutes in Prometheus) come back as
    `ended` node samples; older ones are gone from the cluster."""
    api = PrometheusApi(url, session, access, limit, max_series)
    at = await api.server_time()  # also the reachability check: one error, not a dozen
    read = families(api.select)
    queries = [api.instant(q, at) for f in read for q in (f.value, f.newest)]
    *answers, recent = await run_all(
        [*queries, api.instant(ended_query(api.select, stale_after_s), at)]
    )
    samples: list[Sample] = []
    for i, family in enumerate(read):
        values, newest = answers[2 * i], answers[2 * i + 1]
        taken = {_key(labels): _time(api, family.metric, labels, t) for labels, t in newest}
        for labels, raw in values:
            value = number(raw)
            problem = label_problem(family.metric, labels) or value_problem(value, raw)
            if problem is not None:
                raise api.invalid(family.metric, labels, problem)
            t = taken.get(_key(labels))
            age = max(at - t, 0.0) if t is not None else None
            samples.append(Sample(family.metric, labels, known(value, "a checked value"), age))
    _require_node_labels(api, samples)
    live = {s.label("node") for s in samples if s.metric == NODE_INFO}
    for labels, raw in recent:
        t = _time(api, NODE_INFO, labels, raw)
        if labels.get("node") and labels["node"] not in live:
            samples.append(Sample(NODE_INFO, labels, 1.0, max(at - t, 0.0), ended=True))
    return tuple(samples)


def _time(api: PrometheusApi, metric: str, labels: Labels, raw: object) -> float:
    t = number(raw)
    if t is None or not math.isfinite(t):
        raise api.invalid(metric, labels, f"sample time {raw!r:.40} is not a finite number")
    return t


def _key(labels: Labels) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(labels.items()))


def _require_node_labels(api: PrometheusApi, samples: list[Sample]) -> None:
    unnamed = sorted({s.metric for s in samples if not s.label("node")})
    if unnamed:
        raise api.fail(
            f"series without a node label ({', '.join(unnamed)}): the scrape config must add "
            "the target's node name as `node` (see deploy/prometheus/scrape-config.yaml)"
        )
