"""The node dashboard's MIG row (docs/design.md §13): the GPU instances of the cards in MIG
mode, by profile, their memory used against their size, each card's uncut slices, and the
pods whose processes use them."""

from __future__ import annotations

from advisor import metricnames as M
from dashboards.common import CARD, CARD_LEGEND
from dashboards.panels import Layout, Query, timeseries

INSTANCE_LEGEND = f"{CARD_LEGEND} {{{{GPU_I_PROFILE}}}} at slice {{{{mig_start}}}}"
SLICES = 8  # memory slices of every card with MIG (advisor.core.mig.SLICES)
_CARD_ON = "on (cluster, node, gpu_uuid)"

# An instance's memory slices, from series alone: its memory over an eighth of its card's,
# rounded up (every profile's memory is a little under its slices', never a slice less:
# advisor.core.mig's tables), summed per card; a card in MIG mode with no instance has all 8.
FREE_SLICES = (
    f"{SLICES} - sum by (cluster, node, gpu_index, gpu_uuid) (ceil("
    f"{M.MIG_MEMORY_TOTAL}{{{CARD}}} / {_CARD_ON} group_left () "
    f"({M.CARD_MEMORY_TOTAL}{{{CARD}}} / {SLICES})))"
    f" or {_CARD_ON} {SLICES} * ({M.CARD_MIG_MODE}{{{CARD}}} == 1)"
)


def mig_row(layout: Layout) -> None:
    layout.row("MIG instances")
    layout.add(
        timeseries(
            "MIG instances by profile",
            "GPU instances on the selected cards in MIG mode, by profile (NVML; as "
            "dcgm-exporter names them). A MIG pod asks one of these, not a vGPU.",
            [
                Query(
                    f"count by (GPU_I_PROFILE) ({M.MIG_MEMORY_TOTAL}{{{CARD}}})",
                    "{{GPU_I_PROFILE}}",
                )
            ],
            "none",
            min_value=0,
            decimals=0,
            stepped=True,
        ),
        8,
        8,
    )
    layout.add(
        timeseries(
            "MIG instance memory: used vs total",
            "Memory in use in each GPU instance against its size (NVML). An instance that "
            "uses next to nothing is held by no pod, or by an idle one.",
            [
                Query(f"{M.MIG_MEMORY_USED}{{{CARD}}}", f"{INSTANCE_LEGEND} used"),
                Query(f"{M.MIG_MEMORY_TOTAL}{{{CARD}}}", f"{INSTANCE_LEGEND} total"),
            ],
            "bytes",
            min_value=0,
        ),
        8,
        8,
    )
    layout.add(
        timeseries(
            "Free MIG slices per card",
            f"Memory slices (of {SLICES}) no GPU instance takes on each card in MIG mode: "
            "room for new instances without destroying any. An instance's slices are its "
            f"memory over 1/{SLICES} of its card's, rounded up. Idle instances could be "
            "destroyed for more (the advisor's mig-geometry cause).",
            [Query(FREE_SLICES, CARD_LEGEND)],
            "none",
            min_value=0,
            max_value=SLICES,
            decimals=0,
            stepped=True,
        ),
        8,
        8,
    )
    layout.add(
        timeseries(
            "MIG instance memory by pod",
            "Memory each pod's containers use in the GPU instance their processes run in "
            "(NVML, attributed through /proc): which instance a MIG pod holds. A pod that "
            "holds an instance but runs no GPU process is not shown.",
            [
                Query(
                    f"{M.MIG_POD_MEMORY_USED}{{{CARD}}}",
                    f"{INSTANCE_LEGEND} {{{{namespace}}}}/{{{{pod}}}} {{{{container}}}}",
                )
            ],
            "bytes",
            min_value=0,
        ),
        24,
        8,
    )
