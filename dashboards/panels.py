"""Panels and their grid layout, on grafanalib.

grafanalib supplies the panel objects; newer Grafana fields it lacks (range/instant
targets, value mappings, status history, the v9 heatmap options) are set through
`extraJson`, so the JSON needs no migration beyond the schema's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import attr
from grafanalib import core as g

from dashboards.common import DATASOURCE, Json, Panel


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str = ""
    instant: bool = False


def targets(queries: Sequence[Query], table: bool = False) -> list[Json]:
    return [
        {
            "datasource": DATASOURCE,
            "expr": q.expr,
            "legendFormat": q.legend,
            "refId": chr(ord("A") + i),
            "range": not q.instant,
            "instant": q.instant,
            "format": "table" if table else "time_series",
            "interval": "",
        }
        for i, q in enumerate(queries)
    ]


def steps(base: str, *levels: tuple[float, str]) -> list[Json]:
    """Threshold steps: `base` colour below the first level, then (value, colour) pairs."""
    return [{"color": base, "value": None}] + [{"color": c, "value": v} for v, c in levels]


def value_mapping(texts: Mapping[int, tuple[str, str]]) -> list[Json]:
    """Grafana value mappings from {value: (text, colour)}."""
    options = {
        str(value): {"text": text, "color": colour, "index": i}
        for i, (value, (text, colour)) in enumerate(sorted(texts.items()))
    }
    return [{"type": "value", "options": options}]


MODE_MAPPING = value_mapping(
    {0: ("memory", "blue"), 1: ("memory+core", "purple"), 2: ("unused", "text")}
)
HEALTH_MAPPING = value_mapping({0: ("healthy", "green"), 1: ("unhealthy", "red")})
SUCCESS_MAPPING = value_mapping({0: ("failing", "red"), 1: ("ok", "green")})


def _base(title: str, description: str, queries: Sequence[Query], table: bool = False) -> Json:
    return {
        "title": title,
        "description": description,
        "dataSource": DATASOURCE,
        "targets": targets(queries, table),
        "maxDataPoints": None,
    }


def _defaults(unit: str, thresholds: list[Json] | None, **extra: Any) -> Json:
    fields = {
        "unit": unit,
        "thresholds": {"mode": "absolute", "steps": thresholds or steps("green")},
    }
    fields.update({k: v for k, v in extra.items() if v is not None})
    return fields


def timeseries(
    title: str,
    description: str,
    queries: Sequence[Query],
    unit: str,
    *,
    thresholds: list[Json] | None = None,
    min_value: float | None = None,
    max_value: float | None = None,
    decimals: int | None = None,
    stacked: bool = False,
    bars: bool = False,
    stepped: bool = False,
    links: Sequence[Json] = (),
    overrides: Sequence[Json] = (),
) -> Panel:
    defaults = _defaults(
        unit, thresholds, min=min_value, max=max_value, decimals=decimals, links=list(links)
    )
    return g.TimeSeries(
        **_base(title, description, queries),
        unit=unit,
        drawStyle="bars" if bars else "line",
        fillOpacity=80 if bars else (30 if stacked else 10),
        lineInterpolation="stepAfter" if stepped else "linear",
        stacking={"mode": "normal", "group": "A"} if stacked else {"mode": "none"},
        thresholdsStyleMode="line" if thresholds else "off",
        legendDisplayMode="table",
        legendPlacement="right" if len(queries) == 1 else "bottom",
        legendCalcs=["lastNotNull", "max"],
        tooltipMode="multi",
        tooltipSort="desc",
        overrides=list(overrides),
        extraJson={"fieldConfig": {"defaults": defaults}},
    )


def stat(
    title: str,
    description: str,
    query: Query,
    unit: str,
    *,
    thresholds: list[Json] | None = None,
    decimals: int | None = None,
    color_mode: str = "value",
    asides: Sequence[tuple[Query, str, str]] = (),
    links: Sequence[Json] = (),
) -> Panel:
    """One figure, coloured by `thresholds`. `asides`: (query, name, unit) figures shown
    after it in the text colour, so that only the headline's colour speaks."""
    overrides = [
        {
            "matcher": {"id": "byFrameRefID", "options": chr(ord("B") + i)},
            "properties": [
                {"id": "displayName", "value": name},
                {"id": "unit", "value": aside_unit},
                {"id": "color", "value": {"mode": "fixed", "fixedColor": "text"}},
            ],
        }
        for i, (_, name, aside_unit) in enumerate(asides)
    ]
    return g.Stat(
        **_base(title, description, [query, *(q for q, _, _ in asides)]),
        format=unit,
        decimals=decimals,
        thresholds=thresholds or steps("green"),
        color={"mode": "thresholds"},
        colorMode=color_mode,
        reduceCalc="lastNotNull",
        noValue="no data",
        overrides=overrides,
        textMode="value_and_name" if asides else "auto",
        links=list(links),
    )


