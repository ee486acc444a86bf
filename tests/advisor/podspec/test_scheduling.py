"""What kube-scheduler reads of pods and nodes besides GPUs, read from the API's JSON.

Effective requests are upstream's own cases: kubernetes/kubernetes (master),
staging/src/k8s.io/component-helpers/resource/helpers_test.go, TestPodResourceRequests,
TestPodRequestsAndLimits and TestPodLevelResourceRequests (PodRequests is what
NodeResourcesFit counts). Node affinity verdicts are cases of
pkg/scheduler/framework/plugins/nodeaffinity/node_affinity_test.go, TestNodeAffinity, read
from JSON here and judged by `nodefilters.node_affinity`.
"""

from __future__ import annotations

from typing import Any

import pytest

from advisor.core.model import Card, Node
from advisor.core.nodefilters import (
    MSG_AFFINITY,
    NO_CONSTRAINTS,
    NodeConstraints,
    Requirement,
    Resources,
    Term,
    Toleration,
    node_affinity,
)
from advisor.podspec.scheduling import REQUIRED_AFFINITY, read_pod_scheduling

Json = dict[str, Any]
GI, MI = 2**30, 2**20


def pod(spec: Json) -> Json:
    return {"metadata": {"name": "p", "namespace": "ml"}, "spec": spec}


def container(name: str = "c", *, sidecar: bool = False, **resources: Json) -> Json:
    c: Json = {"name": name, "resources": resources}
    if sidecar:
        c["restartPolicy"] = "Always"
    return c


def cpu(value: str) -> Json:
    return {"requests": {"cpu": value}}


# -- effective requests (upstream cases) ------------------------------------------------


@pytest.mark.parametrize(
    ("case", "spec", "expected"),
    [
        (
            "nil options, larger init container",
            {"initContainers": [container(**cpu("4"))], "containers": [container(**cpu("1"))]},
            Resources(4000, 0),
        ),
        (
            "nil options, larger containers",
            {
                "initContainers": [container(**cpu("2"))],
                "containers": [container("a", **cpu("2")), container("b", **cpu("3"))],
            },
            Resources(5000, 0),
        ),
        (
            "pod overhead included",
            {
                "overhead": {"cpu": "1", "memory": "1Gi"},
                "initContainers": [container(requests={"cpu": "2"}, limits={"cpu": "2"})],
                "containers": [container("a", **cpu("2")), container("b", **cpu("3"))],
            },
            Resources(6000, GI),
        ),
        (
            "restartable init container",
            {
                "initContainers": [container("restartable-init-1", sidecar=True, **cpu("1"))],
                "containers": [container("container-1", **cpu("1"))],
            },
            Resources(2000, 0),
        ),
        (
            "multiple restartable init containers",  # max(5, 3+2+1 + 1) = 7
            {
                "initContainers": [
                    container("init-1", **cpu("5")),
                    container("restartable-init-1", sidecar=True, **cpu("1")),
                    container("restartable-init-2", sidecar=True, **cpu("2")),
                    container("restartable-init-3", sidecar=True, **cpu("3")),
                ],
                "containers": [container("container-1", **cpu("1"))],
            },
            Resources(7000, 0),
        ),
        (
            "multiple restartable and regular init containers",  # init-2: 5 + 1 + 2 = 8
            {
                "initContainers": [
                    container("init-1", **cpu("5")),
                    container("restartable-init-1", sidecar=True, **cpu("1")),
                    container("restartable-init-2", sidecar=True, **cpu("2")),
                    container("init-2", **cpu("5")),
                    container("restartable-init-3", sidecar=True, **cpu("3")),
                ],
                "containers": [container("container-1", **cpu("1"))],
            },
            Resources(8000, 0),
        ),
        (
            "restartable-init, init and regular",  # init-1: 200 + 10 = 210
            {
                "initContainers": [
                    container("restartable-init-1", sidecar=True, **cpu("10")),
                    container("init-1", **cpu("200")),
                ],
                "containers": [container("container-1", **cpu("100"))],
            },
            Resources(210_000, 0),
        ),
        (
            # TestPodRequestsAndLimits: memory "10" and "5" are bytes
            "req-and-overhead",
            {
                "overhead": {"cpu": "5", "memory": "5"},
                "containers": [container(requests={"cpu": "1", "memory": "10"})],
            },
            Resources(6000, 15),
        ),
        (
            # TestPodLevelResourceRequests
            "pod level memory and container level cpu resources",
            {
                "resources": {"requests": {"memory": "2Mi"}},
                "containers": [container(**cpu("2m"))],
            },
            Resources(2, 2 * MI),
        ),
    ],
)
def test_effective_request_as_upstream_computes_it(
    case: str, spec: Json, expected: Resources
) -> None:
    read = read_pod_scheduling(pod(spec))
    assert read.problems == ()
    assert read.resources == expected, case


