"""NodeAffinity (nodeSelector and required node affinity) against kube-scheduler's own table.

Converted from kubernetes/kubernetes pkg/scheduler/framework/plugins/nodeaffinity/
node_affinity_test.go, TestNodeAffinity, file version at commit 022462ccaeb5 (see
upstream_helpers for why a commit and not a tag). Every case's id is its upstream name.
The reason is ErrReasonPod, "node(s) didn't match Pod's node affinity/selector".

Not converted, and why:
* "Matches added affinity and Pod's node affinity", "Matches added affinity but not Pod's
  node affinity", "Doesn't match added affinity": they set NodeAffinityArgs.AddedAffinity,
  a scheduler-profile argument; the model has no profile arguments.
* The PreFilter halves of the table (wantPreFilterResult, wantPreFilterStatus, the
  "pod affinity terms conflict" status): the model has no PreFilter stage, and PreFilter
  never changes a Filter verdict. The Filter verdicts of those cases are converted.
* Preferred node affinity (TestNodeAffinityPriority): it only scores, never filters.
* matchFields on any field but metadata.name: the API server refuses it.

`test_invalid_label_value_in_a_term_matches_nothing` keeps the upstream case where a term
with a value that is no label value matches no node (labels.NewRequirement refuses it).
"""

from __future__ import annotations

import pytest

from advisor.core.nodefilters import MSG_AFFINITY, Requirement
from tests.advisor.core.upstream_helpers import (
    BUILDS,
    Case,
    Source,
    affinity,
    assert_diagnosis,
    assert_filters,
    constraints,
    expr,
    name_in,
    term,
)

