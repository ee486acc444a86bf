"""What kube-scheduler reads of a pod besides its GPUs (docs/design.md §9.1): the effective
cpu and memory request NodeResourcesFit counts, and where the pod may go (nodeSelector,
required node affinity, tolerations).

Tolerant like `parse_pod`: every unreadable value becomes an entry of `problems` naming the
field, never an error. What is unreadable counts as absent (a quantity as 0, a toleration
as not given), except a required-affinity term: kube-scheduler skips a term it cannot parse,
so here too such a term matches no node. The source decides what a problem means (a Pending
pod becomes `invalid`; a bound pod's problem is a warning).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast

from advisor.core.nodefilters import (
    EFFECTS,
    NAME_FIELD,
    NO_CONSTRAINTS,
    NO_RESOURCES,
    OPERATORS,
    Effect,
    NodeConstraints,
    Requirement,
    Resources,
    Term,
    Toleration,
    TolerationOperator,
    effective_request,
    parse_int64,
)
from advisor.core.quantity import MAX_INT, quantity_milli, quantity_units, show
from advisor.podspec import fields

REQUIRED_AFFINITY = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
SIDECAR = "Always"  # an init container with this restartPolicy runs beside the containers
Parse = Callable[[object], int]


@dataclass(frozen=True, slots=True)
class PodScheduling:
    resources: Resources = NO_RESOURCES
    constraints: NodeConstraints = NO_CONSTRAINTS
    problems: tuple[str, ...] = ()


def read_pod_scheduling(obj: object) -> PodScheduling:
    """A pod object's effective request and node constraints."""
    if not isinstance(obj, dict):
        return PodScheduling(problems=("the pod is not an object",))
    problems: list[str] = []
    spec = fields.obj(obj.get("spec"), "spec", problems)
    resources = read_resources(spec, problems)
    constraints = read_constraints(spec, problems)
    return PodScheduling(resources, constraints, tuple(problems))


# -- the effective request ---------------------------------------------------------------


def read_resources(spec: dict[Any, Any], problems: list[str]) -> Resources:
    """The pod's request as kube-scheduler computes it (component-helpers' PodRequests):
    the containers' sum against each init container, plus overhead. A sidecar (an init
    container with restartPolicy Always) keeps running, so it adds to the sum and to every
    init container started after it."""
    containers = [
        requested for _, requested in _containers(spec, "containers", "container", problems)
    ]
    init_containers: list[Resources] = []
    sidecars = NO_RESOURCES
    for raw, requested in _containers(spec, "initContainers", "init container", problems):
        if raw.get("restartPolicy") == SIDECAR:
            containers.append(requested)
            sidecars = _plus(sidecars, requested)
        else:
            init_containers.append(_plus(requested, sidecars))
    total = effective_request(containers, init_containers, NO_RESOURCES)
    # Pod-level requests (PodLevelResources) replace the containers' figure, resource by
    # resource; the API server has already defaulted them from pod-level limits.
    pod_level = fields.obj(spec.get("resources"), "spec.resources", problems)
    requests = fields.obj(pod_level.get("requests"), "spec.resources.requests", problems)
    given = _plain(requests, "spec.resources.requests", problems)
    total = Resources(
        given.cpu_milli if "cpu" in requests else total.cpu_milli,
        given.memory_bytes if "memory" in requests else total.memory_bytes,
    )
    overhead = fields.obj(spec.get("overhead"), "spec.overhead", problems)
    total = _plus(total, _plain(overhead, "spec.overhead", problems))
    if max(total.cpu_milli, total.memory_bytes) > MAX_INT:  # Kubernetes counts in int64
        problems.append("spec: the effective cpu or memory request is out of range")
        total = Resources(min(total.cpu_milli, MAX_INT), min(total.memory_bytes, MAX_INT))
    return total


def _containers(
    spec: dict[Any, Any], key: str, what: str, problems: list[str]
) -> list[tuple[dict[Any, Any], Resources]]:
    found = []
    for i, raw in enumerate(fields.array(spec.get(key), f"spec.{key}", problems)):
        if not isinstance(raw, dict):
            problems.append(f"spec.{key}[{i}] is not an object")
            continue
        name = raw.get("name")
        where = f"{what} {name}" if isinstance(name, str) and name else f"{what} #{i}"
        found.append((raw, _requested(raw.get("resources"), f"{where}: resources", problems)))
    return found


