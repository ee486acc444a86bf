"""Advisor dashboard: its findings and its runs over time, from its own series.

The advisor publishes one set of series per run (textfile or Pushgateway); `max` keeps
one value when more than one source carries them. Its series have no node or card, so
this dashboard's variables are the datasource, the cluster and where the advisor's
reports are served (`xgpu-advisor serve --reports DIR`), which its links open.
"""

from __future__ import annotations

from advisor import metricnames as M
from dashboards.board import cluster_variable, datasource_variable, reports_variable
from dashboards.board import dashboard as build_dashboard
from dashboards.common import CLUSTER, REPORTS_URL, Json, Panel
from dashboards.panels import Layout, Query, stat, steps, timeseries
from dashboards.shared_panels import (
    PENDING_BY_CAUSE,
    fragmentation,
    pending_by_cause,
    stranded_memory,
    stranded_tile,
)

LAST_SUCCESS = f"{M.LAST_SUCCESS}{{{CLUSTER}}}"
SINCE_LAST_RUN = f"time() - max({LAST_SUCCESS})"
# `/` of the reports server is the index of the runs the advisor keeps.
REPORTS_LINK: Json = {
    "title": "Advisor reports (index of the kept runs)",
    "type": "link",
    "url": "${reports_url}",
    "icon": "doc",
    "targetBlank": True,
    "tooltip": "xgpu-advisor serve --reports DIR",
    "asDropdown": False,
    "includeVars": False,
    "keepTime": False,
    "tags": [],
}
LATEST_REPORT = {"title": "The reports of the advisor's runs", "url": "${reports_url}"}
# XGPUAdvisorNotRunning fires after 30 minutes without a successful run.
SINCE_LAST_RUN_STEPS = steps("green", (900, "orange"), (1800, "red"))


# Each run publishes its latency histogram afresh (pods scheduled in the hour before it), so
# its buckets are read as they stand, not rated.
LATENCY_BUCKETS = f"max by (le, profile) ({M.SCHEDULING_LATENCY}_bucket{{{CLUSTER}}})"


def scheduling_layer() -> list[Panel]:
    """How many pods wait, how long, how long placing takes, and the fragmentation that
    keeps them waiting, side by side (docs/design.md §12)."""
    return [
        timeseries(
            "Pending GPU pods",
            "GPU pods Pending in each run, any cause.",
            [Query(f"sum(max by (cause) ({PENDING_BY_CAUSE}))", "pending")],
            "none",
            decimals=0,
            min_value=0,
        ),
        timeseries(
            "Oldest Pending pod by cause",
            "How long the longest-waiting Pending pod of each cause had waited at each run "
            "(now - its creation); the mean over all Pending pods beside it.",
            [
                Query(f"max by (cause) ({M.PENDING_AGE_MAX}{{{CLUSTER}}})", "oldest, {{cause}}"),
                Query(
                    f"sum(max by (cause) ({M.PENDING_AGE}_sum{{{CLUSTER}}})) / "
                    f"sum(max by (cause) ({M.PENDING_AGE}_count{{{CLUSTER}}})) > 0",
                    "mean, all causes",
                ),
            ],
            "s",
            min_value=0,
        ),
        timeseries(
            "Scheduling latency",
            "Creation to PodScheduled of the GPU pods scheduled in the hour before each run, "
            "by scheduler profile: median and 90th percentile (from the histogram's buckets).",
            [
                Query(f"histogram_quantile(0.5, {LATENCY_BUCKETS})", "p50, {{profile}}"),
                Query(f"histogram_quantile(0.9, {LATENCY_BUCKETS})", "p90, {{profile}}"),
            ],
            "s",
            min_value=0,
        ),
        fragmentation(),
    ]


