"""The scenario keys of the rest of the node (docs/design.md §9.1): allocatable, labels,
taints and cordons of nodes; resources, node selector, required node affinity and
tolerations of pods. Read strictly (Kubernetes' own validation rules, so a scenario the API
server would refuse is refused here too) and written back in the same form.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.core.model import Node, OtherPod, Pod
from advisor.core.nodefilters import (
    EFFECTS,
    NAME_FIELD,
    NO_CONSTRAINTS,
    NOT_KNOWN,
    OPERATORS,
    Allocatable,
    NodeConstraints,
    Requirement,
    Resources,
    Taint,
    Term,
    Toleration,
    bytes_text,
    cpu_text,
    parse_int64,
)
from advisor.core.quantity import quantity_milli, quantity_units
from advisor.scenario.strict import Reader, kind

NODE_FIT_KEYS = {"allocatable", "labels", "taints", "unschedulable", "resident_pods"}
POD_FIT_KEYS = {"resources", "node_selector", "affinity", "tolerations"}


def read_node_fit(r: Reader, m: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The §9.1 fields of a node mapping, as keyword arguments of `Node`."""
    fit: dict[str, Any] = {}
    if "allocatable" in m:
        at = f"{where}.allocatable"
        a = r.mapping(m["allocatable"], at, {"cpu", "memory", "pods"}, set())
        fit["allocatable"] = Allocatable(
            cpu_milli=_quantity(r, a, "cpu", at, quantity_milli),
            memory_bytes=_quantity(r, a, "memory", at, quantity_units),
            pods=_quantity(r, a, "pods", at, quantity_units),
        )
    if "labels" in m:
        fit["labels"] = _string_map(r, m["labels"], f"{where}.labels")
    if "taints" in m:
        at = f"{where}.taints"
        fit["taints"] = tuple(
            _taint(r, t, f"{at}[{i}]") for i, t in enumerate(r.sequence(m["taints"], at))
        )
    if "unschedulable" in m:
        fit["unschedulable"] = r.boolean(m["unschedulable"], f"{where}.unschedulable")
    if "resident_pods" in m:
        fit["resident_pods"] = _resident_pods(r, m["resident_pods"], f"{where}.resident_pods")
    return fit


def _resident_pods(r: Reader, raw: object, where: str) -> tuple[OtherPod, ...]:
    """Pods that stay with the node (DaemonSet, mirror, terminating): name, resources and
    whether it is being deleted (`terminating`: a new node of the group runs no copy)."""
    pods: list[OtherPod] = []
    for i, item in enumerate(r.sequence(raw, where)):
        at = f"{where}[{i}]"
        m = r.mapping(item, at, {"name", "resources", "terminating"}, {"name"})
        name = r.string(m["name"], f"{at}.name")
        if "/" not in name:
            raise r.fail(f"{at}.name", f"expected namespace/pod, got {name!r}")
        if any(p.name == name for p in pods):
            raise r.fail(f"{at}.name", f"duplicate resident pod name {name!r}")
        resources = (
            read_resources(r, m["resources"], f"{at}.resources")
            if "resources" in m
            else Resources()
        )
        terminating = "terminating" in m and r.boolean(m["terminating"], f"{at}.terminating")
        pods.append(OtherPod(name, None, resources, terminating))
    return tuple(pods)


def read_resources(r: Reader, raw: object, where: str) -> Resources:
    """A pod's effective request: {cpu, memory}, Kubernetes quantities."""
    m = r.mapping(raw, where, {"cpu", "memory"}, set())
    return Resources(
        cpu_milli=_quantity(r, m, "cpu", where, quantity_milli) or 0,
        memory_bytes=_quantity(r, m, "memory", where, quantity_units) or 0,
    )


