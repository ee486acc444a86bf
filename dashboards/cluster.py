"""Cluster dashboard: GPU memory allotted vs used, waste, Pending pods and fragmentation.

Node and namespace totals come from the recording rules of deploy/rules/xgpu.rules.yaml
(`node:`, `namespace:`): they cover whole nodes and whole namespaces, so the GPU selection
does not narrow them (the per-card panels are on the Node dashboard).
"""

from __future__ import annotations

from advisor import metricnames as M
from dashboards.board import dashboard as build_dashboard
from dashboards.board import variables
from dashboards.common import NAMESPACE, NODE, VGPU, Json, link_to_node, link_to_workload
from dashboards.panels import Layout, Query, stat, steps, table, timeseries
from dashboards.shared_panels import (
    IN_USE_STEPS,
    bytes_by_namespace,
    card_count,
    fragmentation,
    pending_by_cause,
    stranded_tile,
    unhealthy_cards,
    vgpu_count,
)


def dashboard() -> Json:
    layout = Layout()
    layout.row("Overview")
    overview = [
        card_count("Physical cards reporting (any health, any mode)."),
        vgpu_count("vGPUs allotted on the selected nodes.", whole_nodes=True),
        stat(
            "Memory allotted",
            "Card memory allotted to vGPUs / physical card memory of the selected nodes (0-100 %).",
            Query(f"sum({M.NODE_ALLOTTED}{{{NODE}}}) / (sum({M.NODE_CARD_MEMORY}{{{NODE}}}) > 0)"),
            "percentunit",
        ),
        stat(
            "Allotted memory in use",
            "Memory the vGPUs' processes use / memory allotted to them, on the selected "
            "nodes. Low means waste.",
            Query(
                f"(sum({M.NODE_GPU_MEMORY_USED}{{{NODE}}}) or vector(0))"
                f" / (sum({M.NODE_ALLOTTED}{{{NODE}}}) > 0)"
            ),
            "percentunit",
            thresholds=IN_USE_STEPS,
        ),
        stat(
            "Allotted but unused",
            "Memory allotted to vGPUs that their processes do not use, on the selected nodes.",
            Query(f"sum({M.NODE_UNUSED_ALLOTTED}{{{NODE}}}) or vector(0)"),
            "bytes",
            thresholds=steps("green", (1 << 30, "orange")),
        ),
        unhealthy_cards(),
    ]
    for panel in overview:
        layout.add(panel, 4, 4)

    layout.row("GPU memory: physical, allotted, used")
    layout.add(
        timeseries(
            "GPU memory: physical vs allotted vs used",
            "Physical card memory, memory allotted to vGPUs, memory in use on the cards "
            "(NVML, any process) and memory used by the vGPUs' processes, on the selected "
            "nodes.",
            [
                Query(f"sum({M.NODE_CARD_MEMORY}{{{NODE}}})", "physical"),
                Query(f"sum({M.NODE_ALLOTTED}{{{NODE}}})", "allotted to vGPUs"),
                Query(f"sum({M.CARD_MEMORY_USED}{{{NODE}}})", "in use on the cards"),
                Query(
                    f"sum({M.NODE_GPU_MEMORY_USED}{{{NODE}}}) or vector(0)",
                    "used by vGPUs",
                ),
            ],
            "bytes",
            min_value=0,
        ),
        12,
        8,
    )
    layout.add(
        timeseries(
            "Memory allotted per node",
            "Allotted / physical card memory per node (0-100 %). Binpack fills nodes on "
            "purpose: a full node is not a problem by itself.",
            [Query(f"{M.NODE_ALLOTTED_RATIO}{{{NODE}}}", "{{node}}")],
            "percentunit",
            min_value=0,
            max_value=1,
            links=[link_to_node()],
        ),
        12,
        8,
    )
    layout.add(
        timeseries(
            "Allotted but unused memory per node",
            "Memory reserved by vGPUs and not used by their processes, per node.",
            [Query(f"{M.NODE_UNUSED_ALLOTTED}{{{NODE}}}", "{{node}}")],
            "bytes",
            min_value=0,
            stacked=True,
            links=[link_to_node()],
        ),
        12,
        8,
    )
    layout.add(
        timeseries(
            "Allotted memory in use per node",
            "Memory used by the vGPUs' processes / memory allotted to them, per node "
            "(0-100 %). Low means waste.",
            [Query(f"{M.NODE_ALLOTTED_USAGE}{{{NODE}}}", "{{node}}")],
            "percentunit",
            min_value=0,
            max_value=1,
            thresholds=IN_USE_STEPS,
            links=[link_to_node()],
        ),
        12,
        8,
    )

    layout.row("Scheduling (from the advisor's last runs)")
    pending = pending_by_cause(
        "Pending GPU pods by the advisor's diagnosis, by the rules of the cluster's "
        "scheduler (CCE xGPU, HAMi or Volcano vGPU): fragmentation means the free memory "
        "exists but is split across cards or behind a vGPU limit; node-resources that the "
        "GPUs fit but the node's cpu, memory or pod slots do not."
    )
    layout.add(stranded_tile(), 6, 8)
    layout.add(pending, 9, 8)
    layout.add(fragmentation(), 9, 8)

    layout.row("Waste: allotted but unused")
    layout.add(
        table(
            "Top wasteful workloads",
            "The 10 pods with the most memory allotted and unused, averaged over the "
            "dashboard's time range. Click a pod for its workload dashboard.",
            [
                Query(
                    "topk(10, sum by (node, namespace, pod) ("
                    f"avg_over_time({M.MEMORY_TOTAL}{{{VGPU}}}[$__range])"
                    f" - avg_over_time({M.MEMORY_USED}{{{VGPU}}}[$__range])))",
                    instant=True,
                )
            ],
            "bytes",
            rename={"Value": "Allotted, unused (average)"},
            sort_by="Allotted, unused (average)",
            links=[link_to_workload(table=True)],
        ),
        12,
        9,
    )
    layout.add(
        bytes_by_namespace(
            "Allotted but unused memory by namespace",
            "Memory reserved by vGPUs and not used by their processes, per namespace "
            "(whole namespaces, on every node).",
            f"{M.NAMESPACE_UNUSED_ALLOTTED}{{{NAMESPACE}}}",
        ),
        12,
        9,
    )
    return build_dashboard(
        "cluster",
        "xgpu-insight / Cluster",
        "Shared GPUs across the cluster: memory allotted vs used, waste, Pending pods.",
        layout,
        variables(),
    )
