"""`CardState`'s node request sums where pods ask for exabytes: an API server accepts each
such pod (its own request fits in int64), so a node's sum may not, and it must never wrap
around into room."""

from __future__ import annotations

from typing import Any

from advisor.core.diagnose import diagnose
from advisor.core.state import FIXED, REQUESTED_MAX, CardState, Shape
from advisor.scenario import scenario_from_data

INT64_MAX = 2**63 - 1


def cluster_with(residents: list[int], allocatable_memory: int, pod_memory: int) -> Any:
    """One node of one 16 GiB card whose resident pods request `residents` bytes, and one
    Pending GPU pod requesting `pod_memory` bytes."""
    return scenario_from_data(
        {
            "policy": {"node": "binpack", "card": "binpack"},
            "nodes": [
                {
                    "name": "n1",
                    "cards": [{"index": 0, "memory_mib": 16384}],
                    "allocatable": {"memory": str(allocatable_memory), "pods": 110},
                    "resident_pods": [
                        {"name": f"kube-system/r{i}", "resources": {"memory": str(size)}}
                        for i, size in enumerate(residents)
                    ],
                }
            ],
            "pods": [
                {
                    "name": "ml/p",
                    "request": {"gpus": 1, "memory_mib": 1024},
                    "resources": {"memory": str(pod_memory)},
                }
            ],
        },
        "test.yaml",
    )


def cause(c: Any) -> str:
    return str(diagnose(c).pods[0].cause)


def test_residents_past_int64_leave_no_room_for_one_byte() -> None:
    # 2 x 2^62 bytes is 2^63: one past int64. A wrapped sum would be negative and the pod
    # would fit; the exact sum is far above the node's 2^62 allocatable.
    c = cluster_with([2**62, 2**62], 2**62, 1)
    assert cause(c) == "node-resources"
    state = CardState(c)
    assert state.node_requested(0) == [2, 0, 2**63]
    assert int(state.requested[0, 2]) == REQUESTED_MAX


def test_a_pod_of_int64_max_bytes_does_not_wrap_the_room_check() -> None:
    # Allocatable int64 max, one resident byte: requested + want would wrap; room left
    # (int64 max - 1) is one byte short of the pod.
    assert cause(cluster_with([1], INT64_MAX, INT64_MAX)) == "node-resources"
    assert cause(cluster_with([], INT64_MAX, INT64_MAX)) == "schedulable"


def test_sums_past_the_max_come_back_exactly_when_pods_leave() -> None:
    c = cluster_with([2**62, 2**62, 5], 2**62, 1)
    state = CardState(c)
    shape = Shape.of_pod(c.pods[0])
    assert state.node_requested(0)[2] == 2**63 + 5
    assert state.resource_shortfalls(shape)[0].tolist() == [False, False, True]
    state.add_requested(0, (1, 0, 2**62), -1)
    assert state.node_requested(0) == [2, 0, 2**62 + 5]
    assert state.resource_shortfalls(shape)[0].tolist() == [False, False, True]
    state.add_requested(0, (1, 0, 2**62), -1)
    assert state.node_requested(0) == [1, 0, 5]
    assert state.excess == {}
    # the sum is small again: the pod fits (5 + 1 bytes of 2^62), on the copy too
    assert not state.resource_shortfalls(shape).any()
    assert state.copy().resources_fit(0, shape)


def test_a_copy_shares_only_the_arrays_no_binding_changes() -> None:
    """`copy` shares the FIXED arrays (read-only, so no copy can change them under another)
    and copies the occupancy: binding on a copy leaves the original as it was."""
    state = CardState(cluster_with([], 2**40, 1))
    clone = state.copy()
    for name in FIXED:
        assert getattr(clone, name) is getattr(state, name)
        assert not getattr(state, name).flags.writeable
    clone.apply([0], Shape(1, 1024, 0, 1))
    assert (int(clone.free_memory[0]), int(state.free_memory[0])) == (15360, 16384)
    assert (int(clone.vgpus[0]), int(state.vgpus[0])) == (1, 0)
    assert int(clone.requested[0, 0]) == int(state.requested[0, 0]) + 1
    clone.healthy[0] = False  # scale-down's removal writes the copy's own
    assert bool(state.healthy[0])