SOURCE = Source(
    "pkg/scheduler/framework/plugins/nodeaffinity/node_affinity_test.go",
    "TestNodeAffinity",
    "022462ccaeb5664cfd0c860978624bb0619aaa01",
)
NO = (MSG_AFFINITY,)
GPU_AND_NOT_AMD = term(expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER"))

UPSTREAM = [
    Case("missing labels", NO, constraints=constraints({"foo": "bar"})),
    Case("same labels", labels={"foo": "bar"}, constraints=constraints({"foo": "bar"})),
    Case(
        "node labels are superset",
        labels={"foo": "bar", "baz": "blah"},
        constraints=constraints({"foo": "bar"}),
    ),
    Case(
        "node labels are subset",
        NO,
        labels={"foo": "bar"},
        constraints=constraints({"foo": "bar", "baz": "blah"}),
    ),
    Case(
        "Pod with matchExpressions using In operator that matches the existing node",
        labels={"foo": "bar"},
        constraints=affinity(term(expr("foo", "In", "bar", "value2"))),
    ),
    Case(
        "Pod with matchExpressions using Gt operator that matches the existing node",
        labels={"kernel-version": "0206"},
        constraints=affinity(term(expr("kernel-version", "Gt", "0204"))),
    ),
    Case(
        "Pod with matchExpressions using NotIn operator that matches the existing node",
        labels={"mem-type": "DDR3"},
        constraints=affinity(term(expr("mem-type", "NotIn", "DDR", "DDR2"))),
    ),
    Case(
        "Pod with matchExpressions using Exists operator that matches the existing node",
        labels={"GPU": "NVIDIA-GRID-K1"},
        constraints=affinity(term(expr("GPU", "Exists"))),
    ),
    Case(
        "Pod with affinity that don't match node's labels won't schedule onto the node",
        NO,
        labels={"foo": "bar"},
        constraints=affinity(term(expr("foo", "In", "value1", "value2"))),
    ),
    Case(
        "Pod with empty MatchExpressions is not a valid value will match no objects and "
        "won't schedule onto the node",
        NO,
        labels={"foo": "bar"},
        constraints=affinity(term()),
    ),
    Case("Pod with no Affinity will schedule onto a node", labels={"foo": "bar"}),
    # RequiredDuringScheduling nil: no required terms at all.
    Case("Pod with Affinity but nil NodeSelector will schedule onto a node", labels={"foo": "bar"}),
    Case(
        "Pod with multiple matchExpressions ANDed that matches the existing node",
        labels={"GPU": "NVIDIA-GRID-K1"},
        constraints=affinity(GPU_AND_NOT_AMD),
    ),
    Case(
        "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
        NO,
        labels={"GPU": "NVIDIA-GRID-K1"},
        constraints=affinity(term(expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER"))),
    ),
    Case(
        "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and "
        "will schedule onto the node",
        labels={"foo": "bar"},
        constraints=affinity(
            term(expr("foo", "In", "bar", "value2")),
            term(expr("diffkey", "In", "wrong", "value2")),
        ),
    ),
    Case(
        "Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are "
        "deprecating) both are satisfied, will schedule onto the node",
        labels={"foo": "bar"},
        constraints=affinity(term(expr("foo", "Exists")), selector={"foo": "bar"}),
    ),
    Case(
        "Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old "
        "thing that we are deprecating) is not satisfied, won't schedule onto the node",
        NO,
        labels={"foo": "barrrrrr"},
        constraints=affinity(term(expr("foo", "Exists")), selector={"foo": "bar"}),
    ),
    Case(
        "Pod with matchFields using In operator that matches the existing node",
        node="node1",
        constraints=affinity(term(fields=(name_in("node1"),))),
    ),
    Case(
        "Pod with matchFields using In operator that does not match the existing node",
        NO,
        node="node2",
        constraints=affinity(term(fields=(name_in("node1"),))),
    ),
    Case(
        "Pod with two terms: matchFields does not match, but matchExpressions matches",
        node="node2",
        labels={"foo": "bar"},
        constraints=affinity(
            term(fields=(name_in("node1"), name_in("node2"))),
            term(expr("foo", "In", "bar")),
        ),
    ),
    Case(
        "Pod with one term: matchFields does not match, but matchExpressions matches",
        NO,
        node="node2",
        labels={"foo": "bar"},
        constraints=affinity(term(expr("foo", "In", "bar"), fields=(name_in("node1"),))),
    ),
    Case(
        "Pod with one term: both matchFields and matchExpressions match",
        node="node1",
        labels={"foo": "bar"},
        constraints=affinity(term(expr("foo", "In", "bar"), fields=(name_in("node1"),))),
    ),
    Case(
        "Pod with two terms: both matchFields and matchExpressions do not match",
        NO,
        node="node2",
        labels={"foo": "bar"},
        constraints=affinity(
            term(fields=(name_in("node1"),)),
            term(expr("foo", "In", "not-match-to-bar")),
        ),
    ),
    Case(
        "Pod with two terms of node.Name affinity",
        node="node2",
        constraints=affinity(term(fields=(name_in("node1"),)), term(fields=(name_in("node2"),))),
    ),
    Case(
        "Pod with two conflicting mach field requirements",
        NO,
        node="node2",
        labels={"foo": "bar"},
        constraints=affinity(term(fields=(name_in("node1"), name_in("node2")))),
    ),
    Case(
        "Matches node selector correctly even if PreFilter is not called",
        labels={"foo": "bar", "baz": "blah"},
        constraints=constraints({"foo": "bar"}),
    ),
    Case(
        "Matches node affinity correctly even if PreFilter is not called",
        labels={"GPU": "NVIDIA-GRID-K1"},
        constraints=affinity(GPU_AND_NOT_AMD),
    ),
]
IDS = [c.name for c in UPSTREAM]


@pytest.mark.parametrize("case", UPSTREAM, ids=IDS)
def test_filter_gives_the_upstream_verdict(case: Case) -> None:
    """NodeAffinity's verdict on the node, as in the upstream table."""
    assert_filters(case, SOURCE)


@pytest.mark.parametrize("how", BUILDS)
@pytest.mark.parametrize("case", UPSTREAM, ids=IDS)
def test_diagnosis_gives_the_upstream_verdict(case: Case, how: str) -> None:
    """The same case through diagnose(): schedulable, or unsatisfiable with the FitError."""
    assert_diagnosis(case, how, SOURCE)


# Upstream "Pod with an invalid value in Affinity term won't be scheduled onto the node":
# component-helpers' nodeSelectorRequirementsAsSelector builds each requirement with
# labels.NewRequirement, which rejects a value that is not a valid label value; a term with
# a parse error matches no node (LazyErrorNodeSelector.Match). The API server does not
# check those values, so such a pod exists. The model evaluates NotIn on the raw string and
# admits the node.
INVALID_VALUE = Case(
    "Pod with an invalid value in Affinity term won't be scheduled onto the node",
    NO,
    labels={"foo": "bar"},
    constraints=affinity(term(expr("foo", "NotIn", "invalid value: ___@#$%^"))),
)


def test_invalid_label_value_in_a_term_matches_nothing() -> None:
    assert_filters(INVALID_VALUE, SOURCE)


# -- cases upstream leaves out (computed by hand from labels.Requirement.Matches) ----------


@pytest.mark.parametrize("label", ["abc", "2.6", "", "0x10", "v5"])
@pytest.mark.parametrize("operator", ["Gt", "Lt"])
def test_gt_lt_with_a_non_integer_label_value_matches_nothing(label: str, operator: str) -> None:
    # Matches parses the node's value with strconv.ParseInt(v, 10, 64); on error, false.
    case = Case(
        f"kernel-version={label!r} {operator} 5",
        NO,
        labels={"kernel-version": label},
        constraints=affinity(term(expr("kernel-version", operator, "5"))),
    )
    assert_filters(case)
    assert_diagnosis(case, "dataclasses")


@pytest.mark.parametrize(
    ("label", "operator", "bound", "fits"),
    [
        ("6", "Gt", "5", True),
        ("5", "Gt", "5", False),  # strictly greater
        ("5", "Lt", "5", False),  # strictly less
        ("-3", "Lt", "0", True),
        ("+7", "Gt", "6", True),  # ParseInt takes a sign
        ("0010", "Lt", "9", False),  # base 10: leading zeros do not make it octal
    ],
)
def test_gt_lt_compare_as_integers(label: str, operator: str, bound: str, fits: bool) -> None:
    req = Requirement("k", operator, (bound,))  # type: ignore[arg-type]
    assert req.matches({"k": label}) is fits
    assert req.matches({}) is False  # Gt and Lt need the label


@pytest.mark.parametrize("label", ["1_000", "99999999999999999999"])
def test_gt_with_a_label_go_cannot_parse_matches_nothing(label: str) -> None:
    # Both are valid label values. strconv.ParseInt refuses "1_000" (underscores only with
    # base 0) and a value past int64 (ErrRange); Matches then returns false. Python's int()
    # reads both, so the model matches.
    assert not Requirement("k", "Gt", ("5",)).matches({"k": label})


@pytest.mark.parametrize(
    ("requirement", "labels", "fits"),
    [
        (expr("zone", "NotIn", "z1"), {}, True),  # NotIn: a missing label is not in the set
        (expr("zone", "DoesNotExist"), {}, True),
        (expr("zone", "DoesNotExist"), {"zone": ""}, False),  # present, even empty
        (expr("zone", "Exists"), {"zone": ""}, True),
        (expr("zone", "In", "z1"), {}, False),
    ],
)
def test_set_operators_on_missing_and_empty_labels(
    requirement: Requirement, labels: dict[str, str], fits: bool
) -> None:
    case = Case("hand", () if fits else NO, labels=labels, constraints=affinity(term(requirement)))
    assert_filters(case)
    assert_diagnosis(case, "scenario")


def test_node_selector_value_must_match_exactly_even_when_empty() -> None:
    # labels.SelectorFromSet: key present and equal, an empty value included.
    assert_filters(Case("hand", (), labels={"a": ""}, constraints=constraints({"a": ""})))
    assert_filters(Case("hand", NO, labels={}, constraints=constraints({"a": ""})))
    assert_filters(Case("hand", NO, labels={"a": "x"}, constraints=constraints({"a": ""})))
