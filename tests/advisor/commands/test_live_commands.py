"""`diagnose`, `plan` and `whatif` on live sources, all real: `xgpu-exporter --simulate` for
each node of the demo, a real Prometheus scraping them, the Kubernetes API double holding the
demo's pods. Each command read live says what it says of the snapshot taken of the same
cluster, and of the demo file itself; the source flags are report's and snapshot's."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from advisor.cli import main
from tests.advisor.realservices import Live, demo_live
from tests.fuzz.hostile import Outcome, run_main
from tests.realparts import LIVE_DEMO

pytestmark = pytest.mark.realservices  # real exporters, Prometheus and the API double


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with demo_live(tmp_path_factory.mktemp("live-commands")) as running:
        yield running


@pytest.fixture(scope="module")
def snapshot(live: Live) -> Path:
    """The live cluster as a scenario file, written by `snapshot` from Prometheus."""
    out = live.home / "snapshot.yaml"
    argv = ["snapshot", "--prometheus", live.prometheus.url, "--kubeconfig", str(live.kubeconfig)]
    outcome = run_main(main, [*argv, "--output", str(out)])
    assert outcome.code == 0, outcome
    return out


def sources(live: Live, which: str) -> list[str]:
    metrics = (
        ["--prometheus", live.prometheus.url]
        if which == "prometheus"
        else ["--exporters", live.exporter_urls]
    )
    return [*metrics, "--kubeconfig", str(live.kubeconfig)]


def json_of(*argv: str) -> tuple[Any, Outcome]:
    outcome = run_main(main, [*argv, "--format", "json"])
    assert outcome.code == 0, outcome
    return json.loads(outcome.stdout), outcome


# A Pending pod's Waiting cell (seconds apart between two runs: the same minute or not).
AGE = re.compile(r"\| (?:\d+ h \d+ min|\d+ min|\d+ s) \|")


def ages(diagnosis: dict[str, Any]) -> dict[str, float]:
    """Each pod's `pending_age_seconds`, taken out of the diagnosis."""
    return {p["pod"]: p.pop("pending_age_seconds") for p in diagnosis["pods"]}


@pytest.mark.parametrize("which", ["prometheus", "exporters"])
def test_diagnose_live_is_the_diagnosis_of_its_snapshot_and_of_the_demo(
    live: Live, snapshot: Path, which: str
) -> None:
    read_live, outcome = json_of("diagnose", *sources(live, which))
    assert outcome.stderr == ""  # no warnings, no stale series
    of_snapshot, _ = json_of("diagnose", "--scenario", str(snapshot))
    of_demo, _ = json_of("diagnose", "--scenario", str(LIVE_DEMO))
    # Ages count to each run's now: the live run's clock, the snapshot's and the demo's `now`.
    live_ages, snapshot_ages = ages(read_live), ages(of_snapshot)
    assert set(live_ages) == set(snapshot_ages) == {p["pod"] for p in read_live["pods"]}
    assert all(0 <= live_ages[p] - snapshot_ages[p] < 120 for p in live_ages)
    assert ages(of_demo)["web/infer-1"] == 7320.0
    assert read_live == of_snapshot == of_demo
    causes = {p["pod"]: p["cause"] for p in read_live["pods"]}
    assert causes["web/infer-2"] == "fragmentation"
    page = run_main(main, ["diagnose", *sources(live, which)])  # Markdown, the default
    again = run_main(main, ["diagnose", "--scenario", str(snapshot)]).stdout
    assert AGE.search(page.stdout)
    assert AGE.sub("| age |", page.stdout) == AGE.sub("| age |", again)
    assert causes["vision/train-xl"] == "node-resources"  # Kubernetes gave the cpu


def test_diagnose_live_pages_name_the_source(live: Live) -> None:
    outcome = run_main(main, ["diagnose", *sources(live, "prometheus"), "--format", "html"])
    assert outcome.code == 0, outcome
    assert f"<title>xgpu-advisor diagnosis: prometheus {live.prometheus.url}" in outcome.stdout


@pytest.mark.parametrize("which", ["prometheus", "exporters"])
def test_plan_live_is_the_plan_of_its_snapshot(live: Live, snapshot: Path, which: str) -> None:
    read_live, _ = json_of("plan", *sources(live, which))
    of_snapshot, _ = json_of("plan", "--scenario", str(snapshot))
    assert read_live == of_snapshot
    (rescue,) = read_live["plans"]
    assert (rescue["rescues"], rescue["evict"]) == (["web/infer-2"], ["ml/train-a"])
    script = run_main(main, ["plan", *sources(live, which), "--format", "kubectl"])
    assert script.code == 0, script
    assert "pods/train-a/eviction" in script.stdout


