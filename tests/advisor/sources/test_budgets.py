"""PodDisruptionBudgets matched to pods as the disruption controller matches them."""

from __future__ import annotations

from typing import Any

import pytest

from advisor.sources.budgets import (
    Budget,
    budget_annotation,
    by_namespace,
    mark_pod,
    parse_selector,
    read_budgets,
)
from tests.kubeapi import objects

BUDGET = "xgpu.io/disruption-budget"
WEB = {"app": "web", "tier": "front"}


def expression(key: str, operator: str, *values: str) -> dict[str, Any]:
    entry: dict[str, Any] = {"key": key, "operator": operator}
    if values:
        entry["values"] = list(values)
    return entry


@pytest.mark.parametrize(
    ("selector", "labels", "selected"),
    [
        (None, WEB, False),  # a null selector selects nothing
        (None, {}, False),
        ({}, WEB, True),  # an empty one selects every pod of the namespace (policy/v1)
        ({}, {}, True),
        ({"matchLabels": {}, "matchExpressions": []}, {}, True),
        ({"matchLabels": {"app": "web"}}, WEB, True),
        ({"matchLabels": {"app": "web"}}, {"app": "db"}, False),
        ({"matchLabels": {"app": "web"}}, {}, False),
        ({"matchLabels": {"app": "web", "tier": "back"}}, WEB, False),  # all must hold
        ({"matchExpressions": [expression("app", "In", "db", "web")]}, WEB, True),
        ({"matchExpressions": [expression("app", "In", "db")]}, WEB, False),
        ({"matchExpressions": [expression("app", "In", "web")]}, {}, False),
        ({"matchExpressions": [expression("app", "NotIn", "db")]}, WEB, True),
        ({"matchExpressions": [expression("app", "NotIn", "web")]}, WEB, False),
        ({"matchExpressions": [expression("app", "NotIn", "web")]}, {}, True),  # absent key
        ({"matchExpressions": [expression("tier", "Exists")]}, WEB, True),
        ({"matchExpressions": [expression("tier", "Exists")]}, {"app": "web"}, False),
        ({"matchExpressions": [expression("tier", "DoesNotExist")]}, WEB, False),
        ({"matchExpressions": [expression("tier", "DoesNotExist")]}, {"app": "web"}, True),
        (
            {
                "matchLabels": {"app": "web"},
                "matchExpressions": [expression("tier", "In", "front")],
            },
            WEB,
            True,
        ),
        (
            {
                "matchLabels": {"app": "web"},
                "matchExpressions": [expression("tier", "NotIn", "front")],
            },
            WEB,
            False,
        ),
    ],
)
def test_selector_matching(selector: Any, labels: dict[str, str], selected: bool) -> None:
    assert parse_selector(selector).matches(labels) is selected


@pytest.mark.parametrize(
    ("selector", "problem"),
    [
        ({"matchExpressions": [expression("app", "Equals", "web")]}, "operator 'Equals'"),
        ({"matchExpressions": [expression("app", "In")]}, "In needs values"),
        ({"matchExpressions": [expression("app", "NotIn")]}, "NotIn needs values"),
        ({"matchExpressions": [expression("app", "Exists", "web")]}, "Exists takes no values"),
        ({"matchExpressions": [{"operator": "Exists"}]}, "has no key"),
        ({"matchLabels": {"app": 3}}, "matchLabels app: not a string"),
        ({"matchLabels": ["app"]}, "matchLabels is not a map"),
        ("app=web", "selector is not an object"),
    ],
)
def test_invalid_selectors_are_refused(selector: Any, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        parse_selector(selector)


def test_budgets_read_from_the_list() -> None:
    items = [
        objects.pdb("ok", namespace="ml", selector={}, disruptions_allowed=2),
        objects.pdb("none-yet", namespace="ml", selector={}, disruptions_allowed=None),
        # the controller has not seen the latest spec: the Eviction API refuses for now
        objects.pdb("stale", namespace="ml", selector={}, generation=3, observed_generation=2),
        objects.pdb(
            "odd",
            namespace="ml",
            selector={"matchExpressions": [expression("app", "Near", "x")]},
        ),
        {"metadata": {"name": "no-namespace"}},
        "not an object",
    ]
    budgets, problems = read_budgets(items)
    assert [(b.namespace, b.name, b.allowed) for b in budgets] == [
        ("ml", "ok", 2),
        ("ml", "none-yet", 0),
        ("ml", "stale", 0),
    ]
    [problem] = problems
    assert problem.startswith("Kubernetes: PodDisruptionBudget ml/odd has an invalid selector")
    assert problem.endswith("it covers no pod")


def budget(name: str, allowed: int, selector: Any) -> Budget:
    return Budget("ml", name, parse_selector(selector), allowed)


def test_the_annotation_names_the_one_budget_or_every_one_covering() -> None:
    web = budget("web", 1, {"matchLabels": {"app": "web"}})
    front = budget("front", 3, {"matchLabels": {"tier": "front"}})
    assert budget_annotation({"app": "web"}, [web, front]) == "web:1"
    assert budget_annotation({"tier": "front"}, [web, front]) == "front:3"
    assert budget_annotation(WEB, [web, front]) == "front,web:0"  # the API refuses such a pod
    assert budget_annotation({"app": "db"}, [web, front]) is None


def test_mark_pod_sets_and_clears_our_annotation_only() -> None:
    budgets = by_namespace([budget("web", 1, {"matchLabels": {"app": "web"}})])
    covered = objects.pod("a", namespace="ml", labels={"app": "web"}, annotations={"x": "1"})
    mark_pod(covered, budgets)
    assert covered["metadata"]["annotations"] == {"x": "1", BUDGET: "web:1"}
    # The key is the source's: a value set by hand on a pod no budget covers is dropped.
    forged = objects.pod("b", namespace="ml", annotations={BUDGET: "web:0", "x": "1"})
    mark_pod(forged, budgets)
    assert forged["metadata"]["annotations"] == {"x": "1"}
    other = objects.pod("c", namespace="web", labels={"app": "web"})  # another namespace
    mark_pod(other, budgets)
    assert "annotations" not in other["metadata"]
    broken = objects.pod("d", namespace="ml", labels={"app": "web"})
    broken["metadata"]["annotations"] = ["not", "a", "map"]
    mark_pod(broken, budgets)  # left for the parser to report
    assert broken["metadata"]["annotations"] == ["not", "a", "map"]
