"""The advisor's series reach Prometheus through the Pushgateway, as deployed.

Real parts: a Pushgateway and a Prometheus (with deploy/rules loaded) on loopback ports,
and the real `xgpu-advisor` run with the CronJob's own arguments. Only the sources are
swapped: no cluster here, so the bundled demo scenario stands in for Prometheus plus the
Kubernetes API. Each scrape path of deploy/ is checked: the static job of the plain
configs, and the Operator's job for pushgateway-servicemonitor.yaml.
"""

from __future__ import annotations

import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.deploy.live import operator_job
from tests.realparts import Prometheus, at_least, running_prometheus, running_pushgateway

pytestmark = pytest.mark.realservices  # promtool, Prometheus, Pushgateway, exporters

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
RULES = DEPLOY / "rules" / "xgpu.rules.yaml"
STATIC = DEPLOY / "prometheus" / "scrape-config.static.yaml"
RENDERED = DEPLOY / "rendered" / "all.yaml"
SCENARIO = REPO / "advisor" / "examples" / "demo.yaml"
Values = dict[tuple[str, tuple[tuple[str, str], ...]], float]
ADVISOR_LABELS = {"__name__", "job", "cause", "kind", "profile", "le", "autoscaler"}
NOT_RUNNING = 'ALERTS{alertname="XGPUAdvisorNotRunning"}'
FRAGMENTATION = 'ALERTS{alertname="XGPUPodsPendingFragmentation"}'
AUTOSCALER = 'ALERTS{alertname="XGPUAutoscalerCannotReachMax"}'


@dataclass(frozen=True)
class Deployed:
    prometheus: Prometheus
    gateway: str  # host:port
    directory: Path


def pushgateway_job(path: str, gateway: str) -> dict[str, Any]:
    if path == "static":
        jobs = yaml.safe_load(STATIC.read_text())["scrape_configs"]
        (job,) = [j for j in jobs if j["job_name"] == "xgpu-pushgateway"]
        job["static_configs"] = [{"targets": [gateway]}]
        return dict(job)
    # The Operator names the job after the Service.
    return operator_job("pushgateway-servicemonitor.yaml", gateway, "xgpu-pushgateway", {})


@pytest.fixture(scope="module", params=["static", "servicemonitor"])
def deployed(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployed]:
    directory = tmp_path_factory.mktemp(f"pushgateway-{request.param}")
    with running_pushgateway(directory) as url:
        gateway = urllib.parse.urlsplit(url).netloc
        config = {
            "global": {
                "scrape_interval": "1s",
                "scrape_timeout": "1s",
                "evaluation_interval": "1s",
            },
            "rule_files": [str(RULES)],
            "scrape_configs": [pushgateway_job(request.param, gateway)],
        }
        with running_prometheus(directory, config) as prometheus:
            yield Deployed(prometheus, gateway, directory)


def cronjob_args(gateway: str, out: Path) -> list[str]:
    """The deployed CronJob's arguments, with the cluster's sources and volume swapped for
    local ones. Every other argument is passed as it is."""
    documents = yaml.safe_load_all(RENDERED.read_text())
    (cronjob,) = [d for d in documents if d and d["kind"] == "CronJob"]
    (container,) = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["xgpu-advisor"]
    swapped = {
        "--prometheus": f"--scenario={SCENARIO}",
        "--kubernetes": None,  # no API server here: the scenario holds the Pending pods
        "--output-dir": f"--output-dir={out}",
        "--textfile": f"--textfile={out / 'xgpu_advisor.prom'}",
        "--pushgateway": f"--pushgateway=http://{gateway}",
    }
    args: list[str] = []
    seen: set[str] = set()
    for arg in container["args"]:
        flag = arg.partition("=")[0]
        if flag in swapped:
            seen.add(flag)
            replacement = swapped[flag]
            args += [replacement] if replacement is not None else []
        else:
            args.append(arg)
    assert seen == set(swapped), "the CronJob lost one of its arguments"
    return args


def advisor_command() -> list[str]:
    script = Path(sys.executable).parent / "xgpu-advisor"
    return [str(script)] if script.exists() else [sys.executable, "-m", "advisor.cli"]


