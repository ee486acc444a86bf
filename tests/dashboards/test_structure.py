"""Structure of the generated dashboards: ids, layout, datasource, variables, links, units."""

from __future__ import annotations

import itertools
import re
import urllib.parse

import pytest
import yaml

from advisor import metricnames
from dashboards.common import DATASOURCE, REPORTS_URL, TAG
from tests.dashboards.dashboards_grafana import Json, panels, query_variables, targets
from tests.realparts import REPO

VARIABLE_CHAIN = ["datasource", "cluster", "node", "gpu", "namespace"]
EVERY_NODE_OR_CARD = metricnames.EVERY_NODE_OR_CARD
RULES = REPO / "deploy" / "rules" / "xgpu.rules.yaml"
# A series the dashboards select: a contract name or a recording rule's level:metric:op.
SELECTED = re.compile(
    r"(?<![\w:])((?:\w+:)?(?:xgpu_\w+|gpu_schedule_policy)(?::\w+)?)\s*(\{[^}]*\})?"
)
CLUSTER_MATCHER = 'cluster=~"$cluster"'
RANGE_FUNCTIONS = re.compile(r"\b(rate|irate|increase|delta|deriv)\(([^\[]*)\[([^\]]+)\]")


def test_four_dashboards(built: dict[str, Json]) -> None:
    assert set(built) == {"xgpu-cluster", "xgpu-node", "xgpu-workload", "xgpu-advisor"}
    for board in built.values():
        assert TAG in board["tags"]
        assert board.get("id") is None  # provisioned dashboards get their id from Grafana


def test_panel_ids_are_unique(built: dict[str, Json]) -> None:
    for uid, board in built.items():
        ids = [panel["id"] for panel in panels(board)]
        assert all(isinstance(i, int) and i > 0 for i in ids), uid
        assert len(ids) == len(set(ids)), f"{uid}: duplicate panel ids"


def test_panels_do_not_overlap_and_fit_the_grid(built: dict[str, Json]) -> None:
    for uid, board in built.items():
        boxes = [(p["title"], p["gridPos"]) for p in panels(board)]
        for title, box in boxes:
            assert min(box["w"], box["h"], box["x"], box["y"]) >= 0, (uid, title, box)
            assert box["w"] * box["h"] > 0, (uid, title, box)
            assert box["x"] + box["w"] <= 24, (uid, title, box)
        for (a, p), (b, q) in itertools.combinations(boxes, 2):
            apart = (
                p["x"] + p["w"] <= q["x"]
                or q["x"] + q["w"] <= p["x"]
                or p["y"] + p["h"] <= q["y"]
                or q["y"] + q["h"] <= p["y"]
            )
            assert apart, f"{uid}: {a!r} {p} overlaps {b!r} {q}"


def test_a_row_per_level_heads_the_dashboard(built: dict[str, Json]) -> None:
    for uid, board in built.items():
        first = board["panels"][0]
        assert first["type"] == "row", uid
        rows = [p for p in board["panels"] if p["type"] == "row"]
        assert len(rows) >= 3, uid
        assert all(r["gridPos"]["w"] == 24 and not r["collapsed"] for r in rows), uid


def test_every_panel_and_query_uses_the_datasource_variable(built: dict[str, Json]) -> None:
    for uid, board in built.items():
        for panel in panels(board):
            assert panel["datasource"] == DATASOURCE, (uid, panel["title"])
        for target in targets(board):
            assert target.target["datasource"] == DATASOURCE, target.name
        for variable in query_variables(board):
            assert variable["datasource"] == DATASOURCE, (uid, variable["name"])
        datasource = board["templating"]["list"][0]
        assert (datasource["name"], datasource["type"]) == ("datasource", "datasource")
        assert datasource["query"] == "prometheus"
    assert DATASOURCE["uid"] == "${datasource}"


def test_variables_chain_from_series_every_card_has(built: dict[str, Json]) -> None:
    for uid, board in built.items():
        names = [v["name"] for v in board["templating"]["list"]]
        if uid == "xgpu-advisor":
            # the advisor's series have no node or card; where its reports are served
            assert names == ["datasource", "cluster", "reports_url"]
            (reports,) = [v for v in board["templating"]["list"] if v["name"] == "reports_url"]
            assert (reports["type"], reports["query"]) == ("textbox", REPORTS_URL)
            assert reports["current"]["value"] == REPORTS_URL
            continue
        assert names[: len(VARIABLE_CHAIN)] == VARIABLE_CHAIN, uid
        queries = {v["name"]: v["query"] for v in query_variables(board)}
        for name in ("cluster", "node", "gpu"):
            metric = re.match(r"label_values\((\w+)", queries[name])
            assert metric, (uid, name, queries[name])
            assert metric.group(1) in EVERY_NODE_OR_CARD, (uid, name, queries[name])
        # Each variable narrows by the ones before it, and refers to no later one.
        for i, name in enumerate(names[2:], start=2):
            used = set(re.findall(r"\$(\w+)", queries[name]))
            assert used == set(names[1:i]), (uid, name, queries[name])
        for variable in query_variables(board):
            assert variable["includeAll"], (uid, variable["name"])
            assert variable["multi"], (uid, variable["name"])
            assert variable["allValue"] == ".*", (uid, variable["name"])
            assert variable["refresh"] == 2, (uid, variable["name"])  # on time range change
    assert [v["name"] for v in built["xgpu-workload"]["templating"]["list"]][-1] == "pod"


