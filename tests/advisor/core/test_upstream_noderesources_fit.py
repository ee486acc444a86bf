"""NodeResourcesFit (pod slots, cpu, memory) against kube-scheduler's own tables.

Converted from kubernetes/kubernetes pkg/scheduler/framework/plugins/noderesources/
fit_test.go, file version at commit 24fbb13eafec (see upstream_helpers for why a commit
and not a tag): TestEnoughRequests (node allocatable cpu 10m, memory 20 bytes, 32 pods),
TestNotEnoughRequests (the same with 1 pod) and TestStorageRequests. Every case's id is its
upstream name. Each upstream node holds one pod already: here an other pod with that pod's
request. Each upstream Pending pod is given as its containers, init containers and
overhead; its effective request, computed by hand, is checked against
`nodefilters.effective_request` and then used as the pod's `resources`.

Not converted, and why: the model tracks pod slots, cpu and memory only, so every case
whose verdict turns on another resource is left out: extended resources ("extended
resource ..." and "skip checking ignored extended resource ..." cases, and the
NodeResourcesFitArgs IgnoredResources/IgnoredResourceGroups they set), kubernetes.io and
hugepages resources ("kubernetes.io resource ...", "hugepages resource ..."), ephemeral
storage (TestStorageRequests but its first case), restartable (sidecar) init containers
(TestRestartableInitContainers) and pod-level resources of later versions. Two cases are
converted without their extended resource, which plays no part in their verdict (noted on
each).
"""

from __future__ import annotations

from typing import NamedTuple

import pytest

from advisor.core.diagnose import diagnose
from advisor.core.model import Placement, Pod, Request
from advisor.core.nodefilters import (
    MSG_CPU,
    MSG_MEMORY,
    MSG_TOO_MANY_PODS,
    NO_RESOURCES,
    NOT_KNOWN,
    Allocatable,
    Resources,
    effective_request,
)
from tests.advisor.core.upstream_helpers import (
    BUILDS,
    NODE,
    Case,
    Source,
    assert_diagnosis,
    assert_filters,
    cluster_of,
    filter_reasons,
    res,
)

FILE = "pkg/scheduler/framework/plugins/noderesources/fit_test.go"
COMMIT = "24fbb13eafec665e6f4b64961930774babd8b6d1"
ENOUGH = Source(FILE, "TestEnoughRequests", COMMIT)
NOT_ENOUGH = Source(FILE, "TestNotEnoughRequests", COMMIT)
STORAGE = Source(FILE, "TestStorageRequests", COMMIT)
NODE_32 = Allocatable(cpu_milli=10, memory_bytes=20, pods=32)
NODE_1 = Allocatable(cpu_milli=10, memory_bytes=20, pods=1)
CPU, MEM, PODS = (MSG_CPU,), (MSG_MEMORY,), (MSG_TOO_MANY_PODS,)


class Fit(NamedTuple):
    source: Source
    case: Case
    containers: tuple[Resources, ...]
    inits: tuple[Resources, ...] = ()
    overhead: Resources = NO_RESOURCES


def fit(
    source: Source,
    name: str,
    want: tuple[str, ...],
    used: Resources,
    containers: tuple[Resources, ...],
    effective: Resources,
    inits: tuple[Resources, ...] = (),
    overhead: Resources = NO_RESOURCES,
) -> Fit:
    alloc = NODE_1 if source is NOT_ENOUGH else NODE_32
    case = Case(name, want, allocatable=alloc, others=(used,), resources=effective)
    return Fit(source, case, containers, inits, overhead)


