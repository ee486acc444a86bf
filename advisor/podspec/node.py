"""What kube-scheduler reads of a Node object (docs/design.md §9.1): allocatable cpu, memory
and pod slots, labels, taints and the cordon.

Tolerant like `parse_pod`: every unreadable value becomes an entry of `problems` naming the
field, and counts as absent: an allocatable that cannot be read limits nothing, a taint that
cannot be read (no effect, an unknown one) filters nothing, as kube-scheduler's
TaintToleration only ever filters on NoSchedule and NoExecute.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, cast

from advisor.core.nodefilters import EFFECTS, NOT_KNOWN, Allocatable, Effect, Taint
from advisor.core.quantity import quantity_milli, quantity_units, show
from advisor.podspec import fields
from advisor.podspec.scheduling import label_map


def _no_labels() -> Mapping[str, str]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class NodeScheduling:
    allocatable: Allocatable = NOT_KNOWN
    labels: Mapping[str, str] = field(default_factory=_no_labels, compare=False)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    problems: tuple[str, ...] = ()


def read_node_scheduling(obj: object) -> NodeScheduling:
    if not isinstance(obj, dict):
        return NodeScheduling(problems=("the node is not an object",))
    problems: list[str] = []
    metadata = fields.obj(obj.get("metadata"), "metadata", problems)
    spec = fields.obj(obj.get("spec"), "spec", problems)
    status = fields.obj(obj.get("status"), "status", problems)
    allocatable = fields.obj(status.get("allocatable"), "status.allocatable", problems)
    unschedulable = spec.get("unschedulable", False)
    if not isinstance(unschedulable, bool):
        problems.append(f"spec.unschedulable {show(unschedulable)} is not true or false")
        unschedulable = False
    taints = tuple(
        taint
        for i, raw in enumerate(fields.array(spec.get("taints"), "spec.taints", problems))
        if (taint := _taint(raw, f"spec.taints[{i}]", problems)) is not None
    )
    return NodeScheduling(
        Allocatable(
            cpu_milli=_quantity(allocatable, "cpu", quantity_milli, problems),
            memory_bytes=_quantity(allocatable, "memory", quantity_units, problems),
            pods=_quantity(allocatable, "pods", quantity_units, problems),
        ),
        MappingProxyType(label_map(metadata.get("labels"), "metadata.labels", problems)),
        taints,
        unschedulable,
        tuple(problems),
    )


def _quantity(
    allocatable: dict[Any, Any], key: str, parse: Callable[[object], int], problems: list[str]
) -> int | None:
    if key not in allocatable:
        return None
    try:
        return parse(allocatable[key])
    except ValueError as error:
        problems.append(f"status.allocatable.{key} {error}")
        return None


def _taint(raw: object, where: str, problems: list[str]) -> Taint | None:
    if not isinstance(raw, dict):
        problems.append(f"{where} is not an object")
        return None
    before = len(problems)
    key = fields.text(raw.get("key"), f"{where}.key", problems, required=True)
    value = fields.text(raw.get("value"), f"{where}.value", problems) or ""
    effect = raw.get("effect")
    if effect is None:
        problems.append(f"{where}.effect is missing")
    elif effect not in EFFECTS:
        problems.append(f"{where}.effect {show(effect)} is not one of {', '.join(EFFECTS)}")
    if key == "":
        problems.append(f"{where}.key is empty")
    if len(problems) > before or not key:
        return None
    return Taint(key, cast(Effect, effect), value)
