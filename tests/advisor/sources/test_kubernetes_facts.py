"""What the plans' disruption cost and --never-evict read from Kubernetes (docs/design.md §8):
a running GPU pod's status.startTime and labels, through the real kubernetes_asyncio client
against the local API double, `assemble`, and the scenario a snapshot writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.core.plan import PlanOptions, plan
from advisor.core.plan.limits import NeverEvict
from advisor.scenario import scenario_from_data, scenario_to_data
from advisor.sources.assemble import assemble
from advisor.sources.kubernetes import read_kubernetes
from tests.advisor.sources.builders import card, cce_pod, node_info, vgpu
from tests.kubeapi.server import KubeApiDouble

pytestmark = pytest.mark.realservices  # the Kubernetes API double

pytest_plugins = ["tests.kubeapi.fixtures"]


def populate(api: KubeApiDouble) -> None:
    """n1 has two 16 GiB cards and n2 one, each half held by an 8 GiB pod; a 12 GiB pod
    waits. ml/old started 9 hours before ml/young; ml/young carries team=search."""
    old = cce_pod("ml/old", memory_mib=8192, node="n1", cards=(0,), owner=("Job", "old"))
    old["status"]["startTime"] = "2024-05-01T01:00:00Z"
    young = cce_pod("ml/young", memory_mib=8192, node="n1", cards=(1,), owner=("Job", "young"))
    young["status"]["startTime"] = "2024-05-01T10:00:00Z"
    young["metadata"]["labels"]["team"] = "search"
    api.add_pod(old)
    api.add_pod(young)
    garbled = cce_pod(
        "ml/garbled",
        memory_mib=8192,
        node="n2",
        cards=(0,),
        annotations={"xgpu.io/do-not-disrupt": "true"},  # the plans leave it where it is
    )
    garbled["status"]["startTime"] = "yesterday"  # not RFC 3339: left out, not an error
    api.add_pod(garbled)
    api.add_pod(cce_pod("ml/wait", memory_mib=12288))


SAMPLES = [
    node_info("n1"),
    *card("n1", 0),
    *card("n1", 1),
    node_info("n2"),
    *card("n2", 0),
    *vgpu("n1", "ml/old", 0, 8192),
    *vgpu("n1", "ml/young", 1, 8192),
    *vgpu("n2", "ml/garbled", 0, 8192),
]


async def test_start_times_and_labels_reach_the_scenario_and_the_plans(
    kube_api: KubeApiDouble, tmp_path: Path
) -> None:
    populate(kube_api)
    state = await read_kubernetes(str(kube_api.write_kubeconfig(tmp_path / "kubeconfig")))
    cluster = assemble(SAMPLES, state).cluster
    pods = {p.name: p for p in cluster.pods}
    assert pods["ml/old"].started == "2024-05-01T01:00:00Z"
    assert pods["ml/young"].started == "2024-05-01T10:00:00Z"
    assert pods["ml/garbled"].started is None
    assert pods["ml/young"].labels["team"] == "search"
    # What `snapshot` writes carries them, and reads back the same.
    data = scenario_to_data(cluster)
    written = {p["name"]: p for p in data["pods"]}
    assert written["ml/young"]["started"] == "2024-05-01T10:00:00Z"
    assert written["ml/young"]["labels"]["team"] == "search"
    again = scenario_from_data(data, "snapshot.yaml")
    assert {p.name: (p.started, dict(p.labels)) for p in again.pods} == {
        p.name: (p.started, dict(p.labels)) for p in cluster.pods
    }
    # Either Job's pod frees room for ml/wait (and goes to n2's 8 GiB);
    # the younger one is cheaper to restart: 4 + 0 h (it is the newest start: "now"),
    # against 4 + 9 h.
    [only] = plan(again).plans
    assert only.evict == ("ml/young",)
    assert only.costs == (("ml/young", 4.0, "Job, ran 0 min"),)
    # Never evicting team=search moves the old one, at its price.
    [kept] = plan(again, PlanOptions(never_evict=(NeverEvict.parse("team=search"),))).plans
    assert kept.costs == (("ml/old", 13.0, "Job, ran 9.0 h"),)
