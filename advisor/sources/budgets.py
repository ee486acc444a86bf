"""PodDisruptionBudgets (policy/v1) matched to pods as the disruption controller matches them.

Each budget covers the pods of its namespace that its `spec.selector` selects: matchLabels
and matchExpressions (In, NotIn, Exists, DoesNotExist) all hold; an empty selector selects
every pod of the namespace, a null one none, an invalid one none (the controller skips it).
The source writes what it finds into the pod's `DISRUPTION_BUDGET` annotation
(`<pdb-name>:<disruptions allowed>`), so snapshots carry it and findings replay offline.
A pod that two or more budgets cover cannot be evicted at all (the Eviction API refuses it):
it is recorded as allowing 0, naming them all.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from advisor.core.model import DISRUPTION_BUDGET

OPERATORS = frozenset({"In", "NotIn", "Exists", "DoesNotExist"})


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str  # one of OPERATORS
    values: frozenset[str] = frozenset()

    def holds(self, labels: Mapping[str, str]) -> bool:
        if self.operator == "Exists":
            return self.key in labels
        if self.operator == "DoesNotExist":
            return self.key not in labels
        if self.operator == "In":
            return labels.get(self.key) in self.values
        return labels.get(self.key) not in self.values  # NotIn: absent keys pass too


@dataclass(frozen=True, slots=True)
class Selector:
    """A label selector; `requirements` None: a null selector, which selects nothing."""

    requirements: tuple[Requirement, ...] | None

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.requirements is None:
            return False
        return all(r.holds(labels) for r in self.requirements)


@dataclass(frozen=True, slots=True)
class Budget:
    namespace: str
    name: str
    selector: Selector
    allowed: int  # disruptions the budget lets through now


def parse_selector(value: object) -> Selector:
    """A metav1.LabelSelector as the API's JSON gives it; ValueError when it is invalid
    (LabelSelectorAsSelector's rules: known operator, values for In/NotIn only)."""
    if value is None:
        return Selector(None)
    if not isinstance(value, dict):
        raise ValueError("selector is not an object")
    requirements: list[Requirement] = []
    match_labels = value.get("matchLabels") or {}
    if not isinstance(match_labels, dict):
        raise ValueError("matchLabels is not a map")
    for key, label in match_labels.items():
        if not isinstance(label, str):
            raise ValueError(f"matchLabels {key}: not a string")
        requirements.append(Requirement(str(key), "In", frozenset({label})))
    expressions = value.get("matchExpressions") or []
    if not isinstance(expressions, list):
        raise ValueError("matchExpressions is not a list")
    for expression in expressions:
        requirements.append(_requirement(expression))
    return Selector(tuple(requirements))


def _requirement(expression: object) -> Requirement:
    if not isinstance(expression, dict):
        raise ValueError("a matchExpressions entry is not an object")
    key, operator, values = (expression.get(k) for k in ("key", "operator", "values"))
    if not isinstance(key, str) or not key:
        raise ValueError("a matchExpressions entry has no key")
    if operator not in OPERATORS:
        raise ValueError(f"{key}: operator {operator!r} is not one of {sorted(OPERATORS)}")
    values = values or []
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ValueError(f"{key}: values is not a list of strings")
    if operator in ("In", "NotIn") and not values:
        raise ValueError(f"{key}: {operator} needs values")
    if operator in ("Exists", "DoesNotExist") and values:
        raise ValueError(f"{key}: {operator} takes no values")
    return Requirement(key, str(operator), frozenset(values))


def read_budgets(items: Sequence[Any]) -> tuple[list[Budget], list[str]]:
    """The budgets of a PodDisruptionBudget list, and a warning per budget left out."""
    budgets: list[Budget] = []
    problems: list[str] = []
    for item in items:
        metadata = _object(_object(item).get("metadata"))
        spec, status = (_object(_object(item).get(k)) for k in ("spec", "status"))
        namespace, name = metadata.get("namespace"), metadata.get("name")
        if not (isinstance(namespace, str) and isinstance(name, str) and namespace and name):
            continue
        try:
            selector = parse_selector(spec.get("selector"))
        except ValueError as error:
            problems.append(
                f"Kubernetes: PodDisruptionBudget {namespace}/{name} has an invalid selector "
                f"({error}); as for the disruption controller, it covers no pod"
            )
            continue
        budgets.append(Budget(namespace, name, selector, _allowed(metadata, status)))
    return budgets, problems


def _allowed(metadata: Mapping[str, Any], status: Mapping[str, Any]) -> int:
    """status.disruptionsAllowed; 0 when the controller has not counted it yet, or not since
    the spec last changed (the Eviction API refuses while observedGeneration lags)."""
    allowed = status.get("disruptionsAllowed")
    generation, observed = metadata.get("generation"), status.get("observedGeneration")
    if isinstance(generation, int) and (not isinstance(observed, int) or observed < generation):
        return 0
    return max(allowed, 0) if isinstance(allowed, int) and not isinstance(allowed, bool) else 0


def by_namespace(budgets: Sequence[Budget]) -> dict[str, list[Budget]]:
    grouped: dict[str, list[Budget]] = defaultdict(list)
    for budget in budgets:
        grouped[budget.namespace].append(budget)
    return dict(grouped)


def budget_annotation(labels: Mapping[str, str], budgets: Sequence[Budget]) -> str | None:
    """The `DISRUPTION_BUDGET` value for a pod with these labels among its namespace's
    budgets; None when none covers it."""
    covering = sorted((b for b in budgets if b.selector.matches(labels)), key=lambda b: b.name)
    if not covering:
        return None
    if len(covering) > 1:
        return ",".join(b.name for b in covering) + ":0"
    return f"{covering[0].name}:{covering[0].allowed}"


def mark_pod(obj: object, budgets: Mapping[str, Sequence[Budget]]) -> None:
    """Set (or clear: the key is the source's alone) the pod's `DISRUPTION_BUDGET`
    annotation in its API JSON, before the pod parsers read it. A pod whose metadata or
    annotations are unreadable is left as it is (the parser reports it)."""
    metadata = _object(obj).get("metadata")
    if not isinstance(metadata, dict):
        return
    annotations = metadata.get("annotations")
    if annotations is not None and not isinstance(annotations, dict):
        return
    labels = metadata.get("labels")
    labels = (
        {k: v for k, v in labels.items() if isinstance(v, str)} if isinstance(labels, dict) else {}
    )
    value = budget_annotation(labels, budgets.get(str(metadata.get("namespace") or ""), ()))
    if value is None:
        if annotations:
            annotations.pop(DISRUPTION_BUDGET, None)
        return
    metadata["annotations"] = {**(annotations or {}), DISRUPTION_BUDGET: value}


def _object(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}
