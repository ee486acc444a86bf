"""`xgpu-advisor report --scenario`: the files it writes (JSON, Markdown, HTML, a promtool-clean
textfile agreeing with the JSON), its exit codes, and a real Pushgateway receiving its series.
Bad input writes nothing and replaces nothing."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
import urllib.request
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from advisor.cli import main
from advisor.core.diagnosis import CAUSES
from advisor.scenario import load_scenario
from advisor.schemas import REPORT_SCHEMA
from tests.advisor.commands.test_whatif_profiles import THREE_CARDS
from tests.realparts import DEMO, free_port, promtool_check_metrics

pytest_plugins = ["tests.advisor.pushgateway"]  # the `pushgateway` fixture

DEMO_CLUSTER = load_scenario(DEMO)
MIB = 2**20
REPORT_FILES = ("report.json", "report.md", "report.html")
SampleKey = tuple[str, tuple[tuple[str, str], ...]]


def report(out: Path, *extra: str, scenario: Path = DEMO) -> list[str]:
    return ["report", "--scenario", str(scenario), "--output-dir", str(out), *extra]


def samples(text: str) -> dict[SampleKey, float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One report of the demo scenario, with its textfile (`capsys` is function-scoped, so
    this run's stderr is checked in its own test below)."""
    out = tmp_path_factory.mktemp("report") / "out"
    assert main(report(out, "--textfile", str(out / "xgpu_advisor.prom"))) == 0
    return out