def autoscalers() -> list[Panel]:
    """How far each HPA's replicas place against its max, and the causes that stop them
    (docs/design.md §12.2): replicas + placeable below max is an autoscaler that cannot
    reach it. An `unknown-template` one has no placeable series, so no line of its own."""
    reach = f"{M.AUTOSCALER_REPLICAS}{{{CLUSTER}}} + {M.AUTOSCALER_PLACEABLE}{{{CLUSTER}}}"
    return [
        timeseries(
            "Replicas each autoscaler reaches vs its max",
            "Per HorizontalPodAutoscaler: its replicas now plus the more the cluster would "
            "place if it scaled (tried one by one in the advisor's cycle), against its "
            "max_replicas. A reach line below its max line: the next replica would stay "
            "Pending (XGPUAutoscalerCannotReachMax).",
            [
                Query(f"max by (autoscaler) ({reach})", "{{autoscaler}} reaches"),
                Query(
                    f"max by (autoscaler) ({M.AUTOSCALER_MAX_REPLICAS}{{{CLUSTER}}})",
                    "{{autoscaler}} max",
                ),
            ],
            "none",
            decimals=0,
            min_value=0,
            stepped=True,
        ),
        timeseries(
            "Autoscalers short of max, by cause",
            "Autoscalers whose next replica up to max_replicas would stay Pending, by that "
            "replica's cause (fragmentation: rebalance; capacity: add nodes; ...).",
            [
                Query(
                    f"count by (cause) (max by (autoscaler, cause) "
                    f"({M.AUTOSCALER_BLOCKED}{{{CLUSTER}}}))",
                    "{{cause}}",
                )
            ],
            "none",
            decimals=0,
            min_value=0,
            stacked=True,
            bars=True,
        ),
    ]


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
            links=[LATEST_REPORT],
        ),
        stat(
            "Last run took",
            "Duration of the advisor's last run.",
            Query(f"max({M.RUN_DURATION}{{{CLUSTER}}})"),
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
            Query(f"max({M.RESCUABLE_PODS}{{{CLUSTER}}})"),
            "none",
        ),
    ]
    findings = [
        stat(
            "Pending for fragmentation",
            "Pending pods whose memory exists, split across cards or behind a vGPU limit.",
            Query(f'max({M.PENDING_PODS}{{{CLUSTER}, cause="fragmentation"}})'),
            "none",
            thresholds=steps("green", (1, "orange")),
        ),
        stat(
            "Pending for node resources",
            "Pending pods whose GPUs fit on a node they may use, but that node lacks the cpu, "
            "memory or pod slots they request: free or add cpu and memory on GPU nodes, not GPUs.",
            Query(f'max({M.PENDING_PODS}{{{CLUSTER}, cause="node-resources"}})'),
            "none",
            thresholds=steps("green", (1, "orange")),
        ),
        stranded_tile(),
        stat(
            "Pending for queue or quota",
            "Pending pods their Volcano queue (no room, not admitted, not Open) or their "
            "namespace's HAMi quota keeps out before any node is tried: raise the queue's or "
            "the quota's limit; nodes and rebalancing do not help.",
            # the cause series exist only where some pod has them: 0 when the run has none
            Query(
                f'sum({M.PENDING_PODS}{{{CLUSTER}, cause=~"queue|quota"}}) '
                f"or (0 * sum({M.PENDING_PODS}{{{CLUSTER}}}))"
            ),
            "none",
            thresholds=steps("green", (1, "orange")),
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
                    f'sum(max by (cause) ({M.PENDING_PODS}{{{CLUSTER}, cause!="schedulable"}}))',
                    "pending, not schedulable",
                ),
                Query(f"max({M.RESCUABLE_PODS}{{{CLUSTER}}})", "rescuable by the plans"),
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
            [Query(f"max by (kind) ({M.PLANS}{{{CLUSTER}}})", "{{kind}}")],
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

    layout.row("Scheduling layer")
    for panel in scheduling_layer():
        layout.add(panel, 6, 8)

    layout.row("Autoscalers")
    reach, short = autoscalers()
    layout.add(reach, 16, 8)
    layout.add(short, 8, 8)

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
            [Query(f"max({M.RUN_DURATION}{{{CLUSTER}}})", "duration")],
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
                    f"sum(changes({LAST_SUCCESS}[1h]))",
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
        [
            datasource_variable(),
            cluster_variable(M.LAST_SUCCESS.name),
            reports_variable(REPORTS_URL),
        ],
        links=[REPORTS_LINK],
    )