def _requested(raw: object, where: str, problems: list[str]) -> Resources:
    """cpu and memory of a `resources` block; a resource given as a limit only is requested
    at the limit (the API server's defaulting)."""
    resources = fields.obj(raw, where, problems)
    maps = [
        (f"{where}.{key}", fields.obj(resources.get(key), f"{where}.{key}", problems))
        for key in ("requests", "limits")
    ]
    return _resource_list(maps, problems)


def _amount(
    maps: list[tuple[str, dict[Any, Any]]], resource: str, parse: Parse, problems: list[str]
) -> int:
    """The resource from the first map that names it; 0 when none does or it is unreadable."""
    for where, values in maps:
        if resource in values:
            try:
                return parse(values[resource])
            except ValueError as error:
                problems.append(f"{where}.{resource} {error}")
                return 0
    return 0


def _plain(values: dict[Any, Any], where: str, problems: list[str]) -> Resources:
    """cpu and memory of a plain resource list (overhead, pod-level requests)."""
    return _resource_list([(where, values)], problems)


def _resource_list(maps: list[tuple[str, dict[Any, Any]]], problems: list[str]) -> Resources:
    return Resources(
        _amount(maps, "cpu", _milli, problems), _amount(maps, "memory", _units, problems)
    )


# A cluster's pods repeat a few quantity strings ("100m", "16Gi") thousands of times, and
# exact parsing is not cheap: each distinct string is parsed once.
def _milli(value: object) -> int:
    return _milli_text(value) if isinstance(value, str) else quantity_milli(value)


def _units(value: object) -> int:
    return _units_text(value) if isinstance(value, str) else quantity_units(value)


@lru_cache(maxsize=4096)
def _milli_text(value: str) -> int:
    return quantity_milli(value)


@lru_cache(maxsize=4096)
def _units_text(value: str) -> int:
    return quantity_units(value)


def _plus(a: Resources, b: Resources) -> Resources:
    return Resources(a.cpu_milli + b.cpu_milli, a.memory_bytes + b.memory_bytes)


# -- where it may go ---------------------------------------------------------------------


def read_constraints(spec: dict[Any, Any], problems: list[str]) -> NodeConstraints:
    """nodeSelector, required node affinity and tolerations."""
    selector = label_map(spec.get("nodeSelector"), "spec.nodeSelector", problems)
    affinity = fields.obj(spec.get("affinity"), "spec.affinity", problems)
    node = fields.obj(affinity.get("nodeAffinity"), "spec.affinity.nodeAffinity", problems)
    required = None
    if node.get("requiredDuringSchedulingIgnoredDuringExecution") is not None:
        required = _required(node["requiredDuringSchedulingIgnoredDuringExecution"], problems)
    tolerations = tuple(
        toleration
        for i, raw in enumerate(fields.array(spec.get("tolerations"), "spec.tolerations", problems))
        if (toleration := _toleration(raw, f"spec.tolerations[{i}]", problems)) is not None
    )
    return NodeConstraints(tuple(sorted(selector.items())), required, tolerations)


def label_map(value: object, where: str, problems: list[str]) -> dict[str, str]:
    """Labels or a node selector: string to string, keys not empty (the API's rule)."""
    labels = dict(fields.string_map(value, where, problems))
    if "" in labels:
        problems.append(f"{where} has an empty key")
        del labels[""]
    return labels


def _required(raw: object, problems: list[str]) -> tuple[Term, ...]:
    """The terms (ORed); a term with a requirement kube-scheduler cannot parse matches no
    node (its lazy-error node selector skips such a term), so it is left out here. With none
    left, one empty term stands for "no node" (an empty list is no scenario value)."""
    selector = fields.obj(raw, REQUIRED_AFFINITY, problems)
    at = f"{REQUIRED_AFFINITY}.nodeSelectorTerms"
    terms = fields.array(selector.get("nodeSelectorTerms"), at, problems)
    if not terms:
        problems.append(f"{at} is empty: the pod fits no node")
    read = (_term(term, f"{at}[{i}]", problems) for i, term in enumerate(terms))
    return tuple(term for term in read if term is not None) or (Term(),)