def test_rates_use_the_rate_interval(built: dict[str, Json]) -> None:
    rates = 0
    for board in built.values():
        for target in targets(board):
            for function, _, window in RANGE_FUNCTIONS.findall(target.target["expr"]):
                assert window == "$__rate_interval", (target.name, function, window)
                rates += 1
    assert rates > 0


def test_dashboards_link_to_each_other_carrying_variables_and_time(
    built: dict[str, Json],
) -> None:
    for uid, board in built.items():
        link = board["links"][0]
        assert (link["type"], link["tags"]) == ("dashboards", [TAG]), uid
        assert (link["includeVars"], link["keepTime"]) == (True, True), uid
        assert len(board["links"]) == (2 if uid == "xgpu-advisor" else 1), uid


def test_the_advisor_dashboard_links_to_the_reports_server(built: dict[str, Json]) -> None:
    """`xgpu-advisor serve --reports DIR` serves the runs' reports; its address is the
    dashboard's `reports_url` variable, so each viewer can point it where they reach it."""
    board = built["xgpu-advisor"]
    reports = board["links"][1]
    assert (reports["type"], reports["url"], reports["targetBlank"]) == (
        "link",
        "${reports_url}",
        True,
    )
    panel_links = [
        link["url"] for panel in panels(board) for link in panel.get("links", []) if link
    ]
    assert "${reports_url}" in panel_links
    # the default is the Service deploy/base puts in front of the reports server
    service = yaml.safe_load(
        (REPO / "deploy" / "base" / "advisor-reports-service.yaml").read_text()
    )
    name, namespace = service["metadata"]["name"], service["metadata"]["namespace"]
    assert f"http://{name}.{namespace}.svc:{service['spec']['ports'][0]['port']}/" == REPORTS_URL


def test_every_series_every_query_selects_is_narrowed_by_cluster(built: dict[str, Json]) -> None:
    """One store may hold several clusters (Thanos, Mimir, VictoriaMetrics): every series a
    panel or a variable (but the cluster variable itself) selects carries `$cluster`."""
    checked = 0
    for board in built.values():
        exprs = [t.target["expr"] for t in targets(board)]
        exprs += [v["query"] for v in query_variables(board) if v["name"] != "cluster"]
        for expr in exprs:
            for name, matchers in SELECTED.findall(expr):
                assert CLUSTER_MATCHER in matchers, (board["uid"], name, expr)
                checked += 1
    assert checked > 80


def test_panels_read_the_recording_rules_where_one_exists(built: dict[str, Json]) -> None:
    """No panel sums a series the way a recording rule already does, and every recorded
    series a panel reads exists (a typo would be an empty panel)."""
    groups = yaml.safe_load(RULES.read_text())["groups"]
    records = {
        r["record"]: " ".join(r["expr"].split())
        for g in groups
        for r in g["rules"]
        if "record" in r
    }
    exprs = [t.target["expr"] for b in built.values() for t in targets(b)]
    read = {name for e in exprs for name, _ in SELECTED.findall(e) if ":" in name}
    assert read - set(records) == set()
    assert len(read) >= 10
    # A rule `sum by (cluster, LABELS) (METRIC)` done again by a panel, filters aside.
    simple = re.compile(r"^sum by \(cluster(?:, ([\w, ]+))?\) \((\w+)\)$")
    redone = 0
    for record, expr in records.items():
        match = simple.match(expr)
        if not match:
            continue
        labels, metric = match.group(1) or "", match.group(2)
        by = f"sum by ({labels}) ({metric}{{" if labels else f"sum({metric}{{"
        for e in exprs:
            assert by not in e, (record, e)
        redone += 1
    assert redone >= 5


def test_data_links_open_existing_dashboards_with_the_series_labels(
    built: dict[str, Json],
) -> None:
    seen = 0
    for uid, board in built.items():
        for panel in panels(board):
            for link in panel["fieldConfig"]["defaults"].get("links", []):
                url = urllib.parse.urlsplit(link["url"])
                target_uid = url.path.split("/")[2]
                assert target_uid in built, (uid, panel["title"], link["url"])
                assert url.query.startswith("${__url_time_range}&${datasource:queryparam}&")
                labels = re.findall(
                    r"var-(\w+)=\$\{__(?:field\.labels|data\.fields)\.(\w+)\}", url.query
                )
                assert labels, link["url"]
                assert all(a == b for a, b in labels), link["url"]
                variables = {v["name"] for v in built[target_uid]["templating"]["list"]}
                assert {name for name, _ in labels} <= variables, link["url"]
                seen += 1
    assert seen >= 5


