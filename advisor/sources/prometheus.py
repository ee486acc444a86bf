"""Prometheus's HTTP API with aiohttp: the current state from instant queries.

Any store that speaks the API (Thanos, Mimir, VictoriaMetrics, federation) works unchanged.
Queries are aggregated server-side to what the model needs: `max by` collapses the twins that
two scrape jobs of one exporter make, and a pod's containers are summed per card, so the
answer grows with cards and pods, not with containers or jobs. Every family is read twice at
one evaluation time, the server's own (no clock skew): its values, and `timestamp()` of its
newest sample, which gives each series' age. Prometheus marks the series of a vanished target
stale at once, so instant queries no longer see them; a subquery over
`timestamp(xgpu_node_info)` finds such nodes, which are reported stale, not silently lost.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

import aiohttp

from advisor.errors import InputError
from advisor.sources.http import describe, run_all
from advisor.sources.values import (
    CARD_HEALTH,
    CARD_INFO,
    CARD_MEMORY,
    CARD_MODE,
    COLLECTOR_SUCCESS,
    NODE_INFO,
    VGPU_CORE,
    VGPU_MEMORY,
    Sample,
)

Labels = dict[str, str]
VGPU_KEY = ("node", "namespace", "pod", "gpu_index")
CARD_KEY = ("node", "gpu_index", "gpu_uuid")


class PrometheusApi:
    """The few endpoints the advisor reads; every failure is one InputError naming the URL."""

    def __init__(self, url: str, session: aiohttp.ClientSession) -> None:
        self.url = url.rstrip("/")
        self.session = session

    def fail(self, problem: str) -> InputError:
        return InputError(f"Prometheus {self.url}: {problem}")

    async def _data(self, path: str, params: dict[str, str]) -> dict[str, Any]:
        expr = params.get("query", "")
        try:
            async with self.session.get(self.url + path, params=params) as response:
                status, body = response.status, await response.read()
        except (aiohttp.ClientError, TimeoutError) as error:
            raise self.fail(f"cannot reach it: {describe(error)}") from None
        try:
            answer = json.loads(body)
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise self.fail(f"HTTP {status} without a JSON answer (is this Prometheus's API?)")
        if answer.get("status") != "success":
            kind, text = answer.get("errorType", f"HTTP {status}"), answer.get("error", "")
            raise self.fail(f"query `{expr}` failed: {kind}: {' '.join(str(text).split())}")
        if answer.get("warnings"):  # e.g. Thanos with a store down: a partial answer
            warnings = "; ".join(str(w) for w in answer["warnings"])
            raise self.fail(f"partial answer to `{expr}`: {warnings}")
        data = answer.get("data")
        if not isinstance(data, dict):
            raise self.fail(f"answer to `{expr}` has no data")
        return data

    async def server_time(self) -> float:
        """The server's clock: every later query is evaluated at this one instant."""
        data = await self._data("/api/v1/query", {"query": "time()"})
        try:
            return float(data["result"][0])
        except (KeyError, IndexError, TypeError, ValueError):
            raise self.fail("answer to `time()` is not a scalar") from None

    async def instant(self, expr: str, at: float) -> list[tuple[Labels, float]]:
        data = await self._data("/api/v1/query", {"query": expr, "time": f"{at:.3f}"})
        if data.get("resultType") != "vector":
            raise self.fail(f"`{expr}` gave a {data.get('resultType')}, not a vector")
        points = (self._point(expr, item) for item in data.get("result") or [])
        return [point for point in points if point is not None]

    async def range(
        self, expr: str, start: float, end: float, step: float
    ) -> list[tuple[Labels, list[tuple[float, float]]]]:
        params = {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
        data = await self._data("/api/v1/query_range", params)
        if data.get("resultType") != "matrix":
            raise self.fail(f"`{expr}` gave a {data.get('resultType')}, not a matrix")
        series = []
        for item in data.get("result") or []:
            try:
                labels = {str(k): str(v) for k, v in item["metric"].items()}
                points = [(float(t), float(v)) for t, v in item["values"]]
            except (KeyError, TypeError, ValueError, AttributeError):
                raise self.fail(f"malformed series in the answer to `{expr}`") from None
            series.append((labels, [(t, v) for t, v in points if math.isfinite(v)]))
        return series

    def _point(self, expr: str, item: Any) -> tuple[Labels, float] | None:
        try:
            labels = {str(k): str(v) for k, v in item["metric"].items()}
            value = float(item["value"][1])
        except (KeyError, IndexError, TypeError, ValueError, AttributeError):
            raise self.fail(f"malformed sample in the answer to `{expr}`") from None
        return (labels, value) if math.isfinite(value) else None


@dataclass(frozen=True, slots=True)
class _Family:
    metric: str
    value: str  # PromQL: one series per key
    newest: str  # PromQL: per key, the timestamp its value's samples were taken at


def _latest(metric: str, key: tuple[str, ...]) -> _Family:
    by = ", ".join(key)
    return _Family(metric, f"max by ({by}) ({metric})", f"max by ({by}) (timestamp({metric}))")


def _vgpu(metric: str) -> _Family:
    by, inner = ", ".join(VGPU_KEY), ", ".join((*VGPU_KEY, "container"))
    return _Family(
        metric,
        f"sum by ({by}) (max by ({inner}) ({metric}))",
        # A pod's card is as old as its oldest container there.
        f"min by ({by}) (max by ({inner}) (timestamp({metric})))",
    )


FAMILIES = (
    _latest(NODE_INFO, ("node",)),
    _latest(CARD_INFO, (*CARD_KEY, "model")),
    _latest(CARD_MEMORY, CARD_KEY),
    _latest(CARD_HEALTH, CARD_KEY),
    _latest(CARD_MODE, CARD_KEY),
    _vgpu(VGPU_MEMORY),
    _vgpu(VGPU_CORE),
    _latest(COLLECTOR_SUCCESS, ("node", "collector")),
)


async def read_prometheus(
    url: str, session: aiohttp.ClientSession, *, stale_after_s: float
) -> tuple[Sample, ...]:
    """The exporter's series at the server's now, with ages. Nodes whose series ended within
    twice `stale_after_s` (plus the store's lookback, 5 minutes in Prometheus) come back as
    `ended` node samples; older ones are gone from the cluster."""
    api = PrometheusApi(url, session)
    at = await api.server_time()  # also the reachability check: one error, not a dozen
    queries = [api.instant(q, at) for f in FAMILIES for q in (f.value, f.newest)]
    window = max(int(2 * stale_after_s), 60)
    ended_query = f"max by (node) (max_over_time(timestamp({NODE_INFO})[{window}s:]))"
    *answers, recent = await run_all([*queries, api.instant(ended_query, at)])
    samples: list[Sample] = []
    for i, family in enumerate(FAMILIES):
        values, newest = answers[2 * i], answers[2 * i + 1]
        taken = {_key(labels): t for labels, t in newest}
        for labels, value in values:
            t = taken.get(_key(labels))
            age = max(at - t, 0.0) if t is not None else None
            samples.append(Sample(family.metric, labels, value, age))
    _require_node_labels(api, samples)
    live = {s.label("node") for s in samples if s.metric == NODE_INFO}
    for labels, t in recent:
        if labels.get("node") and labels["node"] not in live:
            samples.append(Sample(NODE_INFO, labels, 1.0, max(at - t, 0.0), ended=True))
    return tuple(samples)


def _key(labels: Labels) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(labels.items()))


def _require_node_labels(api: PrometheusApi, samples: list[Sample]) -> None:
    unnamed = sorted({s.metric for s in samples if not s.label("node")})
    if unnamed:
        raise api.fail(
            f"series without a node label ({', '.join(unnamed)}): the scrape config must add "
            "the target's node name as `node` (see deploy/prometheus/scrape-config.yaml)"
        )
