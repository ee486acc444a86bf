"""Every query of every dashboard, on a real Prometheus scraping what a cluster would run.

Three simulated exporters (`xgpu-exporter --simulate`, three nodes of the bundled demo, one
with memory+core cards and an unhealthy card, one with a MIG card) scraped with the deploy's
static job (the `node` target label, `honor_labels`), and the advisor's series pushed to a real
Pushgateway by the advisor's own code; Prometheus runs the deploy's recording rules, which
the panels read where a rule exists. Nothing is backfilled: the data is what the parts
publish. A single Prometheus: no series carries `cluster`, its variable stays on "All".
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
import yaml

from advisor.core.autoscalers import Blocked, Reach
from advisor.core.hpa import Autoscaler
from advisor.metrics import RunFigures, push
from tests.dashboards.dashboards_grafana import Json, all_values, interpolate, targets
from tests.dashboards.dashboards_prometheus import Window, choose, run_all
from tests.realparts import (
    Prometheus,
    running_prometheus,
    running_pushgateway,
    simulated_exporters,
)

REPO = Path(__file__).resolve().parents[2]
SCENARIO = REPO / "advisor" / "examples" / "demo.yaml"
STATIC_JOB = REPO / "deploy" / "prometheus" / "scrape-config.static.yaml"
RULES = REPO / "deploy" / "rules" / "xgpu.rules.yaml"
NODES = ("a100-node-1", "cce-node-1", "mig-node-1")
# The MIG row's panels: no data on a node without MIG cards (the first node)
MIG_PANELS = {
    "MIG instances by profile",
    "MIG instance memory: used vs total",
    "Free MIG slices per card",
    "MIG instance memory by pod",
}
# One blocked (1 replica, 2 more place, max 5) and one unknown-template (no placeable).
AUTOSCALERS = (
    Reach(
        Autoscaler("web/infer-hpa", "Deployment/web/infer", 1, 5, 1),
        "web/infer-0",
        2,
        Blocked("fragmentation", "…", None),
    ),
    Reach(Autoscaler("web/lost-hpa", "Deployment/web/lost", 1, 3, 1), None, None, None),
)


def scrape_jobs(exporters: dict[str, str], gateway: str) -> list[Json]:
    """The deploy's static exporter job on our targets, plus the Pushgateway."""
    jobs = yaml.safe_load(STATIC_JOB.read_text())["scrape_configs"]
    (job,) = [j for j in jobs if j["job_name"] == "xgpu-exporter"]
    assert job["honor_labels"] is True
    job["static_configs"] = [
        {"targets": [address], "labels": {"node": node}} for node, address in exporters.items()
    ]
    pushgateway = {
        "job_name": "pushgateway",
        "honor_labels": True,
        "static_configs": [{"targets": [gateway]}],
    }
    return [job, pushgateway]


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Prometheus]:
    home = tmp_path_factory.mktemp("live")
    with ExitStack() as stack:
        exporters = {
            e.node: urllib.parse.urlsplit(e.url).netloc
            for e in simulated_exporters(stack, SCENARIO, NODES, home)
        }
        gateway_url = stack.enter_context(running_pushgateway(home))
        gateway = urllib.parse.urlsplit(gateway_url).netloc
        figures = RunFigures(
            pending_by_cause={"fragmentation": 2, "node-resources": 1, "capacity": 1},
            stranded_memory_bytes=8 << 30,
            fragmentation_ratio=0.35,
            plans_by_kind={"rebalance": 1, "scale_up": 1},
            rescuable_pods=2,
            finished_at=time.time(),
            duration_seconds=1.2,
            pending_ages={"fragmentation": [600.0, 7200.0], "node-resources": [30.0]},
            latencies={"cce": [1.0, 4.0, 150.0]},
            autoscalers=AUTOSCALERS,
        )
        push(gateway, figures)
        config = {
            "global": {
                "scrape_interval": "1s",
                "scrape_timeout": "1s",
                "evaluation_interval": "1s",
            },
            "rule_files": [str(RULES)],
            "scrape_configs": scrape_jobs(exporters, gateway),
        }
        prometheus = stack.enter_context(running_prometheus(home, config))
        wait_for_scrapes(prometheus)
        yield prometheus


def wait_for_scrapes(prometheus: Prometheus, timeout: float = 30.0) -> None:
    """Until every exporter has been scraped twice (rates need two samples), the
    Pushgateway once, and the rules have recorded every node; the first scrapes take a few
    seconds."""
    ready = (
        "count(count_over_time(xgpu_node_info[1m]) >= 2)"
        f" == {len(NODES)} and on () count(xgpu_advisor_last_success_timestamp_seconds) > 0"
        f" and on () count(node:xgpu_memory_allotted:ratio) == {len(NODES)}"
        " and on () count(namespace:xgpu_memory_used_bytes:sum) > 0"
    )
    prometheus.wait_for(ready, timeout=timeout)