@pytest.mark.parametrize(("unit", "top"), [("percentunit", 1.0), ("percent", 100.0)])
def test_thresholds_and_limits_are_on_the_unit_scale(
    built: dict[str, Json], unit: str, top: float
) -> None:
    """HAMi's bug: 0-1 ratios with 75/90 thresholds that never fire."""
    checked = 0
    for board in built.values():
        for panel in panels(board):
            defaults = panel["fieldConfig"]["defaults"]
            if defaults.get("unit") != unit:
                continue
            levels = [s["value"] for s in defaults["thresholds"]["steps"] if s["value"] is not None]
            assert all(0 < v <= top for v in levels), (panel["title"], levels)
            assert (defaults.get("max") or top) <= top, panel["title"]
            checked += 1
    assert checked > 0


def test_ratio_series_are_shown_as_percentunit(built: dict[str, Json]) -> None:
    for board in built.values():
        for target in targets(board):
            expr = target.target["expr"]
            if "_ratio" in expr or " / (" in expr:
                assert target.unit == "percentunit", target.name
            if "xgpu_core_percentage" in expr and " / " not in expr:
                assert target.unit == "percent", target.name  # 0-100, as CCE publishes it


def test_mode_and_health_are_mapped_to_words(built: dict[str, Json]) -> None:
    board = built["xgpu-node"]
    by_title = {p["title"]: p for p in panels(board)}
    mappings = {
        "Mode": {"0": "memory", "1": "memory+core", "2": "unused"},
        "Health": {"0": "healthy", "1": "unhealthy"},
    }
    for title, expected in mappings.items():
        (mapping,) = by_title[title]["fieldConfig"]["defaults"]["mappings"]
        assert mapping["type"] == "value"
        assert {k: v["text"] for k, v in mapping["options"].items()} == expected
    assert "gpu_schedule_policy" in by_title["Mode"]["targets"][0]["expr"]
    assert "xgpu_device_health" in by_title["Health"]["targets"][0]["expr"]


def test_free_memory_per_card_is_drawn_as_a_heatmap(built: dict[str, Json]) -> None:
    kinds = {p["type"] for p in panels(built["xgpu-node"])}
    assert {"heatmap", "status-history", "state-timeline"} <= kinds
    for panel in panels(built["xgpu-node"]):
        if panel["type"] in ("heatmap", "status-history"):
            expr = panel["targets"][0]["expr"]
            assert "xgpu_card_memory_total_bytes" in expr
            assert "- xgpu_card_memory_allotted_bytes" in expr


# Contract series no panel needs to show: variables list the nodes from xgpu_node_info;
# the exporter's durations and build are for its own debugging (its landing page).
NOT_ON_PANELS = {
    "xgpu_node_info",
    "xgpu_exporter_collector_duration_seconds",
    "xgpu_exporter_build_info",
}


def test_the_contract_s_series_are_all_shown(built: dict[str, Json]) -> None:
    exprs = " ".join(t.target["expr"] for b in built.values() for t in targets(b))
    for metric in sorted(metricnames.NAMES - NOT_ON_PANELS):
        series = "|".join(metricnames.BY_NAME[metric].series)  # a histogram's _bucket, ...
        assert re.search(rf"(?<![\w:])(?:{series})\b", exprs), metric
    for construct in ("topk(", "group_left", "or vector(0)", "> 0)"):
        assert construct in exprs, construct


def test_the_fragmentation_tile_leads_with_stranded_memory_and_is_coloured_by_it(
    built: dict[str, Json],
) -> None:
    """Not "Fragmentation 80 %" in red beside "Stranded 0 MiB": stranded memory is what
    makes pods wait, so it is the headline and its colour; the FGD ratio sits beside it in
    the text colour, and no fragmentation panel turns red by itself."""
    for uid in ("xgpu-cluster", "xgpu-advisor"):
        (tile,) = [
            p for p in panels(built[uid]) if p["title"] == "Stranded memory" and p["type"] == "stat"
        ]
        headline, aside = tile["targets"]
        assert "xgpu_advisor_stranded_memory_bytes" in headline["expr"], uid
        assert "xgpu_advisor_fragmentation_ratio" in aside["expr"], uid
        defaults = tile["fieldConfig"]["defaults"]
        assert (defaults["unit"], tile["options"]["colorMode"]) == ("bytes", "background")
        # green with none stranded, red from the first byte (the report's tile agrees)
        assert [(s["color"], s["value"]) for s in defaults["thresholds"]["steps"]] == [
            ("green", None),
            ("red", 1),
        ]
        (override,) = tile["fieldConfig"]["overrides"]
        assert override["matcher"] == {"id": "byFrameRefID", "options": aside["refId"]}
        props = {p["id"]: p["value"] for p in override["properties"]}
        assert props["color"] == {"mode": "fixed", "fixedColor": "text"}
        assert props["unit"] == "percentunit"
    for board in built.values():
        for panel in panels(board):
            exprs = " ".join(t["expr"] for t in panel.get("targets", []))
            if "fragmentation_ratio" not in exprs or panel["type"] == "stat":
                continue
            steps = panel["fieldConfig"]["defaults"]["thresholds"]["steps"]
            assert {s["color"] for s in steps} == {"green"}, (board["uid"], panel["title"])
