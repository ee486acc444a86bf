"""Running the dashboards' queries on a real Prometheus (tests/realparts.py starts it)."""

from __future__ import annotations

from dataclasses import dataclass

from tests.dashboards.dashboards_grafana import (
    Json,
    Selections,
    Target,
    all_values,
    interpolate,
    parse_label_values,
    query_variables,
    targets,
)
from tests.realparts import Prometheus, Sample


@dataclass(frozen=True)
class Window:
    start: float
    end: float
    step: float


def choose(
    prometheus: Prometheus, dashboard: Json, window: Window, first: bool
) -> dict[str, list[str] | None]:
    """Walk the variable chain as Grafana does: each query sees the choices before it.

    `first`: pick each variable's first option (in the variable's sort order), else "All".
    Every variable must offer at least one option, but `cluster`: a single Prometheus has
    no `cluster` label, and Grafana then offers "All" alone (its `.*` matches no label).
    """
    selections: dict[str, list[str] | None] = {"datasource": ["test"]}
    for variable in query_variables(dashboard):
        match, label = parse_label_values(
            interpolate(variable["query"], selections, all_values(dashboard))
        )
        options = prometheus.label_values(label, match, window.start, window.end)
        if not options and variable["name"] == "cluster":
            selections["cluster"] = None
            continue
        assert options, f"{dashboard['uid']}: variable {variable['name']} has no options"
        numeric = variable["sort"] in (3, 4)
        options.sort(key=lambda v: (float(v), v) if numeric else (0.0, v))
        selections[variable["name"]] = [options[0]] if first else None
    return selections


@dataclass(frozen=True)
class Answer:
    target: Target
    expr: str
    series: list[Sample]

    def values(self) -> list[float]:
        return [float(v) for s in self.series for _, v in s.get("values", [s.get("value")])]


def run_all(
    prometheus: Prometheus, dashboard: Json, selections: Selections, window: Window
) -> list[Answer]:
    """Every target of the dashboard as a range query; instant targets also as instant."""
    answers = []
    for target in targets(dashboard):
        expr = interpolate(target.target["expr"], selections, all_values(dashboard))
        series = prometheus.query_range(expr, window.start, window.end, window.step)
        if target.target.get("instant"):
            instant = prometheus.query(expr, window.end)
            answers.append(Answer(target, expr, instant))
        answers.append(Answer(target, expr, series))
    return answers
