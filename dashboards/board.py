"""Template variables and the dashboard itself, as plain JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from grafanalib import core as g
from grafanalib._gen import DashboardEncoder

from advisor import metricnames as M
from dashboards.common import (
    CARD,
    CLUSTER,
    DATASOURCE,
    NODE,
    SCHEMA_VERSION,
    TAG,
    UID,
    VGPU,
    Json,
    Panel,
)
from dashboards.panels import Layout


def _query_variable(name: str, label: str, query: str, *, sort: int = g.SORT_ALPHA_ASC) -> Panel:
    return g.Template(
        name=name,
        label=label,
        query=query,
        dataSource=DATASOURCE,
        includeAll=True,
        multi=True,
        allValue=".*",
        refresh=g.REFRESH_ON_TIME_RANGE_CHANGE,
        sort=sort,
        regex="",
    )


def datasource_variable() -> Panel:
    return g.Template(
        name="datasource",
        label="Data source",
        query="prometheus",
        type="datasource",
        default="default",
        regex="",
    )


def cluster_variable(series: str) -> Panel:
    """Clusters of a shared store, from `series`; none (a single Prometheus) leaves "All"."""
    return _query_variable("cluster", "Cluster", f"label_values({series}, cluster)")


def reports_variable(url: str) -> Panel:
    """Where the advisor's reports are served, editable (and settable as ?var-reports_url=)
    because only the viewer knows the address their browser reaches it by."""
    return g.Template(
        name="reports_url",
        label="Reports URL",
        query=url,
        default=url,
        type="textbox",
        regex="",
    )


# The chain: cluster -> node -> card -> namespace (-> pod). Nodes and cards come from
# series every exporter and every card publishes, so a node without vGPUs or a card of any
# model is listed; namespaces and pods exist only on vGPU series, so they come from those.
def variables(*, pod: bool = False) -> list[Panel]:
    chain = [
        datasource_variable(),
        cluster_variable(M.NODE_INFO.name),
        _query_variable("node", "Node", f"label_values({M.NODE_INFO}{{{CLUSTER}}}, node)"),
        _query_variable(
            "gpu",
            "GPU",
            f"label_values({M.CARD_MEMORY_TOTAL}{{{NODE}}}, gpu_index)",
            sort=g.SORT_NUMERIC_ASC,
        ),
        _query_variable(
            "namespace", "Namespace", f"label_values({M.MEMORY_TOTAL}{{{CARD}}}, namespace)"
        ),
    ]
    if pod:
        chain.append(
            _query_variable("pod", "Pod", f"label_values({M.MEMORY_TOTAL}{{{VGPU}}}, pod)")
        )
    return chain


def _prune(value: Any) -> Any:
    """Drop grafanalib's null fields (Grafana reads absent as null); a threshold step's
    `"value": null` (the base colour) is meaningful and stays."""
    if isinstance(value, dict):
        return {k: _prune(v) for k, v in value.items() if v is not None or k == "value"}
    if isinstance(value, list):
        return [_prune(v) for v in value]
    return value


def dashboard(
    key: str,
    title: str,
    description: str,
    layout: Layout,
    variables: Sequence[Panel],
    links: Sequence[Json] = (),
) -> Json:
    """The dashboard's JSON, links to its siblings carrying the variables and time range,
    then `links` (Grafana's dashboard-link JSON)."""
    siblings = g.DashboardLink(
        title="xgpu-insight",
        type="dashboards",
        tags=[TAG],
        asDropdown=True,
        includeVars=True,
        keepTime=True,
    )
    board = g.Dashboard(
        title=title,
        uid=UID[key],
        description=description,
        tags=[TAG],
        editable=True,
        graphTooltip=g.GRAPH_TOOLTIP_MODE_SHARED_CROSSHAIR,
        panels=layout.panels,
        templating=g.Templating(list=list(variables)),
        links=[siblings],
        time=g.Time("now-6h", "now"),
        timezone="browser",
        refresh="1m",
        schemaVersion=SCHEMA_VERSION,
    )
    data: Json = _prune(json.loads(json.dumps(board.to_json_data(), cls=DashboardEncoder)))
    data["links"] += list(links)
    for variable in data["templating"]["list"]:
        if variable["type"] == "query":
            # Grafana's own shape for "All" and for a query it can show in the editor.
            variable["current"] = {"selected": True, "text": ["All"], "value": ["$__all"]}
            variable["definition"] = variable["query"]
        elif variable["type"] == "textbox":
            text = variable["query"]
            variable["current"] = {"selected": False, "text": text, "value": text}
            variable["options"] = [{"selected": True, "text": text, "value": text}]
    return data