@pytest.fixture(scope="module")
def data(written: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((written / "report.json").read_text())
    return loaded


def test_report_files_and_nothing_else(written: Path) -> None:
    names = sorted(p.name for p in written.iterdir())
    assert names == sorted([*REPORT_FILES, "xgpu_advisor.prom"])  # no temporary files left


def test_json_holds_diagnosis_plan_fragmentation_and_headroom(data: dict[str, Any]) -> None:
    assert data["schema"] == REPORT_SCHEMA
    assert data["source"] == f"scenario {DEMO}"
    assert (data["warnings"], data["stale"]) == ([], [])
    assert data["diagnosis"]["summary"] == {
        "pending": 10,
        "schedulable": 4,
        "node-resources": 1,
        "fragmentation": 1,
        "capacity": 1,
        "unsatisfiable": 1,
        "invalid": 1,
        "mig-geometry": 1,
    }
    causes = {p["pod"]: p["cause"] for p in data["diagnosis"]["pods"]}
    assert causes["web/infer-2"] == "fragmentation"  # CCE's own example
    assert causes["vision/train-xl"] == "node-resources"  # its card fits; its node's cpu not
    assert causes["speech/whisper-1"] == "mig-geometry"  # the MIG node's idle instances
    (rescue,) = data["plan"]["plans"]
    assert (rescue["rescues"], rescue["evict"]) == (["web/infer-2"], ["ml/train-a"])
    assert data["plan"]["summary"]["rescued_pods"] == 1
    unresolved = {u["pod"]: u["cause"] for u in data["plan"]["unresolved"]}
    assert unresolved == {
        "ml/finetune-0": "capacity",
        "ml/pretrain-0": "unsatisfiable",
        "web/odd-size": "invalid",
        "vision/train-xl": "node-resources",
        "speech/whisper-1": "mig-geometry",  # plans move no MIG pod; its re-partition advice
    }
    frag = data["fragmentation"]
    running = sum(p.request.memory_mib for p in DEMO_CLUSTER.running)
    healthy = sum(
        c.memory_mib for n in DEMO_CLUSTER.nodes for c in n.cards if c.healthy and c.mig is None
    )
    # free memory on healthy cards: all of it less what runs there (nothing on the broken card;
    # a MIG card takes no vGPU, so none of its memory is free for one)
    assert frag["free_mib"] == healthy - running
    assert 0 < frag["ratio"] <= 1
    room = data["headroom"]
    # GPUs of memory: the healthy cards' MiB over the commonest card's (the plan's unit)
    gpu = data["plan"]["summary"]["reference_card_mib"]
    # every healthy vGPU card: a MIG card takes MIG pods only (docs/design.md §13)
    cards = sum(
        c.memory_mib for n in DEMO_CLUSTER.nodes for c in n.cards if c.healthy and c.mig is None
    )
    assert room["capacity_gpus"] == round(cards / gpu, 3)
    assert room["peak_allotted_gpus"] > 0
    assert (data["rightsizing"], data["usage"]) == (None, None)  # a scenario has no history


def test_plan_is_feasible_by_an_independent_replay(data: dict[str, Any]) -> None:
    """Evict, then place the schedulable pods and the plan's pods where the report says:
    no card over its memory, no card mixing isolation modes, no pod on a broken card; and
    every node admits its pods as kube-scheduler would (selector, taints, cpu, memory)."""
    plan = data["plan"]
    (rescue,) = plan["plans"]
    pods = {p.name: p for p in DEMO_CLUSTER.pods}
    where = {
        p.name: (p.placement.node, p.placement.cards) for p in DEMO_CLUSTER.running if p.placement
    }
    for name in rescue["evict"]:
        del where[name]
    cards = {(n.name, c.index): c for n in DEMO_CLUSTER.nodes for c in n.cards}
    for name, spot in [*plan["schedulable"].items(), *rescue["placements"].items()]:
        assert name not in where, name
        where[name] = (spot["node"], tuple(spot["cards"]))
        assert all(cards[spot["node"], i].healthy for i in spot["cards"]), name
    load: dict[tuple[str, int], int] = defaultdict(int)
    modes: dict[tuple[str, int], set[int]] = defaultdict(set)
    for name, (node, indices) in where.items():
        request = pods[name].request
        assert len(indices) == request.gpus, name
        for index in indices:
            load[node, index] += request.memory_mib // request.gpus
            modes[node, index].add(1 if request.core_percent else 0)
    for key, used in load.items():
        assert used <= cards[key].memory_mib, key
        assert len(modes[key]) == 1, key
    hosts = {n.name: n for n in DEMO_CLUSTER.nodes}
    cpu = {n.name: sum(o.resources.cpu_milli for o in n.other_pods or ()) for n in hosts.values()}
    memory = {
        n.name: sum(o.resources.memory_bytes for o in n.other_pods or ()) for n in hosts.values()
    }
    for name, (host_name, _) in where.items():
        pod, host = pods[name], hosts[host_name]
        labels = dict(host.labels)
        assert all(labels.get(k) == v for k, v in pod.constraints.node_selector), name
        for taint in host.taints:  # the demo's tolerations are all Equal, with an effect
            assert any(
                (t.key, t.value, t.effect) == (taint.key, taint.value, taint.effect)
                for t in pod.constraints.tolerations
            ), name
        cpu[host_name] += pod.resources.cpu_milli
        memory[host_name] += pod.resources.memory_bytes
    for name, host in hosts.items():
        assert host.allocatable.cpu_milli is not None
        assert host.allocatable.memory_bytes is not None
        assert cpu[name] <= host.allocatable.cpu_milli, name
        assert memory[name] <= host.allocatable.memory_bytes, name


def test_markdown_and_html_name_every_pending_pod(written: Path) -> None:
    markdown = (written / "report.md").read_text()
    page = (written / "report.html").read_text()
    assert markdown.startswith("#")
    assert page.lstrip().lower().startswith("<!doctype html>")
    for pod in DEMO_CLUSTER.pending:
        assert pod.name in markdown, pod.name
        assert pod.name in page, pod.name


@pytest.mark.realservices  # promtool
@pytest.mark.skipif(shutil.which("promtool") is None, reason="promtool not installed")
def test_textfile_is_lint_clean(written: Path) -> None:
    text = (written / "xgpu_advisor.prom").read_text()
    status, findings = promtool_check_metrics(text)
    assert status == 0, findings


def test_textfile_agrees_with_the_json(written: Path, data: dict[str, Any]) -> None:
    got = samples((written / "xgpu_advisor.prom").read_text())
    summary = data["diagnosis"]["summary"]
    for cause in CAUSES:
        assert got["xgpu_advisor_pending_pods", (("cause", cause),)] == summary[cause], cause
    plan = data["plan"]
    for kind, found in [
        ("rebalance", len(plan["plans"])),
        ("scale_up", len(plan["scale_up"])),
        ("scale_down", len(plan["scale_down"])),
    ]:
        assert got["xgpu_advisor_plans", (("kind", kind),)] == found, kind
    assert got["xgpu_advisor_rescuable_pods", ()] == plan["summary"]["rescued_pods"]
    frag = data["fragmentation"]
    assert got["xgpu_advisor_stranded_memory_bytes", ()] == frag["stranded_mib"] * MIB
    assert math.isclose(got["xgpu_advisor_fragmentation_ratio", ()], frag["ratio"], abs_tol=1e-4)
    duration = got["xgpu_advisor_run_duration_seconds", ()]
    assert math.isclose(duration, data["run"]["duration_seconds"], abs_tol=1e-3)
    started = datetime.fromisoformat(data["generated_at"]).timestamp()
    finished = got["xgpu_advisor_last_success_timestamp_seconds", ()]
    assert math.isclose(finished, started + duration, abs_tol=1e-3)


def test_summary_line_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(report(out)) == 0
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "xgpu-advisor: 10 Pending GPU pods (4 schedulable, 1 node-resources, 1 fragmentation, "
        "1 capacity, 1 unsatisfiable, 1 invalid, 1 mig-geometry); 1 plan rescuing 1 pod; "
        f"reports in {out}/\n"
    )


