"""What kube-scheduler reads of a Node object, read from the API's JSON: allocatable,
labels, taints, the cordon; what cannot be read is a problem, and counts as absent."""

from __future__ import annotations

from typing import Any

from advisor.core.nodefilters import Allocatable, Taint
from advisor.podspec.node import read_node_scheduling

Json = dict[str, Any]
GI = 2**30


def node_json(**parts: Json) -> Json:
    return {
        "metadata": {"name": "n1", **parts.get("metadata", {})},
        **{k: v for k, v in parts.items() if k != "metadata"},
    }


def test_node_allocatable_labels_taints_and_cordon() -> None:
    obj = node_json(
        metadata={"labels": {"pool": "a100", "topology.kubernetes.io/zone": "z1"}},
        spec={
            "unschedulable": True,
            "taints": [
                {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"},
                {
                    "key": "node.kubernetes.io/unschedulable",
                    "effect": "NoSchedule",
                    "timeAdded": "2024-05-01T10:00:00Z",
                },
            ],
        },
        status={
            "allocatable": {
                "cpu": "63500m",
                "memory": "491520Mi",
                "pods": "110",
                "ephemeral-storage": "100Gi",
                "nvidia.com/gpu": "8",
            }
        },
    )
    read = read_node_scheduling(obj)
    assert read.problems == ()
    assert read.allocatable == Allocatable(cpu_milli=63500, memory_bytes=480 * GI, pods=110)
    assert dict(read.labels) == {"pool": "a100", "topology.kubernetes.io/zone": "z1"}
    assert read.taints == (
        Taint("nvidia.com/gpu", "NoSchedule", "present"),
        Taint("node.kubernetes.io/unschedulable", "NoSchedule"),
    )
    assert read.unschedulable is True


def test_a_node_without_the_fields_limits_nothing() -> None:
    read = read_node_scheduling(node_json(status={"allocatable": {"nvidia.com/gpu": "8"}}))
    assert read.allocatable == Allocatable()
    assert (read.taints, read.unschedulable, read.problems) == ((), False, ())


def test_unreadable_node_values_become_problems_and_count_as_absent() -> None:
    obj = node_json(
        metadata={"labels": {"pool": 1}},
        spec={
            "unschedulable": "yes",
            "taints": [
                {"key": "a"},
                {"key": "b", "effect": "Sometimes"},
                {"key": "", "effect": "NoSchedule"},
                {"key": "c", "effect": "NoExecute"},
            ],
        },
        status={"allocatable": {"cpu": "12x", "memory": "1Gi", "pods": "lots"}},
    )
    read = read_node_scheduling(obj)
    assert read.problems == (
        "spec.unschedulable 'yes' is not true or false",
        "spec.taints[0].effect is missing",
        "spec.taints[1].effect 'Sometimes' is not one of NoSchedule, PreferNoSchedule, NoExecute",
        "spec.taints[2].key is empty",
        "status.allocatable.cpu '12x' is not a quantity",
        "status.allocatable.pods 'lots' is not a quantity",
        "metadata.labels['pool'] 1 is not a string",
    )
    assert read.allocatable == Allocatable(cpu_milli=None, memory_bytes=GI, pods=None)
    assert dict(read.labels) == {}
    assert read.taints == (Taint("c", "NoExecute"),)
    assert read.unschedulable is False
