"""A realistic report dict (every section filled) for the report renderers' tests and to look
at the pages without a cluster: `python -m tests.advisor.render.sample_report OUT.html` (or OUT.md).

The cluster is advisor/examples/report-sample.yaml (the demo as it was when this was written)
plus three one-card nodes (one lets a plan rescue a fragmented pod, one could go, one is
idle but kept); the history is a synthetic, seeded day of 5-minute samples.
"""

from __future__ import annotations

import math
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from advisor.core.model import Cluster
from advisor.report import ReportInputs, ReportOptions, build_report
from advisor.rightsizing import HISTORY_COLUMNS
from advisor.scenario import scenario_from_data

GENERATED_AT = 1_764_491_400.0  # 2025-11-30 08:30 UTC
STEP_S = 300
SAMPLES = 288  # one day
MIB = 2**20

# Per workload: share of its allotment used (mean, diurnal swing; the rest is noise) and
# the hours before the report that its pods started (0: before the window).
_USE: dict[str, tuple[float, float, float]] = {
    "Job/ml/train-a": (0.86, 0.08, 15),
    "ml/train-b": (0.4, 0.1, 0),
    "StatefulSet/ml/notebook": (0.2, 0.15, 9),
    "StatefulSet/infer/llm": (0.72, 0.12, 0),
    "Deployment/infer/embed": (0.32, 0.1, 0),
    "DaemonSet/kube-system/gpu-probe": (0.1, 0.0, 0),
    "Job/research/sim": (0.9, 0.05, 20),
    "ml/small": (0.3, 0.05, 4),
}


def sample_cluster() -> Cluster:
    """The demo cluster plus `t4-spare` (one T4 holding a small pod, where a plan moves an
    evicted pod), `t4-idle` (one T4 holding a tiny pod, and a CPU pod: it could go) and
    `t4-broken` (one failed T4, and a CPU pod with local storage that keeps the node)."""
    text = (
        resources.files("advisor")
        .joinpath("examples/report-sample.yaml")
        .read_text(encoding="utf-8")
    )
    data = yaml.safe_load(text)
    data["nodes"].append(
        {
            "name": "t4-spare",
            "cards": [{"index": 0, "memory_mib": 16384, "model": "Tesla T4"}],
            "other_pods": [],
        }
    )
    data["nodes"].append(
        {
            "name": "t4-idle",
            "cards": [{"index": 0, "memory_mib": 16384, "model": "Tesla T4"}],
            "other_pods": [{"name": "ml/dashboard"}],  # a CPU pod that would move with it
        }
    )
    data["nodes"].append(
        {
            "name": "t4-broken",
            "cards": [{"index": 0, "memory_mib": 16384, "model": "Tesla T4", "healthy": False}],
            # Its one card failed, so nothing runs on it, but a pod with local data keeps it.
            "other_pods": [{"name": "ml/cache", "blocks": "local storage: volume scratch"}],
        }
    )
    for pod in data["pods"]:
        if pod["name"] == "ml/train-b":
            pod.pop("owner", None)  # a bare pod: its workload is its own name
    data["pods"].insert(
        0,
        {
            "name": "ml/tiny",
            "node": "t4-idle",
            "cards": [0],
            "request": {"gpus": 1, "memory_mib": 1024},
            "owner": "Deployment/ml/tiny",
        },
    )
    data["pods"].insert(
        0,
        {
            "name": "ml/small",
            "node": "t4-spare",
            "cards": [0],
            "request": {"gpus": 1, "memory_mib": 4096},
        },
    )
    return scenario_from_data(data, "report sample")


def sample_history(cluster: Cluster, end: float = GENERATED_AT) -> pd.DataFrame:
    """A day of samples per running vGPU (pod x card), seeded: the same frame every time."""
    rng = np.random.default_rng(7)
    stamps = end - STEP_S * np.arange(SAMPLES - 1, -1, -1, dtype=float)
    day = np.sin(2 * math.pi * (stamps % 86400) / 86400 - math.pi / 2)  # low at midnight
    frames = []
    for pod in cluster.running:
        assert pod.placement is not None
        namespace, _, name = pod.name.partition("/")
        mean, swing, hours = _USE.get(pod.owner or pod.name, (0.5, 0.1, 0))
        alive = stamps > end - hours * 3600 if hours else np.ones(SAMPLES, dtype=bool)
        allotted = pod.request.card_memory_mib * MIB
        for index in pod.placement.cards:
            share = (mean + swing * day + rng.normal(0.0, 0.02, SAMPLES))[alive]
            used = np.clip(share, 0.01, 0.98) * allotted
            core = pod.request.card_core_percent
            core_used = np.clip((share * 0.9) * (core or 60), 0, 100)
            frames.append(
                pd.DataFrame(
                    {
                        "timestamp": stamps[alive],
                        "namespace": namespace,
                        "pod": name,
                        "container": "main",
                        "owner": pod.owner or "",
                        "node": pod.placement.node,
                        "gpu_index": index,
                        "memory_allotted_bytes": float(allotted),
                        "memory_used_bytes": used,
                        "core_allotted_percent": float(core),
                        "core_used_percent": core_used,
                    }
                )
            )
    return pd.concat(frames, ignore_index=True)[list(HISTORY_COLUMNS)]


def _clock() -> float:
    return 0.0  # a fixed clock: the plan search never runs out, durations are 0


def sample_report(
    cluster: Cluster | None = None, history: pd.DataFrame | None = None
) -> dict[str, Any]:
    """The full report for `cluster` (default: the sample's), with `history` (default: the
    sample's day), warnings and one stale series; deterministic."""
    cluster = cluster or sample_cluster()
    inputs = ReportInputs(
        cluster,
        "prometheus http://prometheus.monitoring:9090 + kubernetes (in-cluster)",
        GENERATED_AT,
        warnings=("node gpu-old-7: the exporter's nvml collector failed on its last run",),
        stale=(
            {
                "subject": "node gpu-old-7",
                "metric": "xgpu_node_info",
                "age_s": 1260.0,
                "ended": False,
            },
        ),
        history=sample_history(cluster) if history is None else history,
    )
    report = build_report(inputs, ReportOptions(time_budget_s=10), _clock)
    return report.data


def main(argv: list[str] | None = None) -> int:
    from advisor.render.report.html import render_report_html
    from advisor.render.report.markdown import render_report_markdown

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print(
            "usage: python -m tests.advisor.render.sample_report OUT.html|OUT.md", file=sys.stderr
        )
        return 2
    out = Path(args[0])
    report = sample_report()
    text = render_report_markdown(report) if out.suffix == ".md" else render_report_html(report)
    out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
