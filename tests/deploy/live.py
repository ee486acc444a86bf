"""The scrape job the Prometheus Operator would generate for one of our monitors, for the
real Prometheus of the deploy tests (tests/realparts.py starts it and the Pushgateway).

There is no Operator here, so a monitor's endpoint is turned into the plain scrape job the
Operator would write: the target labels it sets before the monitor's own relabelings
(namespace, pod, container, service, endpoint, job) are given as static labels, and
everything after that (the monitor's relabelings, honor_labels) is the real thing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
Json = dict[str, Any]

# Target labels the Operator sets before a monitor's own relabelings.
OPERATOR_TARGET_LABELS = {
    "container": "main",
    "endpoint": "metrics",
}
RELABEL_KEYS = {
    "sourceLabels": "source_labels",
    "targetLabel": "target_label",
    "separator": "separator",
    "regex": "regex",
    "replacement": "replacement",
    "action": "action",
}


def operator_job(
    monitor_file: str, address: str, job_label: str, extra_labels: dict[str, str]
) -> Json:
    """The scrape job the Operator would generate for the one endpoint of a monitor in
    deploy/base (ServiceMonitor or PodMonitor), pointed at `address`."""
    monitor = yaml.safe_load((DEPLOY / "base" / monitor_file).read_text())
    kind = monitor["kind"]
    key = {"ServiceMonitor": "endpoints", "PodMonitor": "podMetricsEndpoints"}[kind]
    (endpoint,) = monitor["spec"][key]
    labels = {
        **OPERATOR_TARGET_LABELS,
        "namespace": monitor["metadata"]["namespace"],
        "pod": f"{monitor['metadata']['name']}-x2k9f",
        "endpoint": endpoint["port"],
        "job": job_label,
        **extra_labels,
    }
    if kind == "ServiceMonitor":
        labels["service"] = monitor["metadata"]["name"]
    return {
        "job_name": f"emulated-{kind.lower()}-{monitor['metadata']['name']}",
        "honor_labels": endpoint["honorLabels"],
        "metrics_path": endpoint["path"],
        "static_configs": [{"targets": [address], "labels": labels}],
        "relabel_configs": [
            {RELABEL_KEYS[k]: value for k, value in relabeling.items()}
            for relabeling in endpoint.get("relabelings", [])
        ],
    }
