"""Reading loosely typed JSON: every wrong type becomes a problem string, never an error."""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Any

from advisor.core.quantity import MAX_COUNT, MIN_COUNT, show

_RUNTIME_PREFIX = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def obj(value: object, where: str, problems: list[str]) -> dict[Any, Any]:
    """A JSON object; absent (None) is empty, anything else not an object is a problem."""
    if isinstance(value, dict):
        return value
    if value is not None:
        problems.append(f"{where} is not an object")
    return {}


def array(value: object, where: str, problems: list[str]) -> list[Any]:
    if isinstance(value, list):
        return value
    if value is not None:
        problems.append(f"{where} is not a list")
    return []


def text(value: object, where: str, problems: list[str], *, required: bool = False) -> str | None:
    """A string; absent is None (a problem when required), another type is a problem."""
    if isinstance(value, str):
        return value
    if value is None:
        if required:
            problems.append(f"{where} is missing")
        return None
    problems.append(f"{where} {show(value)} is not a string")
    return None


def integer(value: object, where: str, problems: list[str], default: int) -> int:
    """An int32, as the API keeps a pod's priority; anything else is a problem (`default`)."""
    if value is None:
        return default
    if isinstance(value, int) and not isinstance(value, bool):
        if MIN_COUNT <= value <= MAX_COUNT:
            return value
        problems.append(f"{where} {show(value)} is out of range (an int32)")
        return default
    problems.append(f"{where} {show(value)} is not an integer")
    return default


def string_map(value: object, where: str, problems: list[str]) -> MappingProxyType[str, str]:
    """Labels or annotations, read-only; entries that are not string to string are dropped."""
    kept: dict[str, str] = {}
    for key, item in obj(value, where, problems).items():
        if isinstance(key, str) and isinstance(item, str):
            kept[key] = item
        else:
            problems.append(f"{where}[{show(key)}] {show(item)} is not a string")
    return MappingProxyType(kept)


def container_id(value: object, where: str, problems: list[str]) -> str | None:
    """`containerd://abc` -> `abc`; the runtime prefix (containerd, docker, cri-o) is dropped."""
    raw = text(value, where, problems)
    if not raw:
        return None
    return _RUNTIME_PREFIX.sub("", raw, count=1) or None


def owner(refs: object, namespace: str, problems: list[str]) -> str | None:
    """ "Kind/namespace/name" of the first controller ownerReference, None if there is none."""
    for i, ref in enumerate(array(refs, "metadata.ownerReferences", problems)):
        if not isinstance(ref, dict) or ref.get("controller") is not True:
            continue
        where = f"metadata.ownerReferences[{i}]"
        kind = text(ref.get("kind"), f"{where}.kind", problems, required=True)
        name = text(ref.get("name"), f"{where}.name", problems, required=True)
        if kind and name:
            return f"{kind}/{namespace}/{name}"
    return None