@pytest.mark.realservices
@pytest.mark.parametrize("first", [False, True], ids=["all", "first"])
def test_every_query_returns_data_from_the_real_parts(
    live: Prometheus, built: dict[str, Json], first: bool
) -> None:
    now = time.time()
    window = Window(now - 120, now, 1.0)
    answers = []
    for board in built.values():
        answers += run_all(live, board, choose(live, board, window, first), window)
    empty = [f"{a.target.name}: {a.expr}" for a in answers if not a.series]
    if first:  # a100-node-1 has no MIG card: its MIG panels show nothing, and only they
        shown = [a for a in answers if a.target.panel["title"] not in MIG_PANELS]
        assert {a.target.panel["title"] for a in answers if not a.series} == MIG_PANELS
        empty = [f"{a.target.name}: {a.expr}" for a in shown if not a.series]
    assert not empty, "queries without data:\n" + "\n".join(empty)
    nodes = {s["metric"].get("node") for a in answers for s in a.series} - {None}
    assert nodes == ({"a100-node-1"} if first else set(NODES))


@pytest.mark.realservices
def test_the_mig_panels_show_the_mig_node_s_instances(
    live: Prometheus, built: dict[str, Json]
) -> None:
    """mig-node-1's H100 is cut into a 3g.40gb (slices 0-3, held by speech/whisper-0), a
    2g.20gb (4-5) and a 1g.10gb (6), slice 7 uncut: one instance of each profile, memory as
    the profile table gives it, used only in the held one, by its pod, and 1 free slice."""
    board = built["xgpu-node"]
    selections = {"datasource": ["test"], "cluster": None, "node": ["mig-node-1"]}
    selections |= {"gpu": None, "namespace": None}
    exprs = {
        (t.panel["title"], t.target["refId"]): interpolate(
            t.target["expr"], selections, all_values(board)
        )
        for t in targets(board)
        if t.panel["title"] in MIG_PANELS
    }
    now = time.time()

    def by(expr: str, label: str) -> dict[str, float]:
        return {s["metric"][label]: float(s["value"][1]) for s in live.query(expr, now)}

    profiles = by(exprs["MIG instances by profile", "A"], "GPU_I_PROFILE")
    assert profiles == {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 1}
    used = by(exprs["MIG instance memory: used vs total", "A"], "GPU_I_PROFILE")
    total = by(exprs["MIG instance memory: used vs total", "B"], "GPU_I_PROFILE")
    assert total == {"3g.40gb": 40448 << 20, "2g.20gb": 20096 << 20, "1g.10gb": 9984 << 20}
    assert used["2g.20gb"] == used["1g.10gb"] == 0
    assert 0 < used["3g.40gb"] <= total["3g.40gb"]
    (held,) = live.query(exprs["MIG instance memory by pod", "A"], now)
    assert {k: held["metric"][k] for k in ("namespace", "pod", "GPU_I_PROFILE", "mig_start")} == {
        "namespace": "speech",
        "pod": "whisper-0",
        "GPU_I_PROFILE": "3g.40gb",
        "mig_start": "0",
    }
    assert float(held["value"][1]) == used["3g.40gb"]  # its one process: all the use
    (free,) = live.query(exprs["Free MIG slices per card", "A"], now)
    assert (free["metric"]["node"], free["metric"]["gpu_index"]) == ("mig-node-1", "0")
    assert float(free["value"][1]) == 1


@pytest.mark.realservices
def test_advisor_panels_show_what_the_advisor_pushed(
    live: Prometheus, built: dict[str, Json]
) -> None:
    stats = {  # "All" clusters: the one Prometheus has no `cluster` label
        p["title"]: p["targets"][0]["expr"].replace('"$cluster"', '".*"')
        for p in built["xgpu-advisor"]["panels"]
        if p["type"] == "stat"
    }
    expected = {
        "Pending GPU pods": 4,
        "Pending for fragmentation": 2,
        "Pending for node resources": 1,
        "Rescuable by rebalancing": 2,
        "Stranded memory": 8 << 30,
        "Last run took": 1.2,
    }
    for title, value in expected.items():
        (sample,) = live.query(stats[title], time.time())
        assert float(sample["value"][1]) == pytest.approx(value), title
    (since,) = live.query(stats["Time since last successful run"], time.time())
    assert 0 <= float(since["value"][1]) < 60


@pytest.mark.realservices
def test_the_autoscaler_panels_show_reach_against_max(
    live: Prometheus, built: dict[str, Json]
) -> None:
    """Reach (replicas + placeable) of the blocked one is 3 against its max of 5; the
    unknown-template one has a max and no reach; one autoscaler is short, for fragmentation."""
    panels = {p["title"]: p for p in built["xgpu-advisor"]["panels"]}
    reach, most = (
        t["expr"].replace('"$cluster"', '".*"')
        for t in panels["Replicas each autoscaler reaches vs its max"]["targets"]
    )
    now = time.time()
    assert {s["metric"]["autoscaler"]: float(s["value"][1]) for s in live.query(reach, now)} == {
        "web/infer-hpa": 3
    }
    assert {s["metric"]["autoscaler"]: float(s["value"][1]) for s in live.query(most, now)} == {
        "web/infer-hpa": 5,
        "web/lost-hpa": 3,
    }
    (short,) = panels["Autoscalers short of max, by cause"]["targets"]
    (sample,) = live.query(short["expr"].replace('"$cluster"', '".*"'), now)
    assert (sample["metric"], sample["value"][1]) == ({"cause": "fragmentation"}, "1")
