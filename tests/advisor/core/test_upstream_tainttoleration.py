"""TaintToleration against kube-scheduler's own table.

Converted from kubernetes/kubernetes pkg/scheduler/framework/plugins/tainttoleration/
taint_toleration_test.go, TestTaintTolerationFilter, file version at commit cb6ff2d8ce35
(see upstream_helpers for why a commit and not a tag). Every case's id is its upstream
name. The reason names the first untolerated NoSchedule/NoExecute taint:
"node(s) had untolerated taint {key: value}".

All nine cases of that version are converted. Not converted, and why:
* Later versions add cases for the Gt/Lt toleration operators (feature gate
  TaintTolerationComparisonOperators, alpha): the model knows Equal and Exists only, as the
  API server does without that gate. Those versions also print the reason without the
  taint ("node(s) had untolerated taint(s)", kubernetes/kubernetes#134740).
* TestTaintTolerationScore: PreferNoSchedule only scores, never filters.
"""

from __future__ import annotations

import pytest

from advisor.core.nodefilters import Taint, Toleration
from tests.advisor.core.upstream_helpers import (
    BUILDS,
    Case,
    Source,
    assert_diagnosis,
    assert_filters,
    tolerating,
)

SOURCE = Source(
    "pkg/scheduler/framework/plugins/tainttoleration/taint_toleration_test.go",
    "TestTaintTolerationFilter",
    "cb6ff2d8ce3595f88570f82c7d0e6d98910afd3c",
)
DEDICATED_USER1 = Taint("dedicated", "NoSchedule", "user1")
FOO_BAR = Taint("foo", "NoSchedule", "bar")


def untolerated(key: str, value: str) -> tuple[str]:
    return (f"node(s) had untolerated taint {{{key}: {value}}}",)


UPSTREAM = [
    Case(
        "A pod having no tolerations can't be scheduled onto a node with nonempty taints",
        untolerated("dedicated", "user1"),
        taints=(DEDICATED_USER1,),
    ),
    Case(
        "A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule",
        taints=(DEDICATED_USER1,),
        constraints=tolerating(Toleration("dedicated", "Equal", "user1", "NoSchedule")),
    ),
    Case(
        "A pod which can't be scheduled on a dedicated node assigned to user2 with effect "
        "NoSchedule",
        untolerated("dedicated", "user1"),
        taints=(DEDICATED_USER1,),
        constraints=tolerating(Toleration("dedicated", "Equal", "user2", "NoSchedule")),
    ),
    Case(
        "A pod can be scheduled onto the node, with a toleration uses operator Exists that "
        "tolerates the taints on the node",
        taints=(FOO_BAR,),
        constraints=tolerating(Toleration("foo", "Exists", "", "NoSchedule")),
    ),
    Case(
        "A pod has multiple tolerations, node has multiple taints, all the taints are "
        "tolerated, pod can be scheduled onto the node",
        taints=(Taint("dedicated", "NoSchedule", "user2"), FOO_BAR),
        constraints=tolerating(
            Toleration("dedicated", "Equal", "user2", "NoSchedule"),
            Toleration("foo", "Exists", "", "NoSchedule"),
        ),
    ),
    Case(
        "A pod has a toleration that keys and values match the taint on the node, but "
        "(non-empty) effect doesn't match, can't be scheduled onto the node",
        untolerated("foo", "bar"),
        taints=(FOO_BAR,),
        constraints=tolerating(Toleration("foo", "Equal", "bar", "PreferNoSchedule")),
    ),
    Case(
        "The pod has a toleration that keys and values match the taint on the node, the "
        "effect of toleration is empty, and the effect of taint is NoSchedule. Pod can be "
        "scheduled onto the node",
        taints=(FOO_BAR,),
        constraints=tolerating(Toleration("foo", "Equal", "bar")),
    ),
    Case(
        "The pod has a toleration that key and value don't match the taint on the node, but "
        "the effect of taint on node is PreferNoSchedule. Pod can be scheduled onto the node",
        taints=(Taint("dedicated", "PreferNoSchedule", "user1"),),
        constraints=tolerating(Toleration("dedicated", "Equal", "user2", "NoSchedule")),
    ),
    Case(
        "The pod has no toleration, but the effect of taint on node is PreferNoSchedule. Pod "
        "can be scheduled onto the node",
        taints=(Taint("dedicated", "PreferNoSchedule", "user1"),),
    ),
]
IDS = [c.name for c in UPSTREAM]


