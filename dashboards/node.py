"""Node and card dashboard: per card memory, core, mode, health, vGPUs and free memory; the
MIG instances of cards in MIG mode (dashboards.mig)."""

from __future__ import annotations

from advisor import metricnames as M
from dashboards.board import dashboard as build_dashboard
from dashboards.board import variables
from dashboards.common import CARD, CARD_LEGEND, NODE, VGPU, VGPU_LEGEND, Json, link_to_workload
from dashboards.mig import mig_row
from dashboards.panels import (
    HEALTH_MAPPING,
    MODE_MAPPING,
    SUCCESS_MAPPING,
    Layout,
    Query,
    heatmap,
    stat,
    state_timeline,
    status_heat,
    steps,
    table,
    timeseries,
)
from dashboards.shared_panels import IN_USE_STEPS, card_count, unhealthy_cards, vgpu_count

FREE = f"{M.CARD_MEMORY_TOTAL}{{{CARD}}} - {M.CARD_MEMORY_ALLOTTED}{{{CARD}}}"


def _overview(layout: Layout) -> None:
    layout.row("Nodes")
    panels = [
        card_count("Cards on the selected nodes."),
        vgpu_count("vGPUs on these cards."),
        unhealthy_cards(),
        stat(
            "Unused cards",
            "Cards with no vGPU (gpu_schedule_policy = 2): free for any request.",
            Query(f"count({M.SCHEDULE_POLICY}{{{CARD}}} == 2) or vector(0)"),
            "none",
        ),
        stat(
            "Failing collectors",
            "Exporter collectors whose last run failed; their series are missing or stale.",
            Query(f"count({M.COLLECTOR_SUCCESS}{{{NODE}}} == 0) or vector(0)"),
            "none",
            thresholds=steps("green", (1, "red")),
            color_mode="background",
        ),
        stat(
            "NVML errors",
            "Failed NVML calls per second on the selected nodes.",
            Query(f"sum(rate({M.NVML_ERRORS}{{{NODE}}}[$__rate_interval])) or vector(0)"),
            "cps",
            thresholds=steps("green", (0.001, "orange")),
        ),
    ]
    for panel in panels:
        layout.add(panel, 4, 4)


def _memory(layout: Layout) -> None:
    layout.row("Cards: memory")
    layout.add(
        timeseries(
            "Memory allotted per card",
            "Sum of the vGPUs' memory allotments on each card.",
            [Query(f"{M.CARD_MEMORY_ALLOTTED}{{{CARD}}}", CARD_LEGEND)],
            "bytes",
            min_value=0,
        ),
        8,
        8,
    )
    layout.add(
        timeseries(
            "Memory used per card",
            "Memory in use on each card (NVML, any process).",
            [Query(f"{M.CARD_MEMORY_USED}{{{CARD}}}", CARD_LEGEND)],
            "bytes",
            min_value=0,
        ),
        8,
        8,
    )
    layout.add(
        timeseries(
            "Memory allotted / physical per card",
            "Allotted / physical memory of each card (0-100 %).",
            [
                Query(
                    f"{M.CARD_MEMORY_ALLOTTED}{{{CARD}}} / ({M.CARD_MEMORY_TOTAL}{{{CARD}}} > 0)",
                    CARD_LEGEND,
                )
            ],
            "percentunit",
            min_value=0,
            max_value=1,
        ),
        8,
        8,
    )
    layout.add(
        timeseries(
            "Allotted memory in use per card",
            "Memory the card's vGPUs use / memory allotted on the card (0-100 %); cards "
            "without vGPUs have no value.",
            [Query(f"{M.NODE_GPU_ALLOTTED_USAGE}{{{CARD}}}", CARD_LEGEND)],
            "percentunit",
            min_value=0,
            max_value=1,
            thresholds=IN_USE_STEPS,
        ),
        12,
        8,
    )
    layout.add(
        timeseries(
            "Unattributed memory per card",
            "Memory used by processes that belong to no known vGPU (system processes, "
            "pods outside the vGPU scheduler, or attribution failing).",
            [Query(f"{M.CARD_UNATTRIBUTED}{{{CARD}}}", CARD_LEGEND)],
            "bytes",
            min_value=0,
        ),
        12,
        8,
    )


