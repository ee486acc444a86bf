"""The scale-up advice's node templates and the pods no template admits, as text both
renderers show (read tolerantly, like the rest of the report)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from advisor.render._common import as_int, as_list, as_map, as_str
from advisor.render.report_data import fmt_mib


def shape_text(shape: Mapping[str, Any]) -> str:
    """A node template: "4 × 40960 MiB cards, A100; cpu 94, memory 720Gi, pods 110;
    labels pool=a; taint k=v:NoSchedule" (the parts after the cards only when it has them)."""
    model = as_str(shape.get("model")) or "any model"
    parts = [f"{as_int(shape.get('cards'))} × {fmt_mib(shape.get('memory_mib'))} cards, {model}"]
    allocatable = as_map(shape.get("allocatable"))
    figures = [
        f"{key} {value}"
        for key in ("cpu", "memory", "pods")
        if isinstance(value := allocatable.get(key), str | int) and not isinstance(value, bool)
    ]
    if figures:
        parts.append(", ".join(figures))
    labels = as_map(shape.get("labels"))
    if labels:
        parts.append("labels " + ", ".join(f"{k}={as_str(v)}" for k, v in sorted(labels.items())))
    for raw in as_list(shape.get("taints")):
        taint = as_map(raw)
        value = as_str(taint.get("value"))
        parts.append(
            f"taint {as_str(taint.get('key'), '?')}{'=' + value if value else ''}"
            f":{as_str(taint.get('effect'), '?')}"
        )
    return "; ".join(parts)


NOT_TRIGGERED_TITLE = "Pods no new node would help"
NOT_TRIGGERED_HEADER = ["Pod", "Why (the cluster-autoscaler's reason)"]


def not_triggered_rows(plan: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Pending pods that no node group's template admits (a selector, affinity or taint
    excludes them, or its allocatable is too small), with the autoscaler's reason."""
    return [
        (as_str(entry.get("pod"), "?"), as_str(entry.get("reason"), "?"))
        for entry in map(as_map, as_list(plan.get("scale_up_not_triggered")))
    ]
