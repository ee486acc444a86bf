"""The README's demo (`make demo` runs `python -m advisor.demo`), end to end: simulated exporters
for every node of the bundled scenario, a real Prometheus scraping them with the deploy's
recording rules, `xgpu-advisor report`, the printed summary, the report in headless Chromium,
and nothing left running afterwards. Without Prometheus it scrapes the exporters directly."""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from advisor.core.diagnose import diagnose
from advisor.core.gang import judge
from advisor.demo import (
    DEFAULT_SCENARIO,
    HISTORY_POD,
    TRAINING_PAGE,
    TRAINING_SCENARIO,
    TRAINING_STORY,
    Services,
    main,
    run_demo,
)
from advisor.scenario import load_scenario
from tests.advisor.chromium import (
    chromium_path,
    decode_png,
    dump_dom,
    page_widths,
    pixel_counts,
    screenshot,
)
from tests.advisor.realservices import child_pids, listening
from tests.realparts import Prometheus, http_get

pytestmark = [
    pytest.mark.realservices,  # the demo's exporters, Prometheus and Chromium
    pytest.mark.timeout(300),  # the whole pipeline, up to a minute alone; more on a busy machine
]

DEMO_CLUSTER = load_scenario(DEFAULT_SCENARIO)
NODES = {n.name for n in DEMO_CLUSTER.nodes}
# a MIG pod holds instances, no vGPU (docs/design.md §13): the exporter serves no vGPU
# series for it, so right-sizing (which sizes vGPUs from them) lists no workload of its
VGPU_PODS = [p for p in DEMO_CLUSTER.running if not p.request.mig_profile]
VGPUS_PER_NODE = dict.fromkeys(NODES, 0) | Counter(
    p.placement.node for p in VGPU_PODS if p.placement for _ in p.placement.cards
)  # research-node-1 has none running: its Pending pod only fits there; mig-node-1 none
SUMMARY = (
    "10 Pending GPU pods: 4 schedulable, 1 node-resources, 1 fragmentation, 1 capacity, "
    "1 unsatisfiable, 1 invalid, 1 mig-geometry"
)
UP = f"xgpu-demo: {len(NODES)} simulated exporters up; reading"
BACKFILLED = (
    f"xgpu-demo: {HISTORY_POD} has a day of simulated history, backfilled into Prometheus "
    "with promtool: right-sizing needs 24 h"
)
HISTORY_WORKLOAD = next(p.owner for p in DEMO_CLUSTER.running if p.name == HISTORY_POD)
REPORT_FILES = {"report.json", "report.md", "report.html", "xgpu_advisor.prom"}
AUTOSCALER_LINE = (
    "autoscaler infer/embed: 1 of 3 more replicas place; the next stays Pending (fragmentation)"
)


def value(sample: dict[str, Any]) -> float:
    return float(sample["value"][1])


def check_prometheus(svc: Services, seen: list[str]) -> None:
    """What the running Prometheus holds while the demo is up."""
    assert svc.prometheus is not None
    seen.extend([svc.prometheus, *svc.exporters.values()])
    prometheus = Prometheus(svc.prometheus)  # the demo starts and stops it
    info = prometheus.query("xgpu_node_info")
    assert {s["metric"]["node"] for s in info} == NODES
    assert all(value(s) == 1 for s in info)
    # vGPU series name the workload (honor_labels) and carry the target's node label
    vgpus = prometheus.query("xgpu_memory_total")
    running = {(p.placement.node, p.name) for p in VGPU_PODS if p.placement}
    got = {(s["metric"]["node"], f"{s['metric']['namespace']}/{s['metric']['pod']}") for s in vgpus}
    assert got == running
    assert all(s["metric"]["container"] for s in vgpus)
    assert not any(k.startswith("exported_") for s in vgpus for k in s["metric"])
    assert len(vgpus) == sum(VGPUS_PER_NODE.values())
    # the deploy's recording rules are loaded and evaluated without error
    status, rules = _rules(svc.prometheus)
    assert status == 200
    evaluated = [r for g in rules["data"]["groups"] for r in g["rules"]]
    assert evaluated
    assert {r["health"] for r in evaluated} == {"ok"}, [r for r in evaluated if r["health"] != "ok"]
    counts = prometheus.wait_for("node:xgpu_vgpus:count", lambda r: len(r) == len(NODES))
    assert {s["metric"]["node"]: value(s) for s in counts} == VGPUS_PER_NODE
    (allotted,) = prometheus.wait_for("cluster:xgpu_memory_allotted_bytes:sum", bool)
    assert value(allotted) == sum(p.request.memory_mib for p in DEMO_CLUSTER.running) * 2**20


