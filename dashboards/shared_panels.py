"""Panels that stand on more than one dashboard, built in one place so they stay alike.

Each dashboard places them itself (width, height); descriptions that differ on purpose,
to suit the dashboard around them, are arguments.
"""

from __future__ import annotations

from advisor import metricnames as M
from dashboards.common import CARD, CLUSTER, NODE, Panel
from dashboards.panels import Query, stat, steps, timeseries

# Share of the allotted memory the vGPUs use: low is waste, so red is at the bottom.
IN_USE_STEPS = steps("red", (0.3, "orange"), (0.6, "green"))
# The advisor publishes one set of series per run (textfile or Pushgateway); `max` keeps
# one value when more than one source carries them.
PENDING_BY_CAUSE = f"max by (cause) ({M.PENDING_PODS}{{{CLUSTER}}})"
STRANDED = f"max({M.STRANDED_MEMORY}{{{CLUSTER}}})"
FRAGMENTATION = f"max({M.FRAGMENTATION}{{{CLUSTER}}})"
# Stranded memory is what makes pods wait: free memory on healthy cards that no Pending
# pod can use. Any of it is a finding (the report's tile says the same), none is fine,
# whatever FGD's fragmentation ratio reads (it counts free memory the typical requests
# cannot use, waiting pods or not: 80 % of a few free MiB with nothing Pending is no news).
STRANDED_STEPS = steps("green", (1, "red"))


def card_count(description: str) -> Panel:
    return stat("GPU cards", description, Query(f"count({M.CARD_MEMORY_TOTAL}{{{CARD}}})"), "none")


def vgpu_count(description: str, *, whole_nodes: bool = False) -> Panel:
    """`whole_nodes`: from the node-level recording rule (the GPU selection does not apply)."""
    series = f"sum({M.NODE_VGPUS}{{{NODE}}})" if whole_nodes else f"sum({M.CARD_VGPUS}{{{CARD}}})"
    return stat("vGPUs", description, Query(series), "none")


def unhealthy_cards() -> Panel:
    return stat(
        "Unhealthy cards",
        "Cards NVML reports unhealthy (xgpu_device_health = 1).",
        Query(f"count({M.DEVICE_HEALTH}{{{CARD}}} == 1) or vector(0)"),
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


def stranded_tile() -> Panel:
    """The fragmentation tile: stranded memory as the headline and its colour; FGD's
    fragmentation ratio beside it, in the text colour."""
    return stat(
        "Stranded memory",
        "Free memory on healthy cards that no Pending pod can use: what makes pods wait on "
        "fragmentation (red when there is any). Beside it, FGD fragmentation: the share of "
        "the free memory the typical requests cannot use, Pending pods or not.",
        Query(STRANDED, "stranded"),
        "bytes",
        thresholds=STRANDED_STEPS,
        color_mode="background",
        asides=[(Query(FRAGMENTATION), "fragmentation (FGD)", "percentunit")],
    )


def fragmentation() -> Panel:
    return timeseries(
        "Fragmentation",
        "FGD fragmentation: share of the free memory the typical requests cannot use "
        "(0-100 %), Pending pods or not. Stranded memory says whether it holds pods back.",
        [Query(FRAGMENTATION, "fragmented share of free memory")],
        "percentunit",
        min_value=0,
        max_value=1,
    )


def stranded_memory() -> Panel:
    return timeseries(
        "Stranded memory",
        "Free memory on healthy cards that no Pending pod can use.",
        [Query(STRANDED, "stranded")],
        "bytes",
        min_value=0,
    )


def bytes_by_namespace(title: str, description: str, series: str) -> Panel:
    """`series` (bytes, with a `namespace` label) summed per namespace, stacked."""
    return timeseries(
        title,
        description,
        [Query(f"sum by (namespace) ({series})", "{{namespace}}")],
        "bytes",
        min_value=0,
        stacked=True,
    )