@pytest.mark.parametrize("case", UPSTREAM, ids=IDS)
def test_filter_gives_the_upstream_verdict(case: Case) -> None:
    assert_filters(case, SOURCE)


@pytest.mark.parametrize("how", BUILDS)
@pytest.mark.parametrize("case", UPSTREAM, ids=IDS)
def test_diagnosis_gives_the_upstream_verdict(case: Case, how: str) -> None:
    assert_diagnosis(case, how, SOURCE)


# -- cases upstream leaves out (computed by hand from core/v1 Toleration.ToleratesTaint and
# TaintToleration.Filter, which checks NoSchedule and NoExecute taints in node order) -------

EVERY_EFFECT = (
    Taint("nvidia.com/gpu", "NoSchedule", "present"),
    Taint("node.kubernetes.io/not-ready", "NoExecute"),
    Taint("team", "PreferNoSchedule", "ml"),
)

HAND = [
    # An empty key with Exists tolerates every taint, whatever its key, value or effect.
    Case("empty-key Exists", taints=EVERY_EFFECT, constraints=tolerating(Toleration("", "Exists"))),
    # PreferNoSchedule taints only score: with no toleration at all, the node still fits.
    Case(
        "PreferNoSchedule never filters",
        taints=(Taint("a", "PreferNoSchedule", "1"), Taint("b", "PreferNoSchedule")),
    ),
    # An empty effect matches every effect, NoExecute included.
    Case(
        "empty effect matches NoExecute",
        taints=(Taint("gpu", "NoExecute", "x"),),
        constraints=tolerating(Toleration("gpu", "Exists")),
    ),
    # NoExecute taints filter too, and a NoSchedule toleration does not cover them.
    Case(
        "NoSchedule toleration leaves a NoExecute taint untolerated",
        untolerated("gpu", "x"),
        taints=(Taint("gpu", "NoExecute", "x"),),
        constraints=tolerating(Toleration("gpu", "Exists", "", "NoSchedule")),
    ),
    # The reason names the first untolerated taint in the node's order.
    Case(
        "first untolerated taint is named",
        untolerated("b", "x"),
        taints=(Taint("a", "NoSchedule"), Taint("b", "NoSchedule", "x"), Taint("c", "NoExecute")),
        constraints=tolerating(Toleration("a", "Exists")),
    ),
    # An empty value prints as "{key: }": kube-scheduler v1.26.1's own words quoted in
    # kubernetes/kubernetes#116133 ("1 node(s) had untolerated taint
    # {node-role.kubernetes.io/control-plane: }").
    Case(
        "empty taint value",
        untolerated("node-role.kubernetes.io/control-plane", ""),
        taints=(Taint("node-role.kubernetes.io/control-plane", "NoSchedule"),),
    ),
    # Equal compares values exactly; an empty toleration value matches an empty taint value.
    Case(
        "Equal with empty values",
        taints=(Taint("k", "NoSchedule"),),
        constraints=tolerating(Toleration("k", "Equal", "", "NoSchedule")),
    ),
]


@pytest.mark.parametrize("how", BUILDS)
@pytest.mark.parametrize("case", HAND, ids=[c.name for c in HAND])
def test_hand_computed_taint_cases(case: Case, how: str) -> None:
    assert_filters(case)
    assert_diagnosis(case, how)


@pytest.mark.parametrize(
    ("toleration", "taint", "tolerated"),
    [
        # Exists ignores the value (the API server refuses a value with Exists).
        (Toleration("foo", "Exists", "zzz"), Taint("foo", "NoSchedule", "bar"), True),
        # An empty key skips the key check, so Equal then compares values alone: the
        # helper tolerates any taint with that value (the API server refuses this form).
        (Toleration("", "Equal", "v"), Taint("any", "NoExecute", "v"), True),
        (Toleration("", "Equal", "v"), Taint("any", "NoExecute", "w"), False),
        (Toleration("foo", "Equal", "bar", "NoExecute"), Taint("foo", "NoSchedule", "bar"), False),
        (Toleration("foo", "Equal", "bar"), Taint("fooo", "NoSchedule", "bar"), False),
    ],
)
def test_tolerates_taint_edge_rules(toleration: Toleration, taint: Taint, tolerated: bool) -> None:
    assert toleration.tolerates(taint) is tolerated