def read_pod_fit(r: Reader, m: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The §9.1 fields of a pod mapping, as keyword arguments of `Pod`."""
    fit: dict[str, Any] = {}
    if "resources" in m:
        fit["resources"] = read_resources(r, m["resources"], f"{where}.resources")
    if not POD_FIT_KEYS & set(m) - {"resources"}:
        return fit
    selector: tuple[tuple[str, str], ...] = ()
    if "node_selector" in m:
        selector = tuple(
            sorted(_string_map(r, m["node_selector"], f"{where}.node_selector").items())
        )
    required = None
    if "affinity" in m:
        at = f"{where}.affinity"
        affinity = r.mapping(m["affinity"], at, {"node"}, set())
        node = r.mapping(affinity.get("node", {}), f"{at}.node", {"required"}, set())
        if "required" in node:
            at = f"{at}.node.required"
            terms = r.sequence(node["required"], at)
            if not terms:
                raise r.fail(at, "needs at least one term (the API server refuses an empty list)")
            required = tuple(_term(r, t, f"{at}[{i}]") for i, t in enumerate(terms))
    tolerations: tuple[Toleration, ...] = ()
    if "tolerations" in m:
        at = f"{where}.tolerations"
        tolerations = tuple(
            _toleration(r, t, f"{at}[{i}]") for i, t in enumerate(r.sequence(m["tolerations"], at))
        )
    fit["constraints"] = NodeConstraints(selector, required, tolerations)
    return fit


def _quantity(r: Reader, m: Mapping[str, Any], key: str, where: str, parse: Any) -> int | None:
    if key not in m:
        return None
    try:
        value: int = parse(m[key])
    except ValueError as error:
        raise r.fail(f"{where}.{key}", str(error)) from None
    return value


def _string_map(r: Reader, raw: object, where: str) -> dict[str, str]:
    if not isinstance(raw, Mapping):
        raise r.fail(where, f"expected a mapping, got {kind(raw)}")
    for key, value in raw.items():
        if not isinstance(key, str) or not key:
            raise r.fail(where, f"keys must be non-empty strings, got {kind(key)}")
        if not isinstance(value, str):
            raise r.fail(f"{where}.{key}", f"expected a string, got {kind(value)} (quote it)")
    return dict(raw)


def _choice(r: Reader, value: object, where: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise r.fail(where, f"expected one of {', '.join(allowed)}, got {kind(value)}")
    return str(value)


def _taint(r: Reader, raw: object, where: str) -> Taint:
    m = r.mapping(raw, where, {"key", "value", "effect"}, {"key", "effect"})
    value = m.get("value", "")
    if not isinstance(value, str):
        raise r.fail(f"{where}.value", f"expected a string, got {kind(value)} (quote it)")
    effect = _choice(r, m["effect"], f"{where}.effect", EFFECTS)
    return Taint(r.string(m["key"], f"{where}.key"), effect, value)  # type: ignore[arg-type]


def _toleration(r: Reader, raw: object, where: str) -> Toleration:
    m = r.mapping(raw, where, {"key", "operator", "value", "effect"}, set())
    key, value = m.get("key", ""), m.get("value", "")
    for name, text in (("key", key), ("value", value)):
        if not isinstance(text, str):
            raise r.fail(f"{where}.{name}", f"expected a string, got {kind(text)} (quote it)")
    operator = _choice(r, m.get("operator", "Equal"), f"{where}.operator", ("Equal", "Exists"))
    effect = _choice(r, m.get("effect", ""), f"{where}.effect", ("", *EFFECTS))
    # The API server's rules (ValidateTolerations): Exists takes no value; an empty key
    # needs Exists.
    if operator == "Exists" and value:
        raise r.fail(f"{where}.value", "must be empty when operator is Exists")
    if not key and operator != "Exists":
        raise r.fail(f"{where}.operator", "must be Exists when key is empty")
    return Toleration(key, operator, value, effect)  # type: ignore[arg-type]


def _term(r: Reader, raw: object, where: str) -> Term:
    m = r.mapping(raw, where, {"match_expressions", "match_fields"}, set())
    expressions = tuple(
        _requirement(r, e, f"{where}.match_expressions[{i}]", OPERATORS)
        for i, e in enumerate(
            r.sequence(m.get("match_expressions", []), f"{where}.match_expressions")
        )
    )
    fields = tuple(
        _requirement(r, e, f"{where}.match_fields[{i}]", ("In", "NotIn"))
        for i, e in enumerate(r.sequence(m.get("match_fields", []), f"{where}.match_fields"))
    )
    for i, f in enumerate(fields):
        if f.key != NAME_FIELD:
            raise r.fail(f"{where}.match_fields[{i}].key", f"only {NAME_FIELD} is supported")
        if len(f.values) != 1:
            raise r.fail(f"{where}.match_fields[{i}].values", "needs exactly one value")
    return Term(expressions, fields)


def _requirement(r: Reader, raw: object, where: str, operators: tuple[str, ...]) -> Requirement:
    m = r.mapping(raw, where, {"key", "operator", "values"}, {"key", "operator"})
    key = r.string(m["key"], f"{where}.key")
    operator = _choice(r, m["operator"], f"{where}.operator", operators)
    values = r.sequence(m.get("values", []), f"{where}.values")
    for i, v in enumerate(values):
        if not isinstance(v, str):
            raise r.fail(f"{where}.values[{i}]", f"expected a string, got {kind(v)} (quote it)")
    # The API server's rules (ValidateNodeSelectorRequirement).
    if operator in ("In", "NotIn") and not values:
        raise r.fail(f"{where}.values", f"{operator} needs at least one value")
    if operator in ("Exists", "DoesNotExist") and values:
        raise r.fail(f"{where}.values", f"{operator} takes no values")
    if operator in ("Gt", "Lt"):
        if len(values) != 1:
            raise r.fail(f"{where}.values", f"{operator} needs exactly one value")
        if parse_int64(values[0]) is None:
            raise r.fail(f"{where}.values[0]", f"{operator} needs an integer, got {values[0]!r}")
    return Requirement(key, operator, tuple(values))  # type: ignore[arg-type]


# -- writing -----------------------------------------------------------------------------


def resources_data(resources: Resources) -> dict[str, str]:
    return {"cpu": cpu_text(resources.cpu_milli), "memory": bytes_text(resources.memory_bytes)}


def node_fit_data(node: Node) -> dict[str, Any]:
    data: dict[str, Any] = {}
    a = node.allocatable
    if a != NOT_KNOWN:
        allocatable: dict[str, Any] = {}
        if a.cpu_milli is not None:
            allocatable["cpu"] = cpu_text(a.cpu_milli)
        if a.memory_bytes is not None:
            allocatable["memory"] = bytes_text(a.memory_bytes)
        if a.pods is not None:
            allocatable["pods"] = a.pods
        data["allocatable"] = allocatable
    if node.labels:
        data["labels"] = dict(node.labels)
    if node.taints:
        data["taints"] = [_taint_data(t) for t in node.taints]
    if node.unschedulable:
        data["unschedulable"] = True
    if node.resident_pods:
        data["resident_pods"] = [
            {k: v for k, v in other_pod_data(p).items() if k != "blocks"}
            for p in node.resident_pods
        ]
    return data


def other_pod_data(pod: OtherPod) -> dict[str, Any]:
    data: dict[str, Any] = {"name": pod.name, "blocks": pod.blocks}
    if pod.resources != Resources():
        data["resources"] = resources_data(pod.resources)
    if pod.terminating:
        data["terminating"] = True
    if pod.constraints is not None:  # known: said even when empty, so it reads back known
        data |= constraints_data(pod.constraints) or {"tolerations": []}
    return data


def pod_fit_data(pod: Pod) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if pod.resources != Resources():
        data["resources"] = resources_data(pod.resources)
    return data | constraints_data(pod.constraints)


def constraints_data(c: NodeConstraints) -> dict[str, Any]:
    """nodeSelector, required node affinity and tolerations as the scenario format holds
    them; nothing for none."""
    data: dict[str, Any] = {}
    if c == NO_CONSTRAINTS:
        return data
    if c.node_selector:
        data["node_selector"] = dict(c.node_selector)
    if c.required is not None:
        data["affinity"] = {"node": {"required": [_term_data(t) for t in c.required]}}
    if c.tolerations:
        data["tolerations"] = [_toleration_data(t) for t in c.tolerations]
    return data


def _taint_data(t: Taint) -> dict[str, str]:
    data = {"key": t.key, "effect": t.effect}
    if t.value:
        data["value"] = t.value
    return data


def _toleration_data(t: Toleration) -> dict[str, str]:
    data: dict[str, str] = {}
    if t.key:
        data["key"] = t.key
    data["operator"] = t.operator
    if t.value:
        data["value"] = t.value
    if t.effect:
        data["effect"] = t.effect
    return data


def _term_data(term: Term) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if term.expressions:
        data["match_expressions"] = [_requirement_data(e) for e in term.expressions]
    if term.fields:
        data["match_fields"] = [_requirement_data(f) for f in term.fields]
    return data


def _requirement_data(req: Requirement) -> dict[str, Any]:
    data: dict[str, Any] = {"key": req.key, "operator": req.operator}
    if req.values:
        data["values"] = list(req.values)
    return data