def test_a_limit_alone_is_the_request_and_quantities_round_up() -> None:
    """The API server defaults a missing request to the limit; cpu counts in millicores
    rounded up (Quantity.MilliValue), memory in bytes rounded up (Quantity.Value)."""
    spec = {
        "containers": [
            container("a", limits={"cpu": "1", "memory": "1Gi"}),
            container("b", requests={"cpu": "0.0005", "memory": "1.5k"}, limits={"cpu": "3"}),
        ]
    }
    read = read_pod_scheduling(pod(spec))
    assert read.resources == Resources(1000 + 1, GI + 1500)
    assert read.problems == ()


def test_nothing_requested_is_nothing() -> None:
    read = read_pod_scheduling(pod({"containers": [{"name": "c"}]}))
    assert (read.resources, read.constraints, read.problems) == (Resources(), NO_CONSTRAINTS, ())


# -- constraints --------------------------------------------------------------------------


def required(*terms: Json) -> Json:
    return {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}
        }
    }


def test_selector_affinity_and_tolerations() -> None:
    spec = {
        "containers": [container()],
        "nodeSelector": {"pool": "a100", "disk": "ssd"},
        "affinity": required(
            {
                "matchExpressions": [
                    {"key": "zone", "operator": "In", "values": ["z1", "z2"]},
                    {"key": "kernel", "operator": "Gt", "values": ["0204"]},
                    {"key": "spot", "operator": "DoesNotExist"},
                ]
            },
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n7"]}]},
        ),
        "tolerations": [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            {"key": "team", "value": "ml"},  # operator defaults to Equal, every effect
            {"operator": "Exists"},
            {
                "key": "lease",
                "operator": "Equal",
                "value": "x",
                "tolerationSeconds": 30,
                "effect": "NoExecute",
            },
        ],
    }
    read = read_pod_scheduling(pod(spec))
    assert read.problems == ()
    assert read.constraints == NodeConstraints(
        node_selector=(("disk", "ssd"), ("pool", "a100")),
        required=(
            Term(
                expressions=(
                    Requirement("zone", "In", ("z1", "z2")),
                    Requirement("kernel", "Gt", ("0204",)),
                    Requirement("spot", "DoesNotExist"),
                )
            ),
            Term(fields=(Requirement("metadata.name", "In", ("n7",)),)),
        ),
        tolerations=(
            Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"),
            Toleration("team", "Equal", "ml", ""),
            Toleration("", "Exists", "", ""),
            Toleration("lease", "Equal", "x", "NoExecute"),
        ),
    )


def test_affinity_without_required_terms_is_no_constraint() -> None:
    """TestNodeAffinity "Pod with Affinity but nil NodeSelector will schedule onto a node"."""
    spec: Json = {
        "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}}
    }
    assert read_pod_scheduling(pod(spec)).constraints == NO_CONSTRAINTS


def gpu_node(name: str, labels: dict[str, str]) -> Node:
    return Node(name, (Card(0, 16384),), labels=labels)


