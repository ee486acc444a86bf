"""End to end with real parts: `xgpu-exporter --simulate` for each node of the demo scenario,
a real Prometheus scraping them (scrape config as deploy/'s: `node` target label,
honor_labels), the Kubernetes API double holding the demo's pods, the real clients, and
`xgpu-advisor snapshot` -> load_scenario -> diagnose giving what the demo file gives."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from advisor.cli import main
from advisor.core.diagnose import diagnose
from advisor.core.model import DISRUPTION_BUDGET, Cluster, Pod
from advisor.core.nodefilters import NodeConstraints
from advisor.core.plan import plan
from advisor.output import diagnosis_json
from advisor.scenario import load_scenario
from advisor.schemas import DiagnosisJson
from tests.advisor.core.test_plan_checker import check_report
from tests.advisor.realservices import Live, demo_live
from tests.advisor.sources.builders import cce_pod
from tests.kubeapi import objects
from tests.kubeapi.threaded import KubeApiThread
from tests.realparts import (
    LIVE_DEMO,
    free_port,
    scrape_config,
    simulated_exporter,
    start_prometheus,
)

pytestmark = pytest.mark.realservices  # real exporters, Prometheus and the API double

DEMO_CLUSTER = load_scenario(LIVE_DEMO)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    with demo_live(tmp_path_factory.mktemp("live")) as running:
        yield running


def same_cluster(snapshot: Cluster, expected: Cluster) -> None:
    def nodes(c: Cluster) -> list[Any]:  # other pods aside: checked where the test knows them
        return sorted((replace(n, other_pods=None) for n in c.nodes), key=lambda n: n.name)

    def labels(c: Cluster) -> dict[str, dict[str, str]]:  # not part of Node equality
        # The API server's nodes all carry their hostname label; the demo file does not.
        return {
            n.name: {k: v for k, v in n.labels.items() if k != "kubernetes.io/hostname"}
            for n in c.nodes
        }

    def times(c: Cluster) -> dict[str, tuple[str | None, str | None]]:
        return {p.name: (p.created, p.scheduled) for p in c.pods if p.created}

    def untimed(pods: tuple[Pod, ...]) -> list[Pod]:
        return [replace(p, created=None, scheduled=None) for p in pods]

    assert nodes(snapshot) == nodes(expected)
    assert labels(snapshot) == labels(expected)
    assert sorted(untimed(snapshot.running), key=lambda p: p.name) == sorted(
        untimed(expected.running), key=lambda p: p.name
    )
    assert untimed(snapshot.pending) == untimed(expected.pending)  # the queue order too
    # The API double serves the demo's times, and a time of its own to the pods without.
    assert times(expected).items() <= times(snapshot).items()
    assert (snapshot.policy, snapshot.max_vgpus_per_card) == (
        expected.policy,
        expected.max_vgpus_per_card,
    )


def diagnosis(cluster: Cluster) -> DiagnosisJson:
    return diagnosis_json(diagnose(cluster))


@pytest.mark.parametrize("source", ["--prometheus", "--exporters"])
def test_snapshot_reproduces_the_demo(
    live: Live, source: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = live.prometheus.url if source == "--prometheus" else live.exporter_urls
    out = tmp_path / "snapshot.yaml"
    code = main(
        ["snapshot", source, url, "--kubeconfig", str(live.kubeconfig), "--output", str(out)]
    )
    err = capsys.readouterr().err
    assert code == 0, err
    assert err.count("\n") == 1, err  # no warnings, no stale series: only the summary
    assert err.startswith(f"xgpu-advisor: wrote {out} from ")
    cards = sum(len(n.cards) for n in DEMO_CLUSTER.nodes)
    running, pending = len(DEMO_CLUSTER.running), len(DEMO_CLUSTER.pending)
    nodes = len(DEMO_CLUSTER.nodes)
    assert f"{nodes} nodes, {cards} cards, {running} running pods and {pending} Pending pods" in err
    snapshot = load_scenario(out)
    same_cluster(snapshot, DEMO_CLUSTER)
    # Kubernetes holds the demo's pods, GPU ones all modelled, and its other pods: known,
    # with what each requests and where it may go (none asks anything: known to be none);
    # no pod stays with its node (no DaemonSet, mirror or terminating pod that is not a
    # modelled GPU pod).
    others = {n.name: n.other_pods for n in snapshot.nodes}
    assert others == {
        n.name: tuple(replace(p, constraints=NodeConstraints()) for p in n.other_pods or ())
        for n in DEMO_CLUSTER.nodes
    }
    assert {n.resident_pods for n in snapshot.nodes} == {()}
    assert diagnosis(snapshot) == diagnosis(DEMO_CLUSTER)
    causes = {p["pod"]: p["cause"] for p in diagnosis(snapshot)["pods"]}
    assert causes["web/infer-2"] == "fragmentation"
    assert causes["web/odd-size"] == "invalid"


def test_snapshot_without_kubernetes_holds_running_pods_only(
    live: Live, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "snapshot.json"
    assert main(["snapshot", "--prometheus", live.prometheus.url, "--output", str(out)]) == 0
    err = capsys.readouterr().err
    assert "xgpu-advisor: warning: no Kubernetes source: Pending pods are unknown" in err
    snapshot = load_scenario(out)
    assert snapshot.pending == ()
    assert len(snapshot.running) == len(DEMO_CLUSTER.running)
    assert {p.owner for p in snapshot.running} == {None}  # only Kubernetes knows owners
    assert {n.other_pods for n in snapshot.nodes} == {None}  # nor the nodes' other pods


def test_malformed_pending_pod_is_kept_as_invalid(
    live: Live, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = cce_pod("web/broken")
    broken["metadata"]["labels"]["volcano.sh/gpu-num"] = "two"
    with KubeApiThread() as kube:
        kube.call(kube.api.add_pod, broken)
        kubeconfig = kube.api.write_kubeconfig(tmp_path / "kubeconfig")
        out = tmp_path / "snapshot.yaml"
        args = ["snapshot", "--exporters", live.exporter_urls, "--kubeconfig", str(kubeconfig)]
        assert main([*args, "--output", str(out)]) == 0
    err = capsys.readouterr().err
    # the running pods Kubernetes does not know are named, not dropped
    assert "unknown to Kubernetes (deleted?): infer/embed-0" in err
    snapshot = load_scenario(out)
    assert len(snapshot.running) == len(DEMO_CLUSTER.running)
    (pending,) = snapshot.pending
    assert pending.name == "web/broken"
    assert pending.invalid is not None
    assert "label volcano.sh/gpu-num" in pending.invalid
    (verdict,) = diagnose(snapshot).pods
    assert verdict.cause == "invalid"
    assert verdict.message == pending.invalid


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    script = Path(sys.executable).parent / "xgpu-advisor"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "advisor.cli"]
    return subprocess.run([*command, *args], capture_output=True, text=True, check=False)


def test_unreachable_prometheus_exits_2_with_one_line(tmp_path: Path) -> None:
    port = free_port()
    out = tmp_path / "snapshot.yaml"
    proc = run_cli("snapshot", "--prometheus", f"http://127.0.0.1:{port}", "--output", str(out))
    assert proc.returncode == 2
    assert proc.stderr.startswith(
        f"xgpu-advisor: error: Prometheus http://127.0.0.1:{port}: cannot reach it: "
    )
    assert proc.stderr.count("\n") == 1
    assert not out.exists()


def test_kubernetes_api_error_exits_2(
    live: Live, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "snapshot.yaml"
    live.kube.call(live.kube.api.fail_next, 1, status_code=500, target="list", resource="pods")
    args = ["snapshot", "--prometheus", live.prometheus.url, "--kubeconfig", str(live.kubeconfig)]
    assert main([*args, "--output", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"xgpu-advisor: error: Kubernetes API {live.kube.url}: list ")
    assert err.count("\n") == 1
    assert not out.exists()


def test_empty_cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prometheus = start_prometheus(tmp_path)
    try:
        out = tmp_path / "snapshot.yaml"
        assert main(["snapshot", "--prometheus", prometheus.url, "--output", str(out)]) == 0
    finally:
        prometheus.stop()
    err = capsys.readouterr().err
    assert "no xgpu exporter series found (no GPU nodes?)" in err
    empty = load_scenario(out)
    assert (empty.nodes, empty.pods) == ((), ())


def test_a_stopped_exporter_is_stale_not_silently_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exporter = simulated_exporter(LIVE_DEMO, "v100-node-1", tmp_path)
    prometheus = start_prometheus(tmp_path, scrape_config({exporter.url: exporter.node}))
    try:
        prometheus.wait_for("xgpu_node_info", lambda r: len(r) == 1)
        exporter.stop()
        prometheus.wait_for("xgpu_node_info", lambda r: not r)  # the series ended
        out = tmp_path / "snapshot.yaml"
        assert main(["snapshot", "--prometheus", prometheus.url, "--output", str(out)]) == 0
    finally:
        prometheus.stop()
        exporter.stop()
    err = capsys.readouterr().err
    assert "xgpu-advisor: stale, left out: node v100-node-1: xgpu_node_info series ended" in err
    assert load_scenario(out).nodes == ()


def test_disruption_budgets_reach_the_snapshot_and_hold_the_plans(
    live: Live, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A budget allowing no disruption over every pod of `ml` (empty selector): the snapshot
    file records it on each of them, and the plans made from it evict none of them (the
    demo's own plan evicts ml/train-a)."""
    assert [p.evict for p in plan(DEMO_CLUSTER).plans] == [("ml/train-a",)]
    guard = objects.pdb("guard", namespace="ml", selector={}, disruptions_allowed=0)
    live.kube.call(live.kube.api.add_pdb, guard)
    out = tmp_path / "snapshot.yaml"
    args = ["snapshot", "--prometheus", live.prometheus.url, "--kubeconfig", str(live.kubeconfig)]
    try:
        assert main([*args, "--output", str(out)]) == 0
    finally:
        live.kube.call(live.kube.api.delete_pdb, "ml", "guard")
    err = capsys.readouterr().err
    assert "warning" not in err
    assert f"{DISRUPTION_BUDGET}: 'guard:0'" in out.read_text()  # in the file itself
    snapshot = load_scenario(out)
    budgets = {p.name: p.annotations.get(DISRUPTION_BUDGET) for p in snapshot.pods}
    in_ml = {p.name for p in DEMO_CLUSTER.pods if p.namespace == "ml"}
    assert {name: value for name, value in budgets.items() if value} == dict.fromkeys(
        in_ml, "guard:0"
    )
    report = plan(snapshot)
    check_report(snapshot, report)
    assert not {name for p in report.plans for name in p.evict} & in_ml


def test_a_forbidden_budget_list_is_a_warning_not_an_exit(
    live: Live, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """RBAC without the policy group: the snapshot is still written, without budgets."""
    live.kube.call(
        live.kube.api.fail_next,
        1,
        status_code=403,
        target="list",
        resource="poddisruptionbudgets",
    )
    out = tmp_path / "snapshot.yaml"
    args = ["snapshot", "--prometheus", live.prometheus.url, "--kubeconfig", str(live.kubeconfig)]
    assert main([*args, "--output", str(out)]) == 0
    err = capsys.readouterr().err
    assert (
        f"xgpu-advisor: warning: Kubernetes API {live.kube.url}: list poddisruptionbudgets: "
        "HTTP 403 Forbidden injected fault; plans and scale-down ignore disruption budgets"
    ) in err
    same_cluster(load_scenario(out), DEMO_CLUSTER)
