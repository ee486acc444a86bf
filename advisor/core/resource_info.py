"""Volcano's resources (pkg/scheduler/api/resource_info.go) on dicts, by resource name: what
the queues of the cycle (core.queues, core.session) and of preemption (core.preemption)
count and compare.

- Units as NewResource counts them: cpu in millicores, memory in bytes, `pods` in pods,
  every other resource in thousandths; a quantity below `MIN_RESOURCE` counts as none.
- `pods` is a scalar like any other (NewResource adds the list's; GetPodResourceRequest
  one per task), so Add, Sub, LessEqual, MinDimensionResource, Diff and ResourceNames
  count it, but the comparisons that skip `ignoredScalarResources` (IsEmpty and the
  ...WithDimension family) leave it out (`IGNORED`; Volcano v1.15.1
  pkg/scheduler/api/resource_info.go).
- The operations the proportion, overcommit and allocate code asks of them (Add, Sub,
  ExceededPart, LessEqual, LessEqualWithDimensionAndResourcesName, MinDimensionResource),
  a resource missing from a dict being zero unless said otherwise.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from advisor.core.jobs import ResourceList
from advisor.core.quantity import quantity_milli, quantity_units

Res = dict[str, float]
MIN_RESOURCE = 0.1  # resource_info.go minResource: below it a quantity counts as none
BASIC = ("cpu", "memory")
PODS = "pods"
IGNORED = frozenset({PODS})  # resource_info.go ignoredScalarResources


def resource_list(values: ResourceList) -> Res:
    """A resource list in Volcano's units (NewResource: memory and `pods` by Value, the
    others by MilliValue); count quotas left out."""
    out: Res = {}
    for name, text in values.items():
        if name.startswith("count/"):
            continue
        whole = name in ("memory", PODS)
        out[name] = float(quantity_units(text) if whole else quantity_milli(text))
    return out


def add(left: Mapping[str, float], right: Mapping[str, float]) -> Res:
    out = dict(left)
    for name, value in right.items():
        out[name] = out.get(name, 0.0) + value
    return out


def accumulate(into: Res, right: Mapping[str, float]) -> None:
    """`add` in place: a running total over thousands of pods without a copy per pod."""
    for name, value in right.items():
        into[name] = into.get(name, 0.0) + value


def sub(left: Mapping[str, float], right: Mapping[str, float]) -> Res:
    return add(left, {name: -value for name, value in right.items()})


def exceeded(left: Mapping[str, float], right: Mapping[str, float]) -> Res:
    """ExceededPart: what `left` has beyond `right`, per resource (missing: zero). A scalar
    not beyond is left out, not zero (resource_info.go Diff): so a realCapability whose
    scalar the guarantees use up does not limit it (MinDimensionResource, Infinity)."""
    names = set(left) | set(right) | set(BASIC)
    diff = {n: left.get(n, 0.0) - right.get(n, 0.0) for n in sorted(names)}
    return {n: max(d, 0.0) for n, d in diff.items() if n in BASIC or d > 0}


def less_equal(left: Mapping[str, float], right: Mapping[str, float]) -> bool:
    """LessEqual(rr, Zero): every resource of `left` within `right` (missing: zero)."""
    names = set(left) | set(BASIC)
    return all(_within(left.get(n, 0.0), right.get(n, 0.0)) for n in names)


def _within(left: float, right: float) -> bool:
    return left <= right or abs(left - right) < MIN_RESOURCE


def short_of(
    left: Mapping[str, float], right: Mapping[str, float], req: Mapping[str, float]
) -> list[str]:
    """LessEqualWithDimensionAndResourcesName: the resources `req` asks (above zero) in
    which `left` exceeds `right` (missing: zero), cpu and memory first, then by name;
    `pods` never."""
    names = [n for n in BASIC if req.get(n, 0.0) > 0]
    names += sorted(n for n in req if n not in BASIC and n not in IGNORED and req[n] > 0)
    return [n for n in names if left.get(n, 0.0) > right.get(n, 0.0)]


def cap(value: Mapping[str, float], limit: Mapping[str, float], missing_unlimited: bool) -> Res:
    """MinDimensionResource: each resource of `value` at most `limit`'s; a resource `limit`
    lacks is kept (Infinity) or zeroed (Zero)."""
    out: Res = {}
    for name, amount in value.items():
        if name in limit:
            out[name] = min(amount, limit[name])
        elif name in BASIC:
            out[name] = min(amount, 0.0)
        else:
            out[name] = amount if missing_unlimited else 0.0
    return out


def names_of(value: Mapping[str, float]) -> list[str]:
    """ResourceNames: those at least MIN_RESOURCE, `pods` included."""
    return [n for n in sorted(value) if value[n] >= MIN_RESOURCE]


def is_empty(value: Mapping[str, float]) -> bool:
    """IsEmpty: nothing but `pods` at least MIN_RESOURCE."""
    return all(n in IGNORED for n in names_of(value))


def share(allocated: Mapping[str, float], deserved: Mapping[str, float]) -> float:
    """updateQueueAttrShare: the largest allocated/deserved over deserved's resources."""
    out = 0.0
    for name in names_of(deserved):
        d, a = deserved[name], allocated.get(name, 0.0)
        out = max(out, (0.0 if a == 0 else 1.0) if d == 0 else a / d)
    return out


def words(names: Iterable[str]) -> str:
    """A resource as Volcano's messages name it (util.FormatResourceNames)."""
    return ", ".join(names)