@pytest.mark.parametrize(
    ("case", "spec", "node", "fits"),
    [
        (
            "node labels are subset",
            {"nodeSelector": {"foo": "bar", "baz": "blah"}},
            gpu_node("node1", {"foo": "bar"}),
            False,
        ),
        (
            "Pod with matchExpressions using Gt operator that matches the existing node",
            {
                "affinity": required(
                    {
                        "matchExpressions": [
                            {"key": "kernel-version", "operator": "Gt", "values": ["0204"]}
                        ]
                    }
                )
            },
            gpu_node("node1", {"kernel-version": "0206"}),
            True,
        ),
        (
            "Pod with empty MatchExpressions is not a valid value will match no objects and "
            "won't schedule onto the node",
            {"affinity": required({"matchExpressions": []})},
            gpu_node("node1", {"foo": "bar"}),
            False,
        ),
        (
            "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels "
            "and will schedule onto the node",
            {
                "affinity": required(
                    {
                        "matchExpressions": [
                            {"key": "foo", "operator": "In", "values": ["bar", "value2"]}
                        ]
                    },
                    {
                        "matchExpressions": [
                            {"key": "diffkey", "operator": "In", "values": ["wrong", "value2"]}
                        ]
                    },
                )
            },
            gpu_node("node1", {"foo": "bar"}),
            True,
        ),
        (
            "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old "
            "thing that we are deprecating) is not satisfied, won't schedule onto the node",
            {
                "nodeSelector": {"foo": "bar"},
                "affinity": required({"matchExpressions": [{"key": "foo", "operator": "Exists"}]}),
            },
            gpu_node("node1", {"foo": "barrrrrr"}),
            False,
        ),
        (
            "Pod with an invalid value in Affinity term won't be scheduled onto the node",
            {
                "affinity": required(
                    {
                        "matchExpressions": [
                            {
                                "key": "foo",
                                "operator": "NotIn",
                                "values": ["invalid value: ___@#$%^"],
                            }
                        ]
                    }
                )
            },
            gpu_node("node1", {"foo": "bar"}),
            False,
        ),
        (
            "Pod with matchFields using In operator that does not match the existing node",
            {
                "affinity": required(
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": ["node1"]}
                        ]
                    }
                )
            },
            gpu_node("node2", {}),
            False,
        ),
        (
            "Pod with two terms: matchFields does not match, but matchExpressions matches",
            {
                "affinity": required(
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": ["node1"]},
                            {"key": "metadata.name", "operator": "In", "values": ["node2"]},
                        ]
                    },
                    {"matchExpressions": [{"key": "foo", "operator": "In", "values": ["bar"]}]},
                )
            },
            gpu_node("node2", {"foo": "bar"}),
            True,
        ),
    ],
)
def test_node_affinity_read_from_json_decides_as_upstream(
    case: str, spec: Json, node: Node, fits: bool
) -> None:
    constraints = read_pod_scheduling(pod(spec)).constraints
    assert node_affinity(node, constraints) == (() if fits else (MSG_AFFINITY,)), case