E, N = ENOUGH, NOT_ENOUGH
UPSTREAM = [
    fit(E, "no resources requested always fits", (), res(10, 20), (), res()),
    fit(E, "too many resources fails", CPU + MEM, res(10, 20), (res(1, 1),), res(1, 1)),
    fit(
        E,
        "too many resources fails due to init container cpu",
        CPU,
        res(8, 19),
        (res(1, 1),),
        res(3, 1),
        inits=(res(3, 1),),
    ),
    fit(
        E,
        "too many resources fails due to highest init container cpu",
        CPU,
        res(8, 19),
        (res(1, 1),),
        res(3, 1),
        inits=(res(3, 1), res(2, 1)),
    ),
    fit(
        E,
        "too many resources fails due to init container memory",
        MEM,
        res(9, 19),
        (res(1, 1),),
        res(1, 3),
        inits=(res(1, 3),),
    ),
    fit(
        E,
        "too many resources fails due to highest init container memory",
        MEM,
        res(9, 19),
        (res(1, 1),),
        res(1, 3),
        inits=(res(1, 3), res(1, 2)),
    ),
    fit(
        E,
        "init container fits because it's the max, not sum, of containers and init containers",
        (),
        res(9, 19),
        (res(1, 1),),
        res(1, 1),
        inits=(res(1, 1),),
    ),
    fit(
        E,
        "multiple init containers fit because it's the max, not sum, of containers and init "
        "containers",
        (),
        res(9, 19),
        (res(1, 1),),
        res(1, 1),
        inits=(res(1, 1), res(1, 1)),
    ),
    fit(E, "both resources fit", (), res(5, 5), (res(1, 1),), res(1, 1)),
    fit(E, "one resource memory fits", CPU, res(9, 5), (res(2, 1),), res(2, 1)),
    fit(E, "one resource cpu fits", MEM, res(5, 19), (res(1, 2),), res(1, 2)),
    fit(E, "equal edge case", (), res(5, 19), (res(5, 1),), res(5, 1)),
    fit(
        E,
        "equal edge case for init container",
        (),
        res(5, 19),
        (res(4, 1),),
        res(5, 1),
        inits=(res(5, 1),),
    ),
    # Overhead "3m" cpu and "13" bytes of memory.
    fit(
        E,
        "resources + pod overhead fits",
        (),
        res(5, 5),
        (res(1, 1),),
        res(4, 14),
        overhead=res(3, 13),
    ),
    fit(
        E,
        "requests + overhead does not fit for memory",
        MEM,
        res(5, 5),
        (res(1, 1),),
        res(2, 16),
        overhead=res(1, 15),
    ),
    # Without its extended resource (requested at 0, and 6 of 5 used on the node).
    fit(
        E,
        "skip checking extended resource request with quantity zero via resource groups",
        (),
        res(0, 0),
        (res(1, 1),),
        res(1, 1),
    ),
    # Without its extended resource (1 requested, 1 of 5 used): the pod asks 0 cpu and 0
    # memory of a node whose cpu and memory are both overcommitted (20m of 10m, 30 of 20).
    fit(E, "skip checking resource request with quantity zero", (), res(20, 30), (res(),), res()),
    fit(
        N,
        "even without specified resources, predicate fails when there's no space for "
        "additional pod",
        PODS,
        res(10, 20),
        (),
        res(),
    ),
    fit(
        N,
        "even if both resources fit, predicate fails when there's no space for additional pod",
        PODS,
        res(5, 5),
        (res(1, 1),),
        res(1, 1),
    ),
    fit(
        N,
        "even for equal edge case, predicate fails when there's no space for additional pod",
        PODS,
        res(5, 19),
        (res(5, 1),),
        res(5, 1),
    ),
    fit(
        N,
        "even for equal edge case, predicate fails when there's no space for additional pod "
        "due to init container",
        PODS,
        res(5, 19),
        (res(5, 1),),
        res(5, 1),
        inits=(res(5, 1),),
    ),
    fit(STORAGE, "empty storage requested, and pod fits", (), res(2, 10), (res(1, 1),), res(1, 1)),
]
IDS = [f"{f.source.test}: {f.case.name}" for f in UPSTREAM]


@pytest.mark.parametrize("f", UPSTREAM, ids=IDS)
def test_effective_request_is_computed_as_upstream(f: Fit) -> None:
    """max(sum of containers, each init container) + overhead, per resource."""
    got = effective_request(f.containers, f.inits, f.overhead)
    assert got == f.case.resources, f.source.cite(f.case.name)


@pytest.mark.parametrize("f", UPSTREAM, ids=IDS)
def test_filter_gives_the_upstream_verdict(f: Fit) -> None:
    assert_filters(f.case, f.source)


@pytest.mark.parametrize("how", BUILDS)
@pytest.mark.parametrize("f", UPSTREAM, ids=IDS)
def test_diagnosis_gives_the_upstream_verdict(f: Fit, how: str) -> None:
    assert_diagnosis(f.case, how, f.source)


