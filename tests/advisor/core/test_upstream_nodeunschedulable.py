"""NodeUnschedulable (cordons) against kube-scheduler's own table.

Converted from kubernetes/kubernetes pkg/scheduler/framework/plugins/nodeunschedulable/
node_unschedulable_test.go, TestNodeUnschedulable, file version at commit b574b11f6b28
(see upstream_helpers for why a commit and not a tag). Every case's id is its upstream
name. The reason is ErrReasonUnschedulable, "node(s) were unschedulable". All three cases
are converted; the file's other test (TestIsSchedulableAfterNodeChange) is about requeueing
hints, which the model has no use for.
"""

from __future__ import annotations

import pytest

from advisor.core.nodefilters import (
    MSG_UNSCHEDULABLE,
    UNSCHEDULABLE_TAINT,
    Taint,
    Toleration,
)
from tests.advisor.core.upstream_helpers import (
    BUILDS,
    Case,
    Source,
    assert_diagnosis,
    assert_filters,
    tolerating,
)

SOURCE = Source(
    "pkg/scheduler/framework/plugins/nodeunschedulable/node_unschedulable_test.go",
    "TestNodeUnschedulable",
    "b574b11f6b28f06e17333bb110e9374db3259bad",
)
NO = (MSG_UNSCHEDULABLE,)

UPSTREAM = [
    Case(
        "Does not schedule pod to unschedulable node (node.Spec.Unschedulable==true)",
        NO,
        cordoned=True,
    ),
    Case("Schedule pod to normal node", cordoned=False),
    # The upstream toleration has Key and Effect only: operator "" is Equal, value "".
    Case(
        "Schedule pod with toleration to unschedulable node (node.Spec.Unschedulable==true)",
        cordoned=True,
        constraints=tolerating(Toleration(UNSCHEDULABLE_TAINT, "Equal", "", "NoSchedule")),
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


# -- cases upstream leaves out (computed by hand: NodeUnschedulable asks whether the pod
# tolerates the taint {node.kubernetes.io/unschedulable, NoSchedule, value ""}, then the
# filters run in profile order and the first that rejects names the node's reason) --------

HAND = [
    # Any toleration that covers that taint passes a cordon: Exists on its key ...
    Case(
        "Exists on the cordon key",
        cordoned=True,
        constraints=tolerating(Toleration(UNSCHEDULABLE_TAINT, "Exists")),
    ),
    # ... or an empty-key Exists, which tolerates everything.
    Case("empty-key Exists", cordoned=True, constraints=tolerating(Toleration("", "Exists"))),
    # A NoExecute toleration does not cover a NoSchedule taint.
    Case(
        "wrong effect",
        NO,
        cordoned=True,
        constraints=tolerating(Toleration(UNSCHEDULABLE_TAINT, "Exists", "", "NoExecute")),
    ),
    # Equal with a value does not match the taint's empty value.
    Case(
        "wrong value",
        NO,
        cordoned=True,
        constraints=tolerating(Toleration(UNSCHEDULABLE_TAINT, "Equal", "true", "NoSchedule")),
    ),
    # NodeUnschedulable runs before TaintToleration: a cordoned, tainted node is reported
    # as unschedulable, not as tainted.
    Case("cordon reported first", NO, cordoned=True, taints=(Taint("gpu", "NoSchedule"),)),
    # Passing the cordon does not pass the taints.
    Case(
        "cordon tolerated, taint not",
        ("node(s) had untolerated taint {gpu: }",),
        cordoned=True,
        taints=(Taint("gpu", "NoSchedule"),),
        constraints=tolerating(Toleration(UNSCHEDULABLE_TAINT, "Exists")),
    ),
]


@pytest.mark.parametrize("how", BUILDS)
@pytest.mark.parametrize("case", HAND, ids=[c.name for c in HAND])
def test_hand_computed_cordon_cases(case: Case, how: str) -> None:
    assert_filters(case)
    assert_diagnosis(case, how)
