"""Constants every dashboard shares: datasource, label matchers, legends, uids, links.

Every panel and query points at the `$datasource` variable: the dashboards are
provisioned from files, where import-time datasource inputs (`${DS_...}`) do not work.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

# grafanalib ships no type hints; its objects are opaque here.
Panel: TypeAlias = Any
Json: TypeAlias = dict[str, Any]

TAG = "xgpu-insight"
SCHEMA_VERSION = 36  # the JSON is written in the Grafana 9 shape
DATASOURCE: Json = {"type": "prometheus", "uid": "${datasource}"}

# Label matchers for the chained variables; `node` comes from the scrape config, `cluster`
# from wherever a shared store tells clusters apart (external labels, remote-write
# relabeling). A single Prometheus has no `cluster` label: "All" (.*) matches its absence.
CLUSTER = 'cluster=~"$cluster"'
NODE = f'{CLUSTER}, node=~"$node"'
CARD = f'{NODE}, gpu_index=~"$gpu"'
VGPU = f'{CARD}, namespace=~"$namespace"'
POD = f'{VGPU}, pod=~"$pod"'
# The namespace-level recording rules keep only `cluster` and `namespace`.
NAMESPACE = f'{CLUSTER}, namespace=~"$namespace"'

# Where `xgpu-advisor serve --reports DIR` serves the advisor's reports (deploy/base's
# xgpu-advisor-reports Service); the Advisor dashboard's `reports_url` variable starts here.
REPORTS_URL = "http://xgpu-advisor-reports.xgpu-insight.svc:19401/"

CARD_LEGEND = "{{node}} GPU {{gpu_index}}"
VGPU_LEGEND = "{{namespace}}/{{pod}}/{{container}} on {{node}} GPU {{gpu_index}}"

UID = {
    "cluster": "xgpu-cluster",
    "node": "xgpu-node",
    "workload": "xgpu-workload",
    "advisor": "xgpu-advisor",
}


def dashboard_url(key: str) -> str:
    return f"/d/{UID[key]}/{UID[key]}"


# Data links open another dashboard on the clicked series (or table row), keeping the
# time range and datasource; the series' labels become that dashboard's variables.
def _label(name: str, table: bool) -> str:
    return f"${{__data.fields.{name}}}" if table else f"${{__field.labels.{name}}}"


def _link(key: str, title: str, variables: Sequence[str], table: bool) -> Json:
    query = "".join(f"&var-{name}={_label(name, table)}" for name in variables)
    url = f"{dashboard_url(key)}?${{__url_time_range}}&${{datasource:queryparam}}{query}"
    return {"title": title, "url": url}


def link_to_node(table: bool = False) -> Json:
    return _link("node", f"Node and card dashboard of {_label('node', table)}", ["node"], table)


def link_to_workload(table: bool = False) -> Json:
    title = f"Workload dashboard of {_label('namespace', table)}/{_label('pod', table)}"
    return _link("workload", title, ["node", "namespace", "pod"], table)
