"""Advisor dashboard: its findings and its runs over time, from its own series.

The advisor publishes one set of series per run (textfile or Pushgateway); `max` keeps
one value when more than one source carries them. Its series have no node or card, so
this dashboard has only the datasource variable.
"""

from __future__ import annotations

from dashboards.board import dashboard as build_dashboard
from dashboards.board import datasource_variable
from dashboards.common import Json
from dashboards.panels import Layout, Query, stat, steps, timeseries
from dashboards.shared_panels import (
    PENDING_BY_CAUSE,
    fragmentation,
    pending_by_cause,
    stranded_memory,
)

SINCE_LAST_RUN = "time() - max(xgpu_advisor_last_success_timestamp_seconds)"
# XGPUAdvisorNotRunning fires after 30 minutes without a successful run.
SINCE_LAST_RUN_STEPS = steps("green", (900, "orange"), (1800, "red"))


def dashboard() -> Json:
    layout = Layout()
    layout.row("Last run")
    overview = [
        stat(
            "Time since last successful run",
            "Values below are as old as this; the XGPUAdvisorNotRunning alert fires at 30 min.",
            Query(SINCE_LAST_RUN),
            "s",
            thresholds=SINCE_LAST_RUN_STEPS,
            color_mode="background",
        ),
        stat(
            "Last run took",
            "Duration of the advisor's last run.",
            Query("max(xgpu_advisor_run_duration_seconds)"),
            "s",
        ),
        stat(
            "Pending GPU pods",
            "GPU pods Pending in the last run, any cause.",
            Query(f"sum({PENDING_BY_CAUSE})"),
            "none",
        ),
        stat(
            "Rescuable by rebalancing",
            "Pending pods the proposed rebalancing plans would let run.",
            Query("max(xgpu_advisor_rescuable_pods)"),
            "none",
        ),
    ]
    findings = [
        stat(
            "Pending for fragmentation",
            "Pending pods whose memory exists, split across cards or behind a vGPU limit.",
            Query('max(xgpu_advisor_pending_pods{cause="fragmentation"})'),
            "none",
            thresholds=steps("green", (1, "orange")),
        ),
        stat(
            "Pending for node resources",
            "Pending pods whose GPUs fit on a node they may use, but that node lacks the cpu, "
            "memory or pod slots they request: free or add cpu and memory on GPU nodes, not GPUs.",
            Query('max(xgpu_advisor_pending_pods{cause="node-resources"})'),
            "none",
            thresholds=steps("green", (1, "orange")),
        ),
        stat(
            "Stranded memory",
            "Free memory on healthy cards that no Pending pod can use.",
            Query("max(xgpu_advisor_stranded_memory_bytes)"),
            "bytes",
        ),
    ]
    for panel in overview:
        layout.add(panel, 6, 4)
    for panel in findings:
        layout.add(panel, 8, 4)

    layout.row("Findings over time")
    layout.add(
        pending_by_cause(
            "Pending GPU pods by the advisor's diagnosis, by the rules of the cluster's "
            "scheduler: CCE xGPU, HAMi or Volcano vGPU (schedulable: fits now, the "
            "scheduler has not placed it yet; node-resources: the GPUs fit, the node's cpu, "
            "memory or pod slots do not)."
        ),
        12,
        8,
    )
    layout.add(
        timeseries(
            "Pending vs rescuable",
            "Pods that cannot be placed as the cluster stands, and how many of them the "
            "rebalancing plans would place.",
            [
                Query(
                    'sum(max by (cause) (xgpu_advisor_pending_pods{cause!="schedulable"}))',
                    "pending, not schedulable",
                ),
                Query("max(xgpu_advisor_rescuable_pods)", "rescuable by the plans"),
            ],
            "none",
            decimals=0,
            min_value=0,
        ),
        12,
        8,
    )
    layout.add(
        timeseries(
            "Plans proposed by kind",
            "Plans of the last run: rebalance (move vGPUs), scale_up, scale_down.",
            [Query("max by (kind) (xgpu_advisor_plans)", "{{kind}}")],
            "none",
            decimals=0,
            stacked=True,
            bars=True,
        ),
        12,
        8,
    )
    layout.add(fragmentation(), 6, 8)
    layout.add(stranded_memory(), 6, 8)

    layout.row("Runs")
    layout.add(
        timeseries(
            "Time since last successful run",
            "A sawtooth when the advisor runs on schedule; a ramp when it stopped.",
            [Query(SINCE_LAST_RUN, "since last success")],
            "s",
            min_value=0,
            thresholds=SINCE_LAST_RUN_STEPS,
        ),
        8,
        8,
    )
    layout.add(
        timeseries(
            "Run duration",
            "Duration of the advisor's latest run at each time.",
            [Query("max(xgpu_advisor_run_duration_seconds)", "duration")],
            "s",
            min_value=0,
            stepped=True,
        ),
        8,
        8,
    )
    layout.add(
        timeseries(
            "Successful runs per hour",
            "Completed runs in the hour before each time (changes of the last-success time).",
            [
                Query(
                    "sum(changes(xgpu_advisor_last_success_timestamp_seconds[1h]))",
                    "runs in the last hour",
                )
            ],
            "none",
            min_value=0,
            decimals=0,
        ),
        8,
        8,
    )
    return build_dashboard(
        "advisor",
        "xgpu-insight / Advisor",
        "The scheduling advisor's findings (Pending causes, plans, fragmentation) and runs.",
        layout,
        [datasource_variable()],
    )