def table(
    title: str,
    description: str,
    queries: Sequence[Query],
    unit: str,
    *,
    rename: Mapping[str, str],
    hide: Sequence[str] = ("Time", "job", "instance", "__name__"),
    sort_by: str = "",
    links: Sequence[Json] = (),
) -> Panel:
    organize = {
        "id": "organize",
        "options": {
            "excludeByName": dict.fromkeys(hide, True),
            "renameByName": dict(rename),
        },
    }
    return g.Table(
        **_base(title, description, queries, table=True),
        unit=unit,
        filterable=True,
        sortBy=[g.TableSortByField(displayName=sort_by, desc=True)] if sort_by else [],
        transformations=[organize],
        extraJson={"fieldConfig": {"defaults": _defaults(unit, None, links=list(links))}},
    )


def state_timeline(
    title: str, description: str, query: Query, mappings: list[Json], *, kind: str = "state"
) -> Panel:
    """A row per series, coloured by value mapping; `kind="status"` draws status history."""
    panel = g.StateTimeline(
        **_base(title, description, [query]),
        mappings=mappings,
        showValue="never" if kind == "status" else "auto",
        rowHeight=0.9,
        colorMode="thresholds",
        extraJson={"fieldConfig": {"defaults": _defaults("none", None)}},
    )
    if kind == "status":
        panel = attr.evolve(panel, extraJson={**panel.extraJson, "type": "status-history"})
    return panel


def status_heat(title: str, description: str, query: Query, unit: str) -> Panel:
    """Status history coloured on a continuous scale: a per-series heatmap over time."""
    panel = state_timeline(title, description, query, [], kind="status")
    defaults = _defaults(unit, None, min=0, color={"mode": "continuous-RdYlGr"})
    return attr.evolve(
        panel,
        maxDataPoints=60,
        extraJson={**panel.extraJson, "fieldConfig": {"defaults": defaults}},
    )


def heatmap(title: str, description: str, query: Query, unit: str, buckets: int = 10) -> Panel:
    """Grafana 9 heatmap that buckets the series' values at each step (count per bucket)."""
    options = {
        "calculate": True,
        "calculation": {"yBuckets": {"mode": "count", "value": str(buckets)}},
        "color": {"mode": "scheme", "scheme": "Oranges", "steps": 64, "exponent": 0.5},
        "yAxis": {"axisPlacement": "left", "unit": unit},
        "cellValues": {"unit": "none"},
        "tooltip": {"show": True, "yHistogram": True},
        "legend": {"show": True},
    }
    return g.Heatmap(
        **_base(title, description, [query]),
        extraJson={
            "options": options,
            "maxDataPoints": 60,
            "fieldConfig": {"defaults": _defaults(unit, None)},
        },
    )


def row(title: str) -> Panel:
    return g.RowPanel(title=title, dataSource=DATASOURCE)


class Layout:
    """Places panels left to right in a 24-column grid, a new line when one is full.

    `row()` starts a full-width row header below everything placed so far. Ids are
    assigned in placement order, so they are unique and stable between builds.
    """

    WIDTH = 24

    def __init__(self) -> None:
        self.panels: list[Panel] = []
        self._x = 0
        self._y = 0
        self._line_height = 0

    def row(self, title: str) -> None:
        self._new_line()
        self._place(row(title), self.WIDTH, 1)
        self._new_line()

    def add(self, panel: Panel, width: int, height: int) -> None:
        if self._x + width > self.WIDTH:
            self._new_line()
        self._place(panel, width, height)

    def _new_line(self) -> None:
        self._y += self._line_height
        self._x = 0
        self._line_height = 0

    def _place(self, panel: Panel, width: int, height: int) -> None:
        position = g.GridPos(h=height, w=width, x=self._x, y=self._y)
        self.panels.append(attr.evolve(panel, gridPos=position, id=len(self.panels) + 1))
        self._x += width
        self._line_height = max(self._line_height, height)
