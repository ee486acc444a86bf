"""Usage history for right-sizing: range queries into one tidy pandas DataFrame.

One row per vGPU (node, namespace, pod, container, gpu_index) and step, with memory and core
allotted and used, in the columns `advisor.rightsizing.HISTORY_COLUMNS` reads. Series are
deduplicated server-side (`max by`, as in the current state). Long windows are split into
range queries of at most MAX_POINTS steps each, under the 11,000 points per series that
Prometheus answers. Metrics know no owners: pass them (from Kubernetes, e.g. the gathered
cluster's pods) to fill the `owner` column.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import timedelta

import aiohttp
import pandas as pd

from advisor import metricnames as M
from advisor.defaults import DEFAULT_MAX_SERIES, DEFAULT_TIMEOUT_S
from advisor.errors import known
from advisor.rightsizing import HISTORY_COLUMNS
from advisor.sources.answers import AnswerLimit
from advisor.sources.gather import SourceConfig
from advisor.sources.http import client_session, run_all
from advisor.sources.prometheus import PrometheusApi

KEYS = ["node", "namespace", "pod", "container", "gpu_index"]
MEASURES = {  # column -> metric, in the metric's own unit
    "memory_allotted_bytes": M.MEMORY_TOTAL.name,
    "memory_used_bytes": M.MEMORY_USED.name,
    "core_allotted_percent": M.CORE_TOTAL.name,
    "core_used_percent": M.CORE_USED.name,
}
COLUMNS = list(HISTORY_COLUMNS)
MAX_POINTS = 10_000


def _seconds(value: timedelta | float, what: str) -> float:
    seconds = value.total_seconds() if isinstance(value, timedelta) else float(value)
    if not math.isfinite(seconds) or seconds <= 0:
        raise ValueError(f"{what} must be positive, got {value!r}")
    return seconds


def chunks(start: float, end: float, step: float) -> list[tuple[float, float]]:
    """[start, end] on the grid start + k*step, cut into pieces of at most MAX_POINTS steps."""
    pieces = []
    first = start
    while first <= end:
        last = min(end, first + (MAX_POINTS - 1) * step)
        pieces.append((first, last))
        first = last + step
    return pieces


async def usage_history(
    prom_url: str,
    window: timedelta | float,
    step: timedelta | float,
    *,
    end: float | None = None,
    owners: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    session: aiohttp.ClientSession | None = None,
    source: SourceConfig | None = None,
) -> pd.DataFrame:
    """Columns COLUMNS: `timestamp` (UTC datetime), the labels, `owner` from `owners`
    ("namespace/pod" -> "Kind/namespace/name"; "" when unknown), `gpu_index` as an integer
    (vGPUs on cards without one are left out), measures as floats, NaN where a series has no
    point (core for memory-isolated vGPUs). `window` and `step` are seconds or timedeltas;
    `end` (unix seconds) defaults to the server's now. `source`, when given, supplies the
    timeout, credentials, selector and answer cap (the live read's). Failures raise
    SourceError (the answer) or InputError (the arguments)."""
    window_s, step_s = _seconds(window, "window"), _seconds(step, "step")
    access, limit, max_series = None, None, DEFAULT_MAX_SERIES
    if source is not None:
        timeout_s, access = source.timeout_s, source.prometheus_access
        limit, max_series = AnswerLimit(source.max_answer_bytes), source.max_series
    if session is None:
        async with client_session(timeout_s) as own:
            api = PrometheusApi(prom_url, own, access, limit, max_series)
            frame = await _history(api, window_s, step_s, end)
    else:
        api = PrometheusApi(prom_url, session, access, limit, max_series)
        frame = await _history(api, window_s, step_s, end)
    known = owners or {}
    frame["owner"] = [
        known.get(f"{ns}/{pod}", "")
        for ns, pod in zip(frame["namespace"], frame["pod"], strict=True)
    ]
    return frame[COLUMNS]


async def _history(
    api: PrometheusApi, window_s: float, step_s: float, end: float | None
) -> pd.DataFrame:
    end = await api.server_time() if end is None else end
    pieces = chunks(end - window_s, end, step_s)
    by = ", ".join(KEYS)
    queries = [
        api.range(f"max by ({by}) ({api.select(metric)})", first, last, step_s, metric)
        for metric in MEASURES.values()
        for first, last in pieces
    ]
    answers = await run_all(queries)
    frame: pd.DataFrame | None = None
    for i, column in enumerate(MEASURES):
        rows = [
            (t, *(labels.get(k, "") for k in KEYS), value)
            for answer in answers[i * len(pieces) : (i + 1) * len(pieces)]
            for labels, points in answer
            for t, value in points
        ]
        part = pd.DataFrame.from_records(rows, columns=["timestamp", *KEYS, column])
        part[column] = part[column].astype("float64")
        keys = ["timestamp", *KEYS]
        frame = part if frame is None else frame.merge(part, on=keys, how="outer")
    frame = known(frame, "the merged history of at least one family")
    frame = frame[frame["gpu_index"].str.fullmatch(r"\d+")].copy()
    frame["gpu_index"] = frame["gpu_index"].astype("int64")
    frame["timestamp"] = pd.to_datetime(frame["timestamp"].astype("float64"), unit="s", utc=True)
    return frame.sort_values([*KEYS, "timestamp"], kind="stable").reset_index(drop=True)