# -- cases upstream leaves out (computed by hand from fitsRequest: pod slots always; cpu and
# memory only when the pod requests more than 0 of them) --------------------------------------

HAND = [
    # cpu requested at 0 is not checked although the node's cpu is overcommitted (20m of
    # 10m); memory 5 + 1 <= 20 fits. (kube-scheduler before the "> 0" guard said
    # Insufficient cpu here.)
    Case(
        "cpu at 0 on an overcommitted node",
        allocatable=NODE_32,
        others=(res(20, 5),),
        resources=res(0, 1),
    ),
    # Likewise memory at 0 with memory overcommitted (30 of 20); cpu 5 + 1 <= 10.
    Case(
        "memory at 0 on an overcommitted node",
        allocatable=NODE_32,
        others=(res(5, 30),),
        resources=res(1, 0),
    ),
    # Slots, cpu and memory all short: every reason, in fitsRequest's order.
    Case(
        "all three short",
        PODS + CPU + MEM,
        allocatable=NODE_1,
        others=(res(10, 20),),
        resources=res(1, 1),
    ),
    # Asking more than the node's allocatable: no eviction could make room.
    Case("above allocatable", CPU, allocatable=NODE_32, resources=res(11, 1), never=True),
    # An allocatable that is not known never limits.
    Case(
        "allocatable not known",
        allocatable=NOT_KNOWN,
        others=(res(10**9, 10**15),),
        resources=res(10**6, 10**12),
    ),
]


@pytest.mark.parametrize("how", BUILDS)
@pytest.mark.parametrize("case", HAND, ids=[c.name for c in HAND])
def test_hand_computed_fit_cases(case: Case, how: str) -> None:
    assert_filters(case)
    assert_diagnosis(case, how)


def test_all_three_reasons_read_like_a_fit_error() -> None:
    # sortReasonsHistogram sorts "count reason" strings: "1 Insufficient cpu" < "1
    # Insufficient memory" < "1 Too many pods".
    verdict = assert_diagnosis(HAND[2], "dataclasses")
    assert verdict.node_summary == (
        "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 1 Too many pods."
    )


def test_a_running_gpu_pod_takes_a_slot_and_its_cpu() -> None:
    # Allocatable 10m cpu and 2 pods; a GPU pod using 6m runs there: the Pending pod's 5m
    # no longer fits (6 + 5 > 10), its slot still does (1 + 1 <= 2).
    case = Case("hand", CPU, allocatable=Allocatable(10, 20, 2), resources=res(5, 0))
    gpu = Pod("default/gpu-0", Request(1, 1024), Placement(NODE, (0,)), resources=res(6, 0))
    cluster = cluster_of(case, running=(gpu,))
    assert filter_reasons(cluster) == ((), CPU)
    (verdict,) = diagnose(cluster).pods
    assert (verdict.cause, verdict.reason_counts) == ("node-resources", ((MSG_CPU, 1),))


@pytest.mark.parametrize(
    ("containers", "inits", "overhead", "effective"),
    [
        # computePodResourceRequest's own doc example: containers 2+1 cpu, 1G+1G memory;
        # init containers (2 cpu, 1G) and (2 cpu, 3G): cpu 3, memory 3G.
        (
            (res(2000, 10**9), res(1000, 10**9)),
            (res(2000, 10**9), res(2000, 3 * 10**9)),
            res(),
            res(3000, 3 * 10**9),
        ),
        # Overhead is added after the max: (max(3, 4) + 1, max(2, 1) + 2).
        ((res(1, 1), res(2, 1)), (res(4, 1),), res(1, 2), res(5, 4)),
        # No containers at all (a bare pod): only the overhead.
        ((), (), res(7, 9), res(7, 9)),
        # The max is per resource: cpu from an init container, memory from the sum.
        ((res(1, 5), res(1, 5)), (res(8, 1),), res(), res(8, 10)),
    ],
)
def test_effective_request_hand_cases(
    containers: tuple[Resources, ...],
    inits: tuple[Resources, ...],
    overhead: Resources,
    effective: Resources,
) -> None:
    assert effective_request(containers, inits, overhead) == effective
