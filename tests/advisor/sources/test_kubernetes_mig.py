"""Live MIG through the Kubernetes API double (docs/design.md §13): pods asking
`nvidia.com/mig-<profile>`, the node's `nvidia.com/mig.strategy` label, and the exporter's
instance series, assembled into the cluster every command judges."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.core.gang import judge
from advisor.core.model import Request
from advisor.sources.assemble import assemble
from advisor.sources.kubernetes import read_kubernetes
from tests.advisor.sources.builders import node_info
from tests.advisor.sources.test_assemble import loads
from tests.advisor.sources.test_assemble_mig import _mig_card, _mig_pod
from tests.kubeapi import objects
from tests.kubeapi.server import KubeApiDouble

pytestmark = pytest.mark.realservices  # the Kubernetes API double

pytest_plugins = ["tests.kubeapi.fixtures"]


async def test_mig_pods_and_the_strategy_label_are_read(
    kube_api: KubeApiDouble, tmp_path: Path
) -> None:
    kube_api.add_node(
        objects.node(
            "m",
            labels={"nvidia.com/mig.strategy": "mixed"},
            allocatable={"nvidia.com/mig-1g.5gb": 2, "nvidia.com/mig-3g.20gb": 1},
        )
    )
    kube_api.add_pod(_mig_pod("ml/a", "1g.5gb", node="m"))
    kube_api.add_pod(_mig_pod("ml/p", "3g.20gb"))
    kube_api.add_pod(_mig_pod("ml/q", "3g.20gb"))
    state = await read_kubernetes(str(kube_api.write_kubeconfig(tmp_path / "kubeconfig")))
    pods = {p.key: p for p in state.pods}
    assert pods["ml/p"].request == Request(gpus=1, memory_mib=0, mig_profile="3g.20gb")
    assert pods["ml/a"].node == "m"
    samples = [node_info("m"), *_mig_card("m", 0, ("1g.5gb", 0), ("1g.5gb", 1), ("3g.20gb", 4))]
    result = assemble(samples, state)
    (node,) = result.cluster.nodes
    assert node.mig_strategy == "mixed"
    loads(result.cluster)
    verdicts = {d.pod.name: d for d in judge(result.cluster).pods}
    assert verdicts["ml/p"].cause == "schedulable"
    # the one 3g.20gb is ml/p's now; slices 0..3 hold one 1g.5gb of ml/a: no other 3g fits
    assert verdicts["ml/q"].cause == "capacity"
    assert verdicts["ml/q"].reason_counts == (("Insufficient nvidia.com/mig-3g.20gb", 1),)
