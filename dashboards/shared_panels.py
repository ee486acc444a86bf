"""Panels that stand on more than one dashboard, built in one place so they stay alike.

Each dashboard places them itself (width, height); descriptions that differ on purpose,
to suit the dashboard around them, are arguments.
"""

from __future__ import annotations

from dashboards.common import CARD, Panel
from dashboards.panels import Query, stat, steps, timeseries

# Share of the allotted memory the vGPUs use: low is waste, so red is at the bottom.
IN_USE_STEPS = steps("red", (0.3, "orange"), (0.6, "green"))
# The advisor publishes one set of series per run (textfile or Pushgateway); `max` keeps
# one value when more than one source carries them.
PENDING_BY_CAUSE = "max by (cause) (xgpu_advisor_pending_pods)"


def card_count(description: str) -> Panel:
    return stat(
        "GPU cards", description, Query(f"count(xgpu_card_memory_total_bytes{{{CARD}}})"), "none"
    )


def vgpu_count(description: str) -> Panel:
    return stat("vGPUs", description, Query(f"sum(xgpu_card_vgpus{{{CARD}}})"), "none")


def unhealthy_cards() -> Panel:
    return stat(
        "Unhealthy cards",
        "Cards NVML reports unhealthy (xgpu_device_health = 1).",
        Query(f"count(xgpu_device_health{{{CARD}}} == 1) or vector(0)"),
        "none",
        thresholds=steps("green", (1, "red")),
        color_mode="background",
    )


def pending_by_cause(description: str) -> Panel:
    return timeseries(
        "Pending GPU pods by cause",
        description,
        [Query(PENDING_BY_CAUSE, "{{cause}}")],
        "none",
        decimals=0,
        stacked=True,
        bars=True,
    )


def fragmentation() -> Panel:
    return timeseries(
        "Fragmentation",
        "FGD fragmentation: share of the free memory no Pending pod size can use (0-100 %).",
        [Query("max(xgpu_advisor_fragmentation_ratio)", "fragmented share of free memory")],
        "percentunit",
        min_value=0,
        max_value=1,
        thresholds=steps("green", (0.3, "orange"), (0.5, "red")),
    )


def stranded_memory() -> Panel:
    return timeseries(
        "Stranded memory",
        "Free memory on healthy cards that no Pending pod can use.",
        [Query("max(xgpu_advisor_stranded_memory_bytes)", "stranded")],
        "bytes",
        min_value=0,
    )


def bytes_by_namespace(title: str, description: str, series: str) -> Panel:
    """`series` (bytes, with vGPU labels) summed per namespace, stacked."""
    return timeseries(
        title,
        description,
        [Query(f"sum by (namespace) ({series})", "{{namespace}}")],
        "bytes",
        min_value=0,
        stacked=True,
    )
