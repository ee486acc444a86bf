"""The scenario key `autoscalers` (docs/design.md §12.1): HorizontalPodAutoscalers, read
strictly and written back in the same form. Absent, nothing is written for it.

```yaml
autoscalers:
  - {name: web/infer-hpa, target: Deployment/web/infer, min_replicas: 2, max_replicas: 10,
     replicas: 4, metrics: [{pod_metric: xgpu_core_percentage_used, target_average: 60}]}
```
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from advisor.core.hpa import Autoscaler, PodMetric
from advisor.scenario.strict import Reader, kind

AUTOSCALER_KEYS = ("autoscalers",)  # top-level
_KEYS = {"name", "target", "min_replicas", "max_replicas", "replicas", "metrics"}
_REQUIRED = {"name", "target", "max_replicas", "replicas"}


def read_autoscalers(r: Reader, top: Mapping[str, Any]) -> tuple[Autoscaler, ...]:
    listed = r.sequence(top.get("autoscalers", []), "autoscalers")
    out = tuple(_autoscaler(r, raw, f"autoscalers[{i}]") for i, raw in enumerate(listed))
    seen: set[str] = set()
    for i, a in enumerate(out):
        if a.name in seen:
            raise r.fail(f"autoscalers[{i}].name", f"duplicate autoscaler name {a.name!r}")
        seen.add(a.name)
    return out


def _autoscaler(r: Reader, raw: object, where: str) -> Autoscaler:
    m = r.mapping(raw, where, _KEYS, _REQUIRED)
    name = r.string(m["name"], f"{where}.name")
    parts = name.split("/")
    if len(parts) != 2 or not all(parts):
        raise r.fail(f"{where}.name", f"expected namespace/name, got {name!r}")
    target = r.string(m["target"], f"{where}.target")
    kind_ns_name = target.split("/")
    if len(kind_ns_name) != 3 or not all(kind_ns_name):
        raise r.fail(f"{where}.target", f"expected Kind/namespace/name, got {target!r}")
    if kind_ns_name[1] != parts[0]:  # scaleTargetRef names an object of the HPA's namespace
        raise r.fail(f"{where}.target", f"{target!r} is not in the namespace {parts[0]!r}")
    low = r.integer(m.get("min_replicas", 1), f"{where}.min_replicas", 0)
    high = r.integer(m["max_replicas"], f"{where}.max_replicas", 1)
    if high < low:
        raise r.fail(f"{where}.max_replicas", f"below min_replicas ({high} < {low})")
    replicas = r.integer(m["replicas"], f"{where}.replicas", 0)
    metrics = tuple(
        _metric(r, item, f"{where}.metrics[{i}]")
        for i, item in enumerate(r.sequence(m.get("metrics", []), f"{where}.metrics"))
    )
    return Autoscaler(name, target, low, high, replicas, metrics)


def _metric(r: Reader, raw: object, where: str) -> PodMetric:
    m = r.mapping(raw, where, {"pod_metric", "target_average"}, {"pod_metric", "target_average"})
    value = m["target_average"]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise r.fail(f"{where}.target_average", f"expected a number, got {kind(value)}")
    if not math.isfinite(value) or value <= 0:
        raise r.fail(f"{where}.target_average", f"must be a positive number, got {value!r}")
    return PodMetric(r.string(m["pod_metric"], f"{where}.pod_metric"), float(value))


def autoscalers_data(autoscalers: tuple[Autoscaler, ...]) -> dict[str, Any]:
    """The top-level `autoscalers` key, only when there are some."""
    if not autoscalers:
        return {}
    return {"autoscalers": [_data(a) for a in autoscalers]}


def _data(a: Autoscaler) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": a.name,
        "target": a.target,
        "min_replicas": a.min_replicas,
        "max_replicas": a.max_replicas,
        "replicas": a.replicas,
    }
    if a.metrics:
        data["metrics"] = [
            {"pod_metric": x.pod_metric, "target_average": _number(x.target_average)}
            for x in a.metrics
        ]
    return data


def _number(value: float) -> int | float:
    """60.0 written as 60, as the user wrote it."""
    return int(value) if value.is_integer() else value