def test_plan_work_bounds_the_plan_search(
    tmp_path: Path, data: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    """The cron run's plan search is bounded as `plan`'s: by `--plan-work` (default as
    plan's), recorded with the plans; one unit is too few to find the demo's plan."""
    assert data["plan"]["summary"]["work_budget"] == 200_000
    assert data["plan"]["plans"]
    out = tmp_path / "out"
    assert main(report(out, "--plan-work", "1")) == 0
    bounded = json.loads((out / "report.json").read_text())["plan"]
    summary = bounded["summary"]
    assert (summary["work_budget"], summary["stopped_by"], bounded["plans"]) == (1, "work", [])
    with pytest.raises(SystemExit) as refused:  # argparse's usage error, as for `plan`
        main(report(tmp_path / "none", "--plan-work", "0"))
    assert refused.value.code == 2
    assert "--plan-work" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()


def test_empty_cluster_reports_nothing_pending(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scenario = tmp_path / "empty.yaml"
    scenario.write_text("nodes: []\n")
    out = tmp_path / "out"
    args = ["report", "--scenario", str(scenario), "--output-dir", str(out)]
    assert main([*args, "--textfile", str(out / "x.prom"), "--fail-on", "capacity"]) == 0
    assert capsys.readouterr().err == (
        f"xgpu-advisor: 0 Pending GPU pods; 0 plans rescuing 0 pods; reports in {out}/\n"
    )
    data = json.loads((out / "report.json").read_text())
    assert data["diagnosis"]["summary"]["pending"] == 0
    assert data["plan"]["plans"] == []
    assert data["plan"]["scale_up"] == []
    assert data["fragmentation"]["free_mib"] == 0
    assert "No Pending GPU pods" in (out / "report.md").read_text()


@pytest.mark.parametrize(
    ("extra", "code"),
    [
        (["--fail-on", "fragmentation"], 1),  # 1 such pod, default threshold 1
        (["--fail-on", "node-resources"], 1),
        (["--fail-on", "fragmentation", "--fail-threshold", "5"], 0),
        (["--fail-on", "capacity,invalid", "--fail-threshold", "2"], 1),  # summed over causes
        (["--fail-on", "capacity,invalid", "--fail-threshold", "3"], 0),
    ],
)
def test_fail_on_findings(
    extra: list[str], code: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(report(out, *extra)) == code
    # an alerting exit still leaves the reports behind, as cron expects
    assert sorted(p.name for p in out.iterdir()) == sorted(REPORT_FILES)
    err = capsys.readouterr().err
    assert "Pending GPU pods" in err
    # exit 1 says why, in one line naming the flag and the threshold
    why = [line for line in err.splitlines() if line.startswith("xgpu-advisor: --fail-on ")]
    assert len(why) == code, err
    assert all(line.endswith("; exit 1") and "--fail-threshold" in line for line in why), err


def test_fail_on_rejects_unknown_causes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(report(Path("unused"), "--fail-on", "fragmentaton"))
    assert exit_info.value.code == 2
    assert "unknown cause fragmentaton" in capsys.readouterr().err


def test_fail_threshold_below_one_is_an_input_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(report(out, "--fail-on", "capacity", "--fail-threshold", "0")) == 2
    assert capsys.readouterr().err == "xgpu-advisor: error: --fail-threshold must be at least 1\n"
    assert not out.exists()


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "xgpu-advisor"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "advisor.cli"]
    return subprocess.run([*command, *args], capture_output=True, text=True, check=False)


def snapshot_of(directory: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in directory.iterdir()}


@pytest.mark.realservices  # xgpu-advisor as a process
def test_bad_scenario_exits_2_and_replaces_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "nodes:\n  - {name: n1, cards: [{index: 0, memory_mib: 16384}]}\n"
        "pods:\n  - {name: a/b, request: {gpus: two, memory_mib: 1024}}\n"
    )
    out = tmp_path / "out"
    out.mkdir()
    for name in [*REPORT_FILES, "xgpu_advisor.prom"]:
        (out / name).write_text(f"last good {name}\n")
    before = snapshot_of(out)
    proc = run_cli(*report(out, "--textfile", str(out / "xgpu_advisor.prom"), scenario=bad))
    assert proc.returncode == 2
    assert proc.stderr == (
        f"xgpu-advisor: error: {bad}: pods[0].request.gpus: "
        "expected an integer, got the string 'two'\n"
    )
    assert proc.stdout == ""
    assert snapshot_of(out) == before  # same files, same bytes, same times: untouched


def test_missing_scenario_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(report(out, scenario=tmp_path / "absent.yaml")) == 2
    err = capsys.readouterr().err
    assert err.startswith("xgpu-advisor: error: ")
    assert "absent.yaml" in err
    assert err.count("\n") == 1
    assert not out.exists()


def test_unwritable_output_dir_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert main(report(blocker / "out")) == 2  # root may write anywhere, but not into a file
    err = capsys.readouterr().err
    assert err.startswith("xgpu-advisor: error: cannot write reports: ")
    assert "Not a directory" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize("parent", ["a-file", "absent"])
def test_textfile_in_no_directory_exits_2_before_writing(
    parent: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a-file").write_text("")
    textfile = tmp_path / parent / "x.prom"
    out = tmp_path / "out"
    assert main(report(out, "--textfile", str(textfile))) == 2
    assert capsys.readouterr().err == (
        f"xgpu-advisor: error: --textfile {textfile}: {textfile.parent} is not a directory\n"
    )
    assert not out.exists()  # no reports without their metrics


@pytest.mark.parametrize(
    "sources",
    [
        ["--prometheus", "http://127.0.0.1:1"],  # with --scenario: two sources
        ["--exporters", "http://127.0.0.1:1"],
    ],
)
def test_two_sources_exit_2(
    sources: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(report(out, *sources)) == 2
    assert capsys.readouterr().err == (
        "xgpu-advisor: error: give exactly one source: --scenario, --prometheus or --exporters\n"
    )
    assert not out.exists()


def test_no_source_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", "--output-dir", str(tmp_path / "out")]) == 2
    assert "give exactly one source" in capsys.readouterr().err


@pytest.mark.realservices  # a real Pushgateway
def test_pushes_to_a_real_pushgateway(
    pushgateway: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(report(out, "--pushgateway", pushgateway)) == 0
    capsys.readouterr()
    with urllib.request.urlopen(f"{pushgateway}/metrics", timeout=5) as response:
        got = samples(response.read().decode())
    data = json.loads((out / "report.json").read_text())

    def pushed(name: str, **labels: str) -> float:
        group = {"instance": "", "job": "xgpu-advisor"}
        return got[name, tuple(sorted({**group, **labels}.items()))]

    for cause in CAUSES:
        assert (
            pushed("xgpu_advisor_pending_pods", cause=cause)
            == (data["diagnosis"]["summary"][cause])
        ), cause
    assert pushed("xgpu_advisor_plans", kind="rebalance") == 1
    assert pushed("xgpu_advisor_rescuable_pods") == 1
    assert pushed("xgpu_advisor_last_success_timestamp_seconds") > 1.7e9
    # The gateway answering an error is an error too: one line naming the HTTP status.
    assert main(report(out, "--pushgateway", f"{pushgateway}/no/such/prefix")) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"xgpu-advisor: error: {pushgateway}/no/such/prefix: cannot push: HTTP ")
    assert err.count("\n") == 1


@pytest.mark.realservices  # xgpu-advisor as a process
def test_unreachable_pushgateway_exits_2_with_one_line(tmp_path: Path) -> None:
    gateway = f"http://127.0.0.1:{free_port()}"  # nobody listens there
    proc = run_cli(*report(tmp_path / "out", "--pushgateway", gateway))
    assert proc.returncode == 2
    assert proc.stderr == f"xgpu-advisor: error: {gateway}: cannot push: Connection refused\n"


# --- --scheduler (docs/design.md §9.2) ------------------------------------------------------


def test_report_judges_by_the_profile_and_says_which(tmp_path: Path) -> None:
    scenario = tmp_path / "three.yaml"
    scenario.write_text(yaml.safe_dump(THREE_CARDS))
    out = tmp_path / "out"
    assert main(report(out, "--scheduler", "hami", scenario=scenario)) == 0
    data = json.loads((out / "report.json").read_text())
    assert data["schema"] == REPORT_SCHEMA  # still v1: the profile is an added key
    hami = {
        "profile": "hami",
        "default_memory_mib": 0,
        "weights": {"slot": 1, "core": 1, "memory": 1},
    }
    assert data["diagnosis"]["scheduler"] == hami
    assert data["plan"]["scheduler"] == hami
    assert data["diagnosis"]["policy"] == {"node": "binpack", "card": "spread"}
    [pod] = data["diagnosis"]["pods"]
    assert pod["placement"] == {"node": "n1", "cards": [0]}  # hand-computed in THREE_CARDS
    assert "· policy hami: node binpack, card spread" in (out / "report.md").read_text()
    assert "· policy hami: node binpack, card spread" in (out / "report.html").read_text()


def test_a_cce_report_names_cce_in_its_json_only(data: dict[str, Any], written: Path) -> None:
    assert data["diagnosis"]["scheduler"] == {"profile": "cce"}
    assert data["plan"]["scheduler"] == {"profile": "cce"}
    assert "· policy node binpack, card binpack" in (written / "report.md").read_text()


@pytest.mark.parametrize(
    "flag",
    [
        '--prometheus.selector=cluster="a"',
        "--prometheus.header=X-Scope-OrgID: a",
        "--prometheus.insecure-skip-verify",
    ],
)
def test_prometheus_flags_with_a_scenario_are_refused_not_ignored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flag: str
) -> None:
    out = tmp_path / "out"
    code = main(["report", "--scenario", str(DEMO), "--output-dir", str(out), flag])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.count("\n") == 0
    assert err.endswith(f"{flag.partition('=')[0]} applies to --prometheus only"), err
    assert not out.exists()