def _rules(url: str) -> tuple[int, dict[str, Any]]:
    deadline = time.monotonic() + 20
    while True:  # rules read "unknown" until their group's first evaluation
        status, _, body = http_get(f"{url}/api/v1/rules")
        answer: dict[str, Any] = json.loads(body)
        rules = [r for g in answer["data"]["groups"] for r in g["rules"]]
        if all(r["health"] != "unknown" for r in rules) or time.monotonic() > deadline:
            return status, answer
        time.sleep(0.2)


def run(out: Path, demo: Callable[[], int], *, training: bool = False) -> None:
    """`training`: the demo ran as `make demo` runs it, so the training cluster's report is
    a second page in its folder beside the first page's files."""
    before = child_pids()
    assert demo() == 0
    assert child_pids() - before == set(), "the demo left processes running"
    assert {p.name for p in out.iterdir()} == REPORT_FILES | (
        {TRAINING_PAGE} if training else set()
    )
    if training:
        assert {p.name for p in (out / TRAINING_PAGE).iterdir()} == REPORT_FILES


def test_demo_with_prometheus(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    seen: list[str] = []
    run(out, lambda: run_demo(DEFAULT_SCENARIO, out, while_up=lambda s: check_prometheus(s, seen)))
    assert len(seen) == 1 + len(NODES)
    assert not [url for url in seen if listening(url)], "a port is still open"
    printed, err = capfd.readouterr()
    lines = printed.splitlines()
    prometheus = seen[0]
    assert lines[0] == f"{UP} Prometheus {prometheus}"
    assert lines[1] == BACKFILLED
    assert lines[2] == f"source: prometheus {prometheus} + pods from {DEFAULT_SCENARIO}"
    assert lines[3] == SUMMARY
    assert lines[4] == "1 plan rescuing 1 pod with 1 eviction"
    others = len({p.owner for p in VGPU_PODS}) - 1
    assert lines[-2] == (
        f"right-sizing: 1 workload advised ({HISTORY_WORKLOAD}); "
        f"{others} without the history it needs"
    )
    assert lines[-1] == f"open the report: file://{out.resolve() / 'report.html'}"
    assert "xgpu-advisor: 10 Pending GPU pods" in err  # the report command's own line
    data = json.loads((out / "report.json").read_text())
    # The summary's fragmentation figures are the report's, as its Markdown words them.
    frag = data["fragmentation"]
    share = f"{frag['ratio']:.1%}"
    assert lines[5] == (
        f"fragmentation: {share} of the {frag['free_mib']:,} MiB free is unusable by the "
        f"typical requests (FGD); {frag['stranded_mib']:,} MiB stranded"
    )
    markdown = (out / "report.md").read_text()
    assert f"- Free memory on healthy cards: **{frag['free_mib']:,} MiB" in markdown
    assert f"{share} of free**" in markdown
    assert lines[6] == AUTOSCALER_LINE
    check_the_autoscaler(data, out)
    (rescue,) = data["plan"]["plans"]
    assert (rescue["rescues"], rescue["evict"]) == (["web/infer-2"], ["ml/train-a"])
    check_the_rest_of_the_node(data, out)
    assert data["stale"] == []
    assert len(data["usage"]["timestamps"]) == 24 * 12 + 1  # a day at 5 m
    check_one_recommendation(data["rightsizing"], out)
    page = (out / "report.html").read_text()
    assert 'class="chart usage-chart"' in page
    markdown = (out / "report.md").read_text()
    assert all(p.name in markdown for p in DEMO_CLUSTER.pending)
    check_page_in_chromium(out / "report.html", tmp_path)


def check_one_recommendation(sizing: dict[str, Any], out: Path) -> None:
    """Right-sizing groups by owner, which only the scenario file (--pods-from) knows here.
    One pod has a day of history (backfilled, as its exporter would have served it): its
    workload alone is advised, on evidence that passes the 24 h / 288-sample gate; the
    others have seconds, and each says so."""
    assert {w["workload"] for w in sizing["workloads"]} == {p.owner for p in VGPU_PODS}
    advised = [w for w in sizing["workloads"] if w["advised"]]
    assert [w["workload"] for w in advised] == [HISTORY_WORKLOAD]
    (entry,) = advised
    evidence = entry["evidence"]
    assert evidence["window_seconds"] >= 86400
    assert evidence["samples"] >= 288
    memory = entry["memory_mib"]
    assert memory["recommended"] is not None
    assert memory["recommended"] >= evidence["memory_mib"]["floor"]
    assert memory["used_peak"] == evidence["memory_mib"]["peak"]
    for workload in sizing["workloads"]:
        if workload is not entry:
            assert workload["not_advised"].startswith("not enough history ("), workload
            assert workload["memory_mib"]["recommended"] is None
    shown = f"{memory['recommended']:,} ({evidence['window']}, {evidence['samples']} samples;"
    assert shown in (out / "report.md").read_text()
    assert (
        f"{evidence['window']}, {evidence['samples']} samples;" in (out / "report.html").read_text()
    )


def check_the_rest_of_the_node(data: dict[str, Any], out: Path) -> None:
    """The demo's whole-node story: a pod whose card fits on a node whose cpu is taken
    (node-resources), a pod bound by its node selector and toleration to a tainted pool,
    and a pod the pool's taint keeps off it; the reports name all three."""
    pods = {p["pod"]: p for p in data["diagnosis"]["pods"]}
    starved = pods["vision/train-xl"]
    assert starved["cause"] == "node-resources"
    # 30 of the node's 32 cores are requested (2 by its GPU pod, 28 by two Spark executors)
    assert starved["nodes"]["a100-80g-node-1"] == ["Insufficient cpu: 2 free, pod needs 12"]
    bound = pods["research/sweep-1"]
    assert bound["placement"] == {"node": "research-node-1", "cards": [0]}
    assert bound["node_selector"] == {"nodepool": "research"}
    kept_off = pods["ml/finetune-0"]
    assert kept_off["nodes"]["research-node-1"] == [
        "node(s) had untolerated taint {dedicated: research}"
    ]
    markdown = (out / "report.md").read_text()
    assert "**Node resources** (vision/train-xl)" in markdown
    assert "nodeSelector nodepool=research" in markdown
    assert "a100-80g-node-1: cpu 30 of 32 requested" in markdown
    page = (out / "report.html").read_text()
    assert "taint dedicated=research:NoSchedule" in page


def check_the_autoscaler(data: dict[str, Any], out: Path) -> None:
    """The demo's HPA (docs/design.md §12.2): of the 3 replicas infer/embed may add, the
    first takes the 80 GB card's free half; the next fits no card though a100-node-1 has
    the memory, split across cards (fragmentation). Every output says so: the JSON, both
    pages and the series."""
    (hpa,) = data["diagnosis"]["autoscalers"]
    assert (hpa["name"], hpa["template"], hpa["status"]) == ("infer/embed", HISTORY_POD, "blocked")
    assert (hpa["replicas"], hpa["max_replicas"], hpa["placeable"]) == (1, 4, 1)
    blocked = hpa["blocked"]
    assert blocked["cause"] == "fragmentation"
    assert "Insufficient cpu" in blocked["node_summary"]  # the 80 GB card's node, now full
    markdown = (out / "report.md").read_text()
    assert "- infer/embed (Deployment/infer/embed): 1 of 3 more replicas place; the next " in (
        markdown
    )
    page = (out / "report.html").read_text()
    table = page[page.index('id="autoscalers"') : page.index('id="cards"')]
    assert '<td class="num">1 of 3</td>' in table
    assert ">fragmentation</span>" in table
    series = (out / "xgpu_advisor.prom").read_text()
    assert 'xgpu_advisor_autoscaler_placeable_replicas{autoscaler="infer/embed"} 1.0' in series
    assert (
        'xgpu_advisor_autoscaler_blocked{autoscaler="infer/embed",cause="fragmentation"} 1.0'
        in series
    )


def check_page_in_chromium(page: Path, tmp_path: Path) -> None:
    chromium = chromium_path()
    width, height = 1200, 900
    shot = screenshot(chromium, page, tmp_path / "report.png", width, height)
    got_width, got_height, rows = decode_png(shot)
    assert (got_width, got_height) == (width, height)
    counts = pixel_counts(rows)
    _, most = counts.most_common(1)[0]
    assert most < 0.8 * width * height, "the page is mostly one colour"
    assert len(counts) > 200, "too few colours for text, badges and charts"
    dom = dump_dom(chromium, page, tmp_path / "dom-profile")
    for pod in DEMO_CLUSTER.pending:
        assert pod.name in dom, pod.name
    for window in (1024, 1400, 1920):  # the page never scrolls sideways
        scroll, viewport = page_widths(chromium, page, window, tmp_path / f"width-{window}")
        assert scroll <= viewport == window, (scroll, window)


def test_demo_without_prometheus(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    seen: list[str] = []

    def check(svc: Services) -> None:
        assert svc.prometheus is None
        assert set(svc.exporters) == NODES
        seen.extend(svc.exporters.values())
        assert all(listening(url) for url in seen)

    run(out, lambda: run_demo(DEFAULT_SCENARIO, out, use_prometheus=False, while_up=check))
    assert not [url for url in seen if listening(url)], "a port is still open"
    lines = capfd.readouterr().out.splitlines()
    assert lines[0] == f"{UP} the exporters directly"
    assert lines[1].startswith("source: exporters http://127.0.0.1:")
    assert lines[2] == SUMMARY
    assert lines[5] == AUTOSCALER_LINE  # the scenario's HPA comes with its Pending pods
    assert not any(line.startswith("right-sizing") for line in lines)
    data = json.loads((out / "report.json").read_text())
    assert (data["usage"], data["rightsizing"]) == (None, None)
    assert "No history: right-sizing needs usage series." in (out / "report.html").read_text()
    assert data["plan"]["plans"][0]["rescues"] == ["web/infer-2"]


def test_demo_falls_back_to_the_exporters_without_a_prometheus_binary(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # nothing called `prometheus` there
    out = tmp_path / "out"
    run(out, lambda: main(["--output-dir", str(out)]), training=True)
    lines = capfd.readouterr().out.splitlines()
    assert lines[0] == f"{UP} the exporters directly"
    assert lines[2] == SUMMARY


def test_without_promtool_no_history_is_made_up(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Prometheus but no promtool: nothing is backfilled, and right-sizing advises no one
    from the seconds of history there are."""
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.skip("prometheus is not installed")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "prometheus").symlink_to(binary)
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))
    out = tmp_path / "out"
    run(out, lambda: main(["--output-dir", str(out)]), training=True)
    lines = capfd.readouterr().out.splitlines()
    assert lines[0].startswith(f"{UP} Prometheus ")
    assert lines[2] == SUMMARY
    workloads = len({p.owner for p in VGPU_PODS})
    assert f"right-sizing: 0 workloads advised; {workloads} without the history it needs" in lines
    sizing = json.loads((out / "report.json").read_text())["rightsizing"]
    assert not [w for w in sizing["workloads"] if w["advised"]]


def test_a_service_that_will_not_start_is_one_line_and_nothing_is_left(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The exporters' logs live in a temporary directory gone by the time anyone looks:
    the error carries the log's last line."""
    fake = tmp_path / "python"
    fake.write_text(
        "#!/bin/sh\necho 'Traceback (most recent call last):' >&2\n"
        "echo 'OSError: [Errno 98] Address already in use' >&2\nexit 3\n"
    )
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake))  # how the demo starts its exporters
    out = tmp_path / "out"
    before = child_pids()
    assert main(["--output-dir", str(out)]) == 1
    assert child_pids() - before == set()
    assert capfd.readouterr().err == (
        "xgpu-demo: error: exporter for cce-node-1 exited with code 3: "
        "OSError: [Errno 98] Address already in use\n"
    )
    assert not out.exists()


def test_a_bad_scenario_is_one_line(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("nodes: 3\n")
    assert main(["--scenario", str(bad), "--output-dir", str(tmp_path / "out")]) == 2
    err = capfd.readouterr().err
    assert err.startswith(f"xgpu-demo: error: {bad}: nodes")
    assert err.count("\n") == 1


def test_demo_on_the_hami_example_judges_it_as_hami(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # The scenario stands in for the Kubernetes API (--pods-from), so --scheduler auto takes
    # its profile from the file, as it would from the cluster's own annotations: the report
    # read through the simulated exporters agrees with diagnosing the file itself.
    scenario = DEFAULT_SCENARIO.parent / "hami.yaml"
    out = tmp_path / "out"
    run(out, lambda: run_demo(scenario, out, use_prometheus=False))
    summary = diagnose(load_scenario(scenario)).summary
    expected = ", ".join(f"{n} {c}" for c, n in summary.items() if c != "pending" and n)
    lines = capfd.readouterr().out.splitlines()
    assert lines[2] == f"{summary['pending']} Pending GPU pods: {expected}"
    data = json.loads((out / "report.json").read_text())
    assert data["diagnosis"]["scheduler"]["profile"] == "hami"


def test_the_second_page_is_the_training_cluster_read_through_its_exporters(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """`make demo`'s second page: advisor/examples/training.yaml through its own simulated
    exporters, the file standing in for the Kubernetes API (PodGroups, Queues, Volcano's
    actions): the report tells the file's story, and the summary names the gangs and the
    useless eviction. The first page's summary is the demo's own, unchanged."""
    out = tmp_path / "out"
    run(out, lambda: main(["--output-dir", str(out), "--no-prometheus"]), training=True)
    lines = capfd.readouterr().out.splitlines()
    assert lines[2] == SUMMARY
    assert not any(line.startswith(("gangs:", "preemption:")) for line in lines[:7])
    page = out / TRAINING_PAGE
    second = lines.index(
        f"xgpu-demo: next, {TRAINING_STORY}: {TRAINING_SCENARIO}, reported in {page}"
    )
    training = load_scenario(TRAINING_SCENARIO)
    up = f"xgpu-demo: {len(training.nodes)} simulated exporters up; reading the exporters directly"
    assert lines[second + 1] == up
    assert lines[second + 3 : second + 7] == [
        "11 Pending GPU pods: 1 fragmentation, 1 capacity, 7 gang, 2 queue",
        "gangs: ml/llm-pretrain rolled-back (0 running, 8 Pending, min_member 8, queue "
        "training); research/sweep-b not-admitted (0 running, 2 Pending, min_member 2, queue "
        "research)",
        "preemption: ml/eval-release evicts batch/embed-0 on a100-80g-1; it still fits no card "
        "there (helps: false)",
        "0 plans rescuing 0 pods with 0 evictions",
    ]
    assert lines[second + 7].startswith("fragmentation: ")
    assert lines[second + 8 :] == [f"open the report: file://{(page / 'report.html').resolve()}"]
    # what the exporters and the file make of it is what the file alone says
    data = json.loads((page / "report.json").read_text())
    expected = judge(training)
    assert [(p["pod"], p["cause"]) for p in data["diagnosis"]["pods"]] == [
        (d.pod.name, d.cause) for d in expected.pods
    ]
    assert [g["state"] for g in data["diagnosis"]["groups"]] == [g.state for g in expected.groups]
    (evicts,) = [p for p in data["diagnosis"]["pods"] if p["preemption"]["verdict"] == "evicts"]
    assert (evicts["pod"], evicts["preemption"]["helps"]) == ("ml/eval-release", False)
