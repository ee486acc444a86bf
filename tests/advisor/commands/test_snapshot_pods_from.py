"""`xgpu-advisor snapshot --exporters ... --pods-from FILE`: a snapshot of the demo's simulated
exporters (one real `xgpu-exporter --simulate` per node) that holds the scenario's Pending
pods and what Kubernetes would know, as README's first example under "The advisor's
commands" makes it."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from advisor.cli import main
from advisor.core.diagnose import diagnose
from advisor.scenario import load_scenario
from tests.realparts import DEMO, simulated_exporters

pytestmark = pytest.mark.realservices  # a real exporter process per node

DEMO_CLUSTER = load_scenario(DEMO)


@pytest.fixture(scope="module")
def exporters(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    home = tmp_path_factory.mktemp("exporters")
    with ExitStack() as stack:
        nodes = (n.name for n in DEMO_CLUSTER.nodes)
        yield ",".join(e.url for e in simulated_exporters(stack, DEMO, nodes, home))


def test_the_snapshot_holds_the_files_pending_pods_and_what_kubernetes_knows(
    exporters: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "snapshot.yaml"
    code = main(
        ["snapshot", "--exporters", exporters, "--pods-from", str(DEMO), "--output", str(out)]
    )
    err = capsys.readouterr().err
    assert code == 0, err
    # One line: the file stands in for Kubernetes, so no "no Kubernetes source" warning, nor
    # one for mig-node-1's missing strategy label (the file's node says mixed). The demo has
    # 6 nodes with 4 + 4 + 2 + 1 + 2 + 1 = 14 cards, 11 pods placed (4 on cce-node-1, 3 on
    # a100-node-1, 2 on v100-node-1, 1 on a100-80g-node-1, 1 MIG pod on mig-node-1, which
    # the file brings: the exporters serve no series for it) and 10 Pending.
    assert err.count("\n") == 1, err
    assert err.startswith(f"xgpu-advisor: wrote {out} from exporters http://127.0.0.1:"), err
    assert err.endswith(
        f" + pods from {DEMO}: 6 nodes, 14 cards, 11 running pods and 10 Pending pods; "
        f"scheduler cce (auto: from {DEMO})\n"
    ), err
    snapshot = load_scenario(out)
    # The queue in the file's order; owners and requests of running pods from the file (the
    # exporters know only allotments); nodes' allocatable, labels and taints from the file.
    assert snapshot.pending == DEMO_CLUSTER.pending
    owners = {p.name: (p.owner, p.resources) for p in snapshot.running}
    assert owners == {p.name: (p.owner, p.resources) for p in DEMO_CLUSTER.running}
    facts = {n.name: (n.allocatable, n.labels, n.taints) for n in snapshot.nodes}
    assert facts == {n.name: (n.allocatable, n.labels, n.taints) for n in DEMO_CLUSTER.nodes}
    # So the snapshot diagnoses as the demo does (README's demo summary).
    assert (
        diagnose(snapshot).summary
        == diagnose(DEMO_CLUSTER).summary
        == {
            "pending": 10,
            "schedulable": 4,
            "node-resources": 1,
            "fragmentation": 1,
            "capacity": 1,
            "unsatisfiable": 1,
            "invalid": 1,
            "mig-geometry": 1,
        }
    )


def test_without_the_file_the_snapshot_has_no_pending_pods_and_says_why(
    exporters: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "snapshot.yaml"
    assert main(["snapshot", "--exporters", exporters, "--output", str(out)]) == 0
    err = capsys.readouterr().err
    assert "xgpu-advisor: warning: no Kubernetes source: Pending pods are unknown" in err
    assert "10 running pods and 0 Pending pods" in err  # nor the MIG pod: no series for it
    assert load_scenario(out).pending == ()