def _core_and_state(layout: Layout) -> None:
    layout.row("Cards: core")
    layout.add(
        timeseries(
            "Core allotted per card",
            "Sum of the vGPUs' core allotments / 100 (0-100 %); only memory+core cards allot core.",
            [Query(f"{M.CARD_CORE_ALLOTTED}{{{CARD}}}", CARD_LEGEND)],
            "percentunit",
            min_value=0,
            max_value=1,
        ),
        12,
        8,
    )
    layout.add(
        timeseries(
            "SM utilisation per card",
            "Share of the card's SMs busy (NVML, 0-100 %).",
            [Query(f"{M.CARD_UTILIZATION}{{{CARD}}}", CARD_LEGEND)],
            "percentunit",
            min_value=0,
            max_value=1,
        ),
        12,
        8,
    )

    layout.row("Cards: mode, health, vGPUs")
    layout.add(
        state_timeline(
            "Mode",
            "Isolation mode (gpu_schedule_policy): memory, memory+core, or unused (no vGPU). "
            "CCE xGPU keeps one mode per card; under HAMi and Volcano vGPU, memory+core means "
            "some vGPU on the card asks for core.",
            Query(f"{M.SCHEDULE_POLICY}{{{CARD}}}", CARD_LEGEND),
            MODE_MAPPING,
        ),
        12,
        8,
    )
    layout.add(
        state_timeline(
            "Health",
            "Card health as NVML reports it (xgpu_device_health).",
            Query(f"{M.DEVICE_HEALTH}{{{CARD}}}", CARD_LEGEND),
            HEALTH_MAPPING,
        ),
        12,
        8,
    )
    layout.add(
        timeseries(
            "vGPUs per card",
            "vGPUs allotted on each card.",
            [Query(f"{M.CARD_VGPUS}{{{CARD}}}", CARD_LEGEND)],
            "none",
            min_value=0,
            decimals=0,
            stepped=True,
        ),
        12,
        8,
    )
    layout.add(
        table(
            "Cards",
            "Model, driver and physical memory of each card.",
            [
                Query(
                    f"{M.CARD_MEMORY_TOTAL}{{{CARD}}}"
                    " * on (node, gpu_uuid) group_left (model, driver_version)"
                    f" {M.CARD_INFO}{{{CARD}}}",
                    instant=True,
                )
            ],
            "bytes",
            rename={"Value": "Physical memory", "gpu_index": "GPU", "gpu_uuid": "UUID"},
        ),
        12,
        8,
    )


def _free_and_vgpus(layout: Layout) -> None:
    layout.row("Free memory per card")
    layout.add(
        status_heat(
            "Free memory per card",
            "Physical minus allotted memory of each card over time: where a new vGPU of "
            "a given size still fits (red: little free).",
            Query(FREE, CARD_LEGEND),
            "bytes",
        ),
        14,
        9,
    )
    layout.add(
        heatmap(
            "Cards by free memory",
            "How many cards have how much free (unallotted) memory at each time. Many "
            "cards with a little free each is fragmentation.",
            Query(FREE, CARD_LEGEND),
            "bytes",
        ),
        10,
        9,
    )

    layout.row("vGPUs on these cards")
    layout.add(
        timeseries(
            "Memory used per vGPU",
            "Memory used by each vGPU's processes. Click a series for its workload.",
            [Query(f"{M.MEMORY_USED}{{{VGPU}}}", VGPU_LEGEND)],
            "bytes",
            min_value=0,
            links=[link_to_workload()],
        ),
        12,
        8,
    )
    layout.add(
        timeseries(
            "Core used per vGPU",
            "Share of the card's SMs each vGPU's processes use (0-100 %).",
            [Query(f"{M.CORE_USED}{{{VGPU}}}", VGPU_LEGEND)],
            "percent",
            min_value=0,
            max_value=100,
            links=[link_to_workload()],
        ),
        12,
        8,
    )

    mig_row(layout)

    layout.row("Exporter")
    layout.add(
        state_timeline(
            "Collectors",
            "Whether each exporter collector's last run succeeded.",
            Query(f"{M.COLLECTOR_SUCCESS}{{{NODE}}}", "{{node}} {{collector}}"),
            SUCCESS_MAPPING,
        ),
        12,
        8,
    )
    layout.add(
        timeseries(
            "NVML errors per node",
            "Failed NVML calls per second; 0 on nodes that have had none.",
            [
                Query(
                    f"sum by (node) (rate({M.NVML_ERRORS}"
                    f"{{{NODE}}}[$__rate_interval]))"
                    f" or on (node) sum by (node) (0 * {M.NODE_INFO}{{{NODE}}})",
                    "{{node}}",
                )
            ],
            "cps",
            min_value=0,
        ),
        12,
        8,
    )


def dashboard() -> Json:
    layout = Layout()
    _overview(layout)
    _memory(layout)
    _core_and_state(layout)
    _free_and_vgpus(layout)
    return build_dashboard(
        "node",
        "xgpu-insight / Node and card",
        "Per node and per card: memory allotted and used, core, mode, health, vGPUs.",
        layout,
        variables(),
    )
