"""Workload dashboard: per pod and vGPU, memory and core allotted vs used over time."""

from __future__ import annotations

from advisor import metricnames as M
from dashboards.board import dashboard as build_dashboard
from dashboards.board import variables
from dashboards.common import NAMESPACE, POD, VGPU_LEGEND, Json, link_to_node
from dashboards.panels import Layout, Query, stat, steps, timeseries
from dashboards.shared_panels import IN_USE_STEPS, bytes_by_namespace

# Allotted series are drawn dashed so each vGPU's limit reads as a ceiling over its use.
DASHED_ALLOTTED = {
    "matcher": {"id": "byRegexp", "options": "^allotted .*"},
    "properties": [
        {"id": "custom.lineStyle", "value": {"fill": "dash", "dash": [10, 10]}},
        {"id": "custom.fillOpacity", "value": 0},
    ],
}


def dashboard() -> Json:
    layout = Layout()
    layout.row("Selected vGPUs")
    overview = [
        stat(
            "vGPUs",
            "vGPUs of the selected pods.",
            Query(f"count({M.MEMORY_TOTAL}{{{POD}}}) or vector(0)"),
            "none",
        ),
        stat(
            "Memory allotted",
            "Card memory allotted to the selected vGPUs.",
            Query(f"sum({M.MEMORY_TOTAL}{{{POD}}}) or vector(0)"),
            "bytes",
        ),
        stat(
            "Memory used",
            "Card memory the selected vGPUs' processes use.",
            Query(f"sum({M.MEMORY_USED}{{{POD}}}) or vector(0)"),
            "bytes",
        ),
        stat(
            "Allotted memory in use",
            "Used / allotted memory of the selected vGPUs. Low means waste.",
            Query(f"sum({M.MEMORY_USED}{{{POD}}}) / (sum({M.MEMORY_TOTAL}{{{POD}}}) > 0)"),
            "percentunit",
            thresholds=IN_USE_STEPS,
        ),
    ]
    for panel in overview:
        layout.add(panel, 6, 4)

    layout.row("Memory per vGPU")
    layout.add(
        timeseries(
            "Memory allotted vs used",
            "Each vGPU's allotment (dashed) and what its processes use.",
            [
                Query(f"{M.MEMORY_TOTAL}{{{POD}}}", f"allotted {VGPU_LEGEND}"),
                Query(f"{M.MEMORY_USED}{{{POD}}}", f"used {VGPU_LEGEND}"),
            ],
            "bytes",
            min_value=0,
            overrides=[DASHED_ALLOTTED],
            links=[link_to_node()],
        ),
        14,
        9,
    )
    layout.add(
        timeseries(
            "Memory used / allotted",
            "Share of each vGPU's allotment in use (0-100 %). Allocations past 100 % fail "
            "with out-of-memory errors; the XGPUVGPUMemoryNearLimit alert fires at 95 %.",
            [Query(f"{M.MEMORY_USED}{{{POD}}} / ({M.MEMORY_TOTAL}{{{POD}}} > 0)", VGPU_LEGEND)],
            "percentunit",
            min_value=0,
            max_value=1,
            thresholds=steps("green", (0.9, "orange"), (0.95, "red")),
        ),
        10,
        9,
    )

    layout.row("Core per vGPU")
    layout.add(
        timeseries(
            "Core allotted vs used",
            "Each vGPU's core allotment (dashed; vGPUs that ask for core only) and the share of "
            "the card's SMs its processes use, in percent of the card (0-100).",
            [
                Query(f"{M.CORE_TOTAL}{{{POD}}}", f"allotted {VGPU_LEGEND}"),
                Query(f"{M.CORE_USED}{{{POD}}}", f"used {VGPU_LEGEND}"),
            ],
            "percent",
            min_value=0,
            max_value=100,
            overrides=[DASHED_ALLOTTED],
            links=[link_to_node()],
        ),
        14,
        9,
    )
    layout.add(
        timeseries(
            "Core used / allotted",
            "Share of each vGPU's core allotment in use (0-100 %), vGPUs that ask for core only.",
            [
                Query(
                    f"{M.CORE_USED}{{{POD}}} / ({M.CORE_TOTAL}{{{POD}}} > 0)",
                    VGPU_LEGEND,
                )
            ],
            "percentunit",
            min_value=0,
        ),
        10,
        9,
    )

    layout.row("By namespace")
    layout.add(
        bytes_by_namespace(
            "Memory allotted by namespace",
            "Card memory allotted to each namespace's vGPUs, on every node.",
            f"{M.NAMESPACE_ALLOTTED}{{{NAMESPACE}}}",
        ),
        12,
        8,
    )
    layout.add(
        bytes_by_namespace(
            "Memory used by namespace",
            "Card memory each namespace's vGPUs use, on every node.",
            f"{M.NAMESPACE_USED}{{{NAMESPACE}}}",
        ),
        12,
        8,
    )
    return build_dashboard(
        "workload",
        "xgpu-insight / Workload",
        "Per pod and vGPU: memory and core allotted vs used over time.",
        layout,
        variables(pod=True),
    )
