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
    # the allocatable's counts agree with the exporter's instances: nothing said of them
    assert not [w for w in result.warnings if "allocatable" in w]
    loads(result.cluster)
    verdicts = {d.pod.name: d for d in judge(result.cluster).pods}
    assert verdicts["ml/p"].cause == "schedulable"
    # the one 3g.20gb is ml/p's now; slices 0..3 hold one 1g.5gb of ml/a: no other 3g fits
    assert verdicts["ml/q"].cause == "capacity"
    assert verdicts["ml/q"].reason_counts == (("Insufficient nvidia.com/mig-3g.20gb", 1),)


async def test_allocatable_mig_counts_are_held_to_the_exporters_instances(
    kube_api: KubeApiDouble, tmp_path: Path
) -> None:
    for name, allocatable in (
        ("m", {"nvidia.com/mig-1g.5gb": 3, "nvidia.com/mig-3g.20gb": 1}),
        ("n", {"nvidia.com/mig-2g.10gb": 3}),
        ("o", {"nvidia.com/mig-1g.5gb": 0}),  # named, none advertised: the exporter's differ
    ):
        labels = {"nvidia.com/mig.strategy": "mixed"}
        kube_api.add_node(objects.node(name, labels=labels, allocatable=allocatable))
    state = await read_kubernetes(str(kube_api.write_kubeconfig(tmp_path / "kubeconfig")))
    assert dict(state.nodes[0].mig_allocatable) == {"1g.5gb": 3, "3g.20gb": 1}
    samples = [
        node_info("m"),
        *_mig_card("m", 0, ("1g.5gb", 0), ("1g.5gb", 1), ("3g.20gb", 4)),
        node_info("n"),
        *_mig_card("n", 0, mode=0.0),  # the exporter sees MIG off there
        node_info("o"),
        *_mig_card("o", 0, ("7g.40gb", 0)),
    ]
    result = assemble(samples, state)
    said = [w for w in result.warnings if "allocatable" in w]
    assert said == [
        "node m: allocatable nvidia.com/mig-1g.5gb is 3, the exporter lists 2 such instances; "
        "the exporter's are modelled",
        "node n: allocatable advertises nvidia.com/mig-2g.10gb: 3, but the exporter lists no "
        "MIG instance there (MIG mode unseen, or its instances unlisted); no MIG pod is placed "
        "there",
        "node o: allocatable nvidia.com/mig-7g.40gb is 0, the exporter lists 1 such instance; "
        "the exporter's are modelled",
    ]
    # the model keeps the exporter's instances: n's card stays a vGPU card
    cards = {n.name: n.cards[0].mig for n in result.cluster.nodes}
    assert cards["n"] is None
    assert cards["m"] is not None
    assert len(cards["m"]) == 3


async def test_an_unreadable_allocatable_mig_count_is_said_and_left_out(
    kube_api: KubeApiDouble, tmp_path: Path
) -> None:
    allocatable: dict[str, str | int] = {
        "nvidia.com/mig-1g.5gb": "two",
        "nvidia.com/mig-3g.20gb": 1,
    }
    labels = {"nvidia.com/mig.strategy": "mixed"}
    kube_api.add_node(objects.node("m", labels=labels, allocatable=allocatable))
    state = await read_kubernetes(str(kube_api.write_kubeconfig(tmp_path / "kubeconfig")))
    (node,) = state.nodes
    assert dict(node.mig_allocatable) == {"3g.20gb": 1}
    assert node.problems == (
        "Kubernetes: node m: allocatable nvidia.com/mig-1g.5gb: 'two' is not an integer; left out",
    )