# -- what cannot be read: a problem naming the field, never an error ---------------------


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        (
            {"containers": [container("main", requests={"cpu": "12x"})]},
            "container main: resources.requests.cpu '12x' is not a quantity",
        ),
        (
            {"initContainers": [container("setup", limits={"memory": "-1Gi"})]},
            "init container setup: resources.limits.memory '-1Gi' is negative",
        ),
        ({"overhead": {"cpu": True}}, "spec.overhead.cpu True is not a quantity"),
        (
            {"containers": [container(requests={"memory": str(2**62)})] * 2},
            "spec: the effective cpu or memory request is out of range",
        ),
        ({"containers": ["main"]}, "spec.containers[0] is not an object"),
        ({"nodeSelector": {"pool": 7}}, "spec.nodeSelector['pool'] 7 is not a string"),
        ({"nodeSelector": {"": "a"}}, "spec.nodeSelector has an empty key"),
        ({"tolerations": {"key": "a"}}, "spec.tolerations is not a list"),
        (
            {"tolerations": [{"key": "a", "operator": "Maybe"}]},
            "spec.tolerations[0].operator 'Maybe' is not one of Equal, Exists",
        ),
        (
            {"tolerations": [{"key": "a", "effect": "Sometimes"}]},
            "spec.tolerations[0].effect 'Sometimes' is not one of NoSchedule, "
            "PreferNoSchedule, NoExecute",
        ),
        (
            {"tolerations": [{"key": "a", "operator": "Exists", "value": "b"}]},
            "spec.tolerations[0].value must be empty when operator is Exists",
        ),
        (
            {"tolerations": [{"value": "b"}]},
            "spec.tolerations[0].operator must be Exists when key is empty",
        ),
        (
            {"affinity": required({"matchExpressions": [{"key": "z", "operator": "Near"}]})},
            f"{REQUIRED_AFFINITY}.nodeSelectorTerms[0].matchExpressions[0].operator 'Near' is "
            "not one of In, NotIn, Exists, DoesNotExist, Gt, Lt",
        ),
        (
            {
                "affinity": required(
                    {"matchExpressions": [{"key": "k", "operator": "Lt", "values": ["1.5"]}]}
                )
            },
            f"{REQUIRED_AFFINITY}.nodeSelectorTerms[0].matchExpressions[0].values '1.5' is "
            "not an integer, as Lt needs",
        ),
        (
            {"affinity": required({"matchExpressions": [{"key": "k", "operator": "In"}]})},
            f"{REQUIRED_AFFINITY}.nodeSelectorTerms[0].matchExpressions[0].values must not be "
            "empty for In",
        ),
        (
            {
                "affinity": required(
                    {"matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["u"]}]}
                )
            },
            f"{REQUIRED_AFFINITY}.nodeSelectorTerms[0].matchFields[0].key 'metadata.uid' is "
            "not metadata.name",
        ),
        (
            {"affinity": required()},
            f"{REQUIRED_AFFINITY}.nodeSelectorTerms is empty: the pod fits no node",
        ),
    ],
)
def test_unreadable_values_become_problems(spec: Json, problem: str) -> None:
    read = read_pod_scheduling(pod(spec))
    assert read.problems == (problem,)


def test_what_cannot_be_read_counts_as_absent() -> None:
    """A bad quantity counts 0 (the rest still adds up); a bad toleration tolerates
    nothing; a term with a bad requirement matches no node, the other terms still do."""
    spec = {
        "containers": [
            container("a", requests={"cpu": "12x", "memory": "1Gi"}),
            container("b", requests={"cpu": "500m"}),
        ],
        "tolerations": [{"key": "a", "effect": "Sometimes"}, {"key": "b", "value": "1"}],
        "affinity": required(
            {"matchExpressions": [{"key": "z", "operator": "Near", "values": ["x"]}]},
            {"matchExpressions": [{"key": "z", "operator": "In", "values": ["x"]}]},
        ),
    }
    read = read_pod_scheduling(pod(spec))
    assert read.resources == Resources(500, GI)
    assert read.constraints.tolerations == (Toleration("b", "Equal", "1"),)
    assert read.constraints.required == (Term((Requirement("z", "In", ("x",)),)),)
    assert len(read.problems) == 3


def test_no_readable_term_is_one_that_matches_no_node() -> None:
    """kube-scheduler skips a term it cannot parse; with none left the pod fits nowhere. An
    empty term says so in a form a scenario file can hold (an empty list it refuses)."""
    bad = {"matchExpressions": [{"key": "k", "operator": "Gt", "values": ["x"]}]}
    for terms in ((), (bad,), (bad, bad)):
        read = read_pod_scheduling(pod({"affinity": required(*terms)}))
        assert read.constraints.required == (Term(),)
        assert len(read.problems) == max(len(terms), 1)
        assert node_affinity(gpu_node("n", {"k": "9"}), read.constraints) == (MSG_AFFINITY,)


@pytest.mark.parametrize("obj", [None, [], "pod", {"spec": []}, {"spec": {"containers": 3}}])
def test_garbage_never_raises(obj: object) -> None:
    read = read_pod_scheduling(obj)
    assert read.resources == Resources()
    assert len(read.problems) == 1