def _term(raw: object, where: str, problems: list[str]) -> Term | None:
    if not isinstance(raw, dict):
        problems.append(f"{where} is not an object")
        return None
    before = len(problems)
    expressions = _requirements(raw, "matchExpressions", where, OPERATORS, problems)
    matched_fields = _requirements(raw, "matchFields", where, ("In", "NotIn"), problems)
    for i, requirement in enumerate(matched_fields):
        at = f"{where}.matchFields[{i}]"
        if requirement.key != NAME_FIELD:
            problems.append(f"{at}.key {show(requirement.key)} is not {NAME_FIELD}")
        elif len(requirement.values) != 1:
            problems.append(f"{at}.values must hold exactly one node name")
    if len(problems) > before:
        return None
    return Term(expressions, matched_fields)


def _requirements(
    term: dict[Any, Any],
    key: str,
    where: str,
    operators: tuple[str, ...],
    problems: list[str],
) -> tuple[Requirement, ...]:
    found = []
    for i, raw in enumerate(fields.array(term.get(key), f"{where}.{key}", problems)):
        requirement = _requirement(raw, f"{where}.{key}[{i}]", operators, problems)
        if requirement is not None:
            found.append(requirement)
    return tuple(found)


def _requirement(
    raw: object, where: str, operators: tuple[str, ...], problems: list[str]
) -> Requirement | None:
    """One requirement, checked by the API server's rules (ValidateNodeSelectorRequirement)."""
    if not isinstance(raw, dict):
        problems.append(f"{where} is not an object")
        return None
    key = fields.text(raw.get("key"), f"{where}.key", problems, required=True)
    operator = raw.get("operator")
    values = fields.array(raw.get("values"), f"{where}.values", problems)
    if operator not in operators:
        problems.append(f"{where}.operator {show(operator)} is not one of {', '.join(operators)}")
        return None
    wrong = [(i, v) for i, v in enumerate(values) if not isinstance(v, str)]
    for i, value in wrong:
        problems.append(f"{where}.values[{i}] {show(value)} is not a string")
    problem = _count_problem(operator, [v for v in values if isinstance(v, str)])
    if problem:
        problems.append(f"{where}.values {problem}")
    if not key or wrong or problem:
        return None
    return Requirement(key, operator, tuple(values))


def _count_problem(operator: str, values: list[str]) -> str | None:
    """Why the values do not suit the operator, or None. A Gt or Lt bound that is no
    integer is one too: kube-scheduler's parser would skip the term, and the scenario format
    refuses it. (Label values that are not valid stay: `Requirement.valid` judges them.)"""
    if operator in ("In", "NotIn") and not values:
        return f"must not be empty for {operator}"
    if operator in ("Exists", "DoesNotExist") and values:
        return f"must be empty for {operator}"
    if operator in ("Gt", "Lt"):
        if len(values) != 1:
            return f"must hold exactly one value for {operator}"
        if parse_int64(values[0]) is None:
            return f"{show(values[0])} is not an integer, as {operator} needs"
    return None


def _toleration(raw: object, where: str, problems: list[str]) -> Toleration | None:
    """One toleration, checked by the API server's rules (ValidateTolerations); None (not
    tolerated) when it breaks one."""
    if not isinstance(raw, dict):
        problems.append(f"{where} is not an object")
        return None
    before = len(problems)
    key = fields.text(raw.get("key"), f"{where}.key", problems) or ""
    value = fields.text(raw.get("value"), f"{where}.value", problems) or ""
    operator = raw.get("operator")
    operator = "Equal" if operator in (None, "") else operator  # empty means Equal
    effect = raw.get("effect")
    effect = "" if effect is None else effect  # empty: every effect
    if operator not in ("Equal", "Exists"):
        problems.append(f"{where}.operator {show(operator)} is not one of Equal, Exists")
    elif operator == "Exists" and value:
        problems.append(f"{where}.value must be empty when operator is Exists")
    elif not key and operator != "Exists":
        problems.append(f"{where}.operator must be Exists when key is empty")
    if effect not in ("", *EFFECTS):
        problems.append(f"{where}.effect {show(effect)} is not one of {', '.join(EFFECTS)}")
    if len(problems) > before:
        return None
    return Toleration(key, cast(TolerationOperator, operator), value, cast(Effect, effect))