@pytest.mark.parametrize("profiles", [[], ["--scheduler", "cce,hami,volcano-vgpu"]])
def test_whatif_live_is_the_whatif_of_its_snapshot(
    live: Live, snapshot: Path, profiles: list[str]
) -> None:
    read_live, _ = json_of("whatif", *sources(live, "prometheus"), *profiles)
    of_snapshot, _ = json_of("whatif", "--scenario", str(snapshot), *profiles)
    assert read_live == of_snapshot


def test_without_kubernetes_the_commands_say_what_is_missing(live: Live) -> None:
    data, outcome = json_of("diagnose", "--prometheus", live.prometheus.url)
    assert outcome.stderr == (
        "xgpu-advisor: warning: no Kubernetes source: Pending pods are unknown, the model "
        "holds running pods only; --scheduler auto cannot read the scheduler either: "
        "modelled as cce\n"
    )
    assert data["summary"]["pending"] == 0


def test_pods_from_stands_in_for_kubernetes_as_for_report(live: Live, snapshot: Path) -> None:
    argv = ["--exporters", live.exporter_urls, "--pods-from", str(LIVE_DEMO)]
    with_file, outcome = json_of("diagnose", *argv)
    assert outcome.stderr == ""  # the file stands in: no "no Kubernetes source" warning
    of_snapshot, _ = json_of("diagnose", "--scenario", str(snapshot))
    of_demo, _ = json_of("diagnose", "--scenario", str(LIVE_DEMO))
    # The file brings its clock: ages count to the demo's `now`, not to the live run's.
    assert ages(with_file) == ages(of_demo) != ages(of_snapshot)
    assert with_file == of_snapshot == of_demo


@pytest.mark.parametrize("command", ["diagnose", "plan", "whatif", "report"])
@pytest.mark.parametrize(
    ("argv", "error"),
    [
        ([], "give exactly one source: --scenario, --prometheus or --exporters"),
        (
            ["--scenario", str(LIVE_DEMO), "--exporters", "http://127.0.0.1:1"],
            "give exactly one source: --scenario, --prometheus or --exporters",
        ),
        (
            ["--scenario", str(LIVE_DEMO), "--kubernetes"],
            "--kubernetes applies to --prometheus or --exporters only",
        ),
        (
            ["--scenario", str(LIVE_DEMO), "--prometheus.selector", 'cluster="a"'],
            "--prometheus.selector applies to --prometheus only",
        ),
        # Flags with defaults: refused when written, even at their default value.
        (
            ["--scenario", str(LIVE_DEMO), "--stale-after", "300"],
            "--stale-after applies to --prometheus or --exporters only",
        ),
        (
            ["--scenario", str(LIVE_DEMO), "--source-timeout=10"],
            "--source-timeout applies to --prometheus or --exporters only",
        ),
        (
            ["--exporters", "http://127.0.0.1:1", "--prometheus.max-series", "10"],
            "--prometheus.max-series applies to --prometheus only",
        ),
        (
            ["--scenario", str(LIVE_DEMO), "--prometheus.max-answer-bytes", "1MiB"],
            "--prometheus.max-answer-bytes applies to --prometheus only",
        ),
        (
            ["--prometheus", "http://127.0.0.1:1", "--exporters.max-answer-bytes", "1MiB"],
            "--exporters.max-answer-bytes applies to --exporters only",
        ),
        (
            ["--exporters", "http://127.0.0.1:1", "--scenario.max-pods", "5"],
            "--scenario.max-pods applies to --scenario only",
        ),
    ],
)
def test_one_source_and_no_flag_left_unused(
    command: str, argv: list[str], error: str, tmp_path: Path
) -> None:
    out = ["--output-dir", str(tmp_path / "out")] if command == "report" else []
    outcome = run_main(main, [command, *argv, *out])
    assert (outcome.code, outcome.stdout) == (2, "")
    assert outcome.stderr == f"xgpu-advisor: error: {error}\n"
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", ["diagnose", "plan", "whatif"])
def test_the_help_says_the_command_reads_live_sources(command: str) -> None:
    outcome = run_main(main, [command, "--help"])
    assert outcome.code == 0
    assert "Reads the cluster live (--prometheus URL or --exporters URL" in outcome.stdout
    for flag in ("--kubernetes", "--kubeconfig", "--prometheus.bearer-token-file", "--pods-from"):
        assert flag in outcome.stdout
    overview = run_main(main, ["--help"]).stdout
    assert "(live, or from a scenario file)" in overview
