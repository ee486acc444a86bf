"""The scheduling layer's signals where they are shown (design §12): the pods' ages in the
diagnosis JSON, the oldest Pending pods first on the pages, and the advisor's series."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from advisor import metricnames as M
from advisor.core.diagnosis import CAUSES
from advisor.core.model import Cluster
from advisor.metrics import RunFigures, registry_for
from advisor.render.report.html import render_report_html
from advisor.render.report.markdown import render_report_markdown
from advisor.report import Report, ReportInputs, ReportOptions, build_report
from advisor.scenario import load_scenario
from tests.realparts import DEMO

DEMO_CLUSTER = load_scenario(DEMO)
CLOCK = datetime(2030, 1, 1, tzinfo=UTC).timestamp()  # far from the demo's `now`


def exposed(run: RunFigures) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = generate_latest(registry_for(run)).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_latency_buckets_count_a_bound_in_its_own_bucket() -> None:
    run = RunFigures(
        {},
        0.0,
        0.0,
        latencies={"hami": [1.0, 5.0, 5.000001, 7200.0, 7200.5]},
    )
    got = exposed(run)

    def bucket(le: str) -> float:
        return got[(f"{M.SCHEDULING_LATENCY}_bucket", (("le", le), ("profile", "hami")))]

    assert bucket("1.0") == 1  # 1.0 <= 1
    assert bucket("5.0") == 2  # 5.0 <= 5, 5.000001 is not
    assert bucket("15.0") == 3
    assert bucket("3600.0") == 3
    assert bucket("7200.0") == 4
    assert bucket("+Inf") == 5
    assert got[(f"{M.SCHEDULING_LATENCY}_count", (("profile", "hami"),))] == 5
    assert got[(f"{M.SCHEDULING_LATENCY}_sum", (("profile", "hami"),))] == sum(
        [1.0, 5.0, 5.000001, 7200.0, 7200.5]
    )
    assert not any(name.endswith("_created") for name, _ in got)  # figures of one run


def test_pending_age_series_by_cause() -> None:
    run = RunFigures(
        {"fragmentation": 3, "capacity": 1},
        0.0,
        0.0,
        pending_ages={"fragmentation": [60.0, 7200.0, 600.0]},  # one Pending pod without a time
    )
    got = exposed(run)
    count = {c: got[(f"{M.PENDING_AGE}_count", (("cause", c),))] for c in CAUSES}
    assert count == {c: (3 if c == "fragmentation" else 0) for c in CAUSES}
    assert got[(f"{M.PENDING_AGE}_sum", (("cause", "fragmentation"),))] == 7860.0
    oldest = {
        dict(labels)["cause"]: v for (n, labels), v in got.items() if n == M.PENDING_AGE_MAX.name
    }
    assert oldest == {"fragmentation": 7200.0}  # no age known for capacity: no oldest


def pending_rows(markdown: str) -> list[tuple[str, str]]:
    """Pod and Waiting of each row of the "Pending pods" table."""
    start = markdown.index("## Pending pods")
    table = markdown[start : markdown.index("\n## ", start)]
    return re.findall(r"^\| ([\w./-]+) \| ([^|]+) \|", table, re.MULTILINE)[1:]


def report(cluster: Cluster = DEMO_CLUSTER) -> Report:
    inputs = ReportInputs(cluster, "demo", CLOCK)
    return build_report(inputs, ReportOptions(time_budget_s=5), lambda: 0.0)


def test_the_demo_s_ages_count_to_its_now_and_feed_the_series() -> None:
    built = report()
    data, figures = built.data, built.figures
    ages = {p["pod"]: p.get("pending_age_seconds") for p in data["diagnosis"]["pods"]}
    assert ages["web/infer-1"] == 7320.0  # created 09:58, now 12:00 (not the run's clock)
    assert ages["research/sweep-1"] == 90.0
    by_cause = figures.pending_ages
    assert sum(len(v) for v in by_cause.values()) == len(ages)
    # ml/train-a was scheduled the day before: out of the hour's window
    assert figures.latencies == {"cce": (4.0, 1.0, 150.0)}


def test_without_now_ages_count_to_the_run_s_clock() -> None:
    built = report(replace(DEMO_CLUSTER, now=None))
    pods = built.data["diagnosis"]["pods"]
    age = next(p["pending_age_seconds"] for p in pods if p["pod"] == "research/sweep-1")
    assert age == CLOCK - datetime(2024, 5, 1, 11, 58, 30, tzinfo=UTC).timestamp()
    assert built.figures.latencies == {"cce": ()}


def test_the_pages_list_the_oldest_pending_pods_first() -> None:
    data = report().data
    pods = data["diagnosis"]["pods"]
    # the queue puts batch/urgent (priority 500) first; the pages put age first
    assert pods[0]["pod"] == "batch/urgent"
    by_age = [p["pod"] for p in sorted(pods, key=lambda p: -p["pending_age_seconds"])]
    assert by_age[0] == "web/infer-1"
    rows = pending_rows(render_report_markdown(data))
    assert [pod for pod, _ in rows] == by_age
    assert rows[0][1] == "2 h 2 min"
    html = render_report_html(data)
    start = html.index("<h3>Pending pods</h3>")
    section = html[start : html.index("</section>", start)]
    listed = re.findall(r'<td class="pod mono">([^<]+)</td><td class="num">([^<]+)</td>', section)
    assert [pod for pod, _ in listed] == by_age
    assert listed[-1] == ("research/sweep-1", "90 s")


def test_pods_of_unknown_age_follow_in_queue_order() -> None:
    pods = tuple(
        replace(p, created=None) if p.name in {"batch/urgent", "web/odd-size"} else p
        for p in DEMO_CLUSTER.pods
    )
    data = report(replace(DEMO_CLUSTER, pods=pods)).data
    rows = pending_rows(render_report_markdown(data))
    assert len(rows) == len(DEMO_CLUSTER.pending)
    assert rows[-2:] == [("batch/urgent", "?"), ("web/odd-size", "?")]
