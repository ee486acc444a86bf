"""What Grafana does with the dashboards' JSON before a query reaches Prometheus.

Variables are interpolated the way Grafana's Prometheus datasource does it for multi-value
variables with "All": All becomes the variable's `allValue`, one value is regex-escaped,
several become `(a|b)`. `label_values(MATCH, LABEL)` variable queries are answered from
the label-values API with `match[]`, as Grafana 9+ does.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

Json = dict[str, Any]
Selections = Mapping[str, "list[str] | None"]  # None: "All"

# Grafana's built-ins at the test's scale: 15 s scrapes, about an hour on screen.
BUILTINS = {"__rate_interval": "1m", "__interval": "15s", "__range": "1h"}
VARIABLE = re.compile(r"\$\{(\w+)(?::\w+)?\}|\$(\w+)")
LABEL_VALUES = re.compile(r"^label_values\((?:(?P<match>.+),\s*)?(?P<label>\w+)\)$")
LEGEND_LABEL = re.compile(r"\{\{\s*(\w+)\s*\}\}")


def regex_escape(value: str) -> str:
    """Grafana's prometheusRegularEscape: a regex-safe value inside a PromQL string."""
    value = value.replace("\\", "\\\\\\\\")
    return re.sub(r"[$^*{}\[\]'+?.()|]", lambda m: "\\\\" + m.group(0), value)


def format_selection(selection: list[str] | None, all_value: str) -> str:
    if selection is None:
        return all_value
    escaped = [regex_escape(value) for value in selection]
    return escaped[0] if len(escaped) == 1 else "(" + "|".join(escaped) + ")"


def interpolate(text: str, selections: Selections, all_values: Mapping[str, str]) -> str:
    """Substitute every `$var` / `${var}`; an unknown variable is an error, as a typo is."""

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name in BUILTINS:
            return BUILTINS[name]
        if name not in selections:
            raise KeyError(f"${name} is not a variable of this dashboard: {text}")
        return format_selection(selections[name], all_values.get(name, ".*"))

    return VARIABLE.sub(substitute, text)


def panels(dashboard: Json) -> Iterator[Json]:
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


@dataclass(frozen=True)
class Target:
    dashboard: str
    panel: Json
    target: Json

    @property
    def name(self) -> str:
        return f"{self.dashboard} / {self.panel['title']} / {self.target['refId']}"

    @property
    def unit(self) -> str:
        """The panel's unit, or the one a field override gives this target's frames."""
        unit: str = self.panel["fieldConfig"]["defaults"].get("unit", "")
        for override in self.panel["fieldConfig"].get("overrides", []):
            if override["matcher"] == {"id": "byFrameRefID", "options": self.target["refId"]}:
                for prop in override["properties"]:
                    if prop["id"] == "unit":
                        unit = prop["value"]
        return unit


def targets(dashboard: Json) -> Iterator[Target]:
    for panel in panels(dashboard):
        for target in panel.get("targets", []):
            yield Target(dashboard["uid"], panel, target)


def query_variables(dashboard: Json) -> list[Json]:
    return [v for v in dashboard["templating"]["list"] if v["type"] == "query"]


def all_values(dashboard: Json) -> dict[str, str]:
    return {v["name"]: v["allValue"] for v in query_variables(dashboard) if v["allValue"]}


def parse_label_values(query: str) -> tuple[str | None, str]:
    match = LABEL_VALUES.match(query.strip())
    assert match, f"not a label_values() query: {query}"
    return match.group("match"), match.group("label")


def legend_labels(legend_format: str) -> set[str]:
    return set(LEGEND_LABEL.findall(legend_format))


def render_legend(legend_format: str, labels: Mapping[str, str]) -> str:
    return LEGEND_LABEL.sub(lambda m: labels.get(m.group(1), ""), legend_format)
