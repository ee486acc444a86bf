"""Field and label selectors as the Kubernetes API reads them (the subset pods and nodes use)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

Predicate = Callable[[Mapping[str, Any]], bool]

# Field paths the real API accepts per resource; any other is a 400 there too.
FIELD_PATHS: dict[str, frozenset[str]] = {
    "pods": frozenset(
        {
            "metadata.name",
            "metadata.namespace",
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        }
    ),
    "nodes": frozenset({"metadata.name", "spec.unschedulable"}),
    "poddisruptionbudgets": frozenset({"metadata.name", "metadata.namespace"}),
    "resourcequotas": frozenset({"metadata.name", "metadata.namespace"}),
    "configmaps": frozenset({"metadata.name", "metadata.namespace"}),
    "podgroups": frozenset({"metadata.name", "metadata.namespace"}),
    "queues": frozenset({"metadata.name"}),
    "horizontalpodautoscalers": frozenset({"metadata.name", "metadata.namespace"}),
}


def _field_value(obj: Mapping[str, Any], path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    if value is None:
        return "false" if path in ("spec.hostNetwork", "spec.unschedulable") else ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def field_selector(text: str, resource: str) -> Predicate:
    """`spec.nodeName=n1,status.phase!=Failed`; ValueError names an unsupported field."""
    terms: list[tuple[str, bool, str]] = []
    for raw in text.split(","):
        term = raw.strip()
        if not term:
            continue
        match = re.fullmatch(r"([A-Za-z0-9_.]+)\s*(!=|==|=)\s*(.*)", term)
        if match is None:
            raise ValueError(f"invalid field selector term {term!r}")
        path, op, value = match.groups()
        if path not in FIELD_PATHS[resource]:
            raise ValueError(f'field label not supported: "{path}"')
        terms.append((path, op != "!=", value))

    def matches(obj: Mapping[str, Any]) -> bool:
        return all((_field_value(obj, path) == value) == equal for path, equal, value in terms)

    return matches


_REQUIREMENT = re.compile(
    r"""\s*(?:
        (?P<not>!)\s*(?P<absent>[\w./-]+)
      | (?P<setkey>[\w./-]+)\s+(?P<setop>in|notin)\s*\((?P<values>[^)]*)\)
      | (?P<key>[\w./-]+)\s*(?:(?P<op>!=|==|=)\s*(?P<value>[\w.-]*))?
    )\s*(?:,|$)""",
    re.VERBOSE,
)


def label_selector(text: str) -> Predicate:
    """Equality and set-based label selectors: `a=b,c!=d,e in (x,y),f notin (z),g,!h`."""
    checks: list[Callable[[Mapping[str, str]], bool]] = []
    position = 0
    text = text.strip()
    while position < len(text):
        match = _REQUIREMENT.match(text, position)
        if match is None or match.end() == position:
            raise ValueError(f"unable to parse requirement at {text[position:]!r}")
        position = match.end()
        checks.append(_requirement(match))

    def matches(obj: Mapping[str, Any]) -> bool:
        metadata = obj.get("metadata") or {}
        labels = metadata.get("labels") or {}
        return all(check(labels) for check in checks)

    return matches


def _requirement(match: re.Match[str]) -> Callable[[Mapping[str, str]], bool]:
    if match["absent"]:
        key = match["absent"]
        return lambda labels: key not in labels
    if match["setkey"]:
        key, inside = match["setkey"], match["setop"] == "in"
        values = {v.strip() for v in match["values"].split(",") if v.strip()}
        if inside:
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    key, op, value = match["key"], match["op"], match["value"]
    if op is None:
        return lambda labels: key in labels
    if op == "!=":
        return lambda labels: labels.get(key) != value
    return lambda labels: labels.get(key) == value