def canonical(labels: dict[str, str]) -> tuple[tuple[str, str], ...]:
    """Labels sorted, a bucket's `le` as a number: the textfile writes "1.0", and what the
    Pushgateway hands Prometheus (protobuf) comes back as "1"."""
    if "le" in labels:
        labels = {**labels, "le": repr(float(labels["le"]))}
    return tuple(sorted(labels.items()))


def textfile_values(path: Path) -> Values:
    return {
        (sample.name, canonical(sample.labels)): sample.value
        for family in text_string_to_metric_families(path.read_text())
        for sample in family.samples
    }


def prometheus_values(prometheus: Prometheus) -> Values:
    values: Values = {}
    for series in prometheus.query('{__name__=~"xgpu_advisor_.+"}'):
        labels = dict(series["metric"])
        name = labels.pop("__name__")
        assert labels.pop("job") == "xgpu-advisor", series
        values[(name, canonical(labels))] = float(series["value"][1])
    return values


@pytest.mark.realservices
def test_advisor_run_reaches_prometheus_and_clears_the_not_running_alert(
    deployed: Deployed, tmp_path: Path
) -> None:
    prometheus = deployed.prometheus
    # Before any run the series is absent and the alert is on its way (pending, for 10m).
    (before,) = prometheus.wait_for(NOT_RUNNING, at_least(1))
    assert before["metric"]["alertstate"] == "pending"

    out = tmp_path / "reports"
    run = subprocess.run(
        [*advisor_command(), *cronjob_args(deployed.gateway, out)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert {p.name for p in out.iterdir()} == {
        "report.json",
        "report.md",
        "report.html",
        "xgpu_advisor.prom",
    }

    assert prometheus.wait_for(NOT_RUNNING, lambda r: not r) == []
    pushed = prometheus.wait_for('{__name__=~"xgpu_advisor_.+"}', at_least(13))
    for series in pushed:
        labels = series["metric"]
        # honor_labels kept the pushed job; the Pushgateway's instance="" left none, and
        # no label of the Pushgateway's own pod or Service came along.
        assert set(labels) <= ADVISOR_LABELS, labels
        assert labels["job"] == "xgpu-advisor", labels
    # Prometheus holds what the same run wrote to its textfile, value for value.
    written = textfile_values(out / "xgpu_advisor.prom")
    assert prometheus_values(prometheus) == pytest.approx(written)

    # The demo has one Pending pod for fragmentation: its alert is pending (for: 30m).
    (fragmentation,) = prometheus.wait_for(FRAGMENTATION, at_least(1))
    assert fragmentation["metric"] == {
        "__name__": "ALERTS",
        "alertname": "XGPUPodsPendingFragmentation",
        "alertstate": "pending",
        "cause": "fragmentation",
        "job": "xgpu-advisor",
        "severity": "warning",
    }
    # Its HPA's next replica stays Pending for fragmentation too: the rule joins the pushed
    # series (max − replicas − placeable, with the blocked one's cause) as Prometheus holds them.
    (autoscaler,) = prometheus.wait_for(AUTOSCALER, at_least(1))
    assert autoscaler["metric"] == {
        "__name__": "ALERTS",
        "alertname": "XGPUAutoscalerCannotReachMax",
        "alertstate": "pending",
        "autoscaler": "infer/embed",
        "cause": "fragmentation",
        "job": "xgpu-advisor",
        "severity": "warning",
    }
    (short,) = prometheus.query(
        "xgpu_advisor_autoscaler_max_replicas - xgpu_advisor_autoscaler_replicas"
        " - xgpu_advisor_autoscaler_placeable_replicas"
    )
    assert short["value"][1] == "2"  # of 3 replicas to add, 1 places


@pytest.mark.realservices
def test_pushgateway_target_is_up_under_its_own_job(deployed: Deployed) -> None:
    (up,) = deployed.prometheus.wait_for('up{job="xgpu-pushgateway"}', at_least(1))
    assert up["value"][1] == "1"
    # Its own series keep the scrape job; pod-specific labels are dropped or never added.
    assert not {"pod", "namespace", "service", "container"} & set(up["metric"])
