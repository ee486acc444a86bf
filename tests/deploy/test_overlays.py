"""The example overlays under deploy/overlays/, built by kubectl's kustomize: schema-valid
for a recent Kubernetes, and each changing the base where (and only where) it says.
Namespaces, Pod Security and NetworkPolicies of every build: test_security.py."""

from __future__ import annotations

import re
from typing import Any

import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import latest_version

from advisor.cli import _parser as advisor_parser
from advisor.core.model import Node
from advisor.podspec.scheduling import read_pod_scheduling
from tests.advisor.core.filter_checker import static_refusal
from tests.deploy.builds import BUILD_PARAMS, DEPLOY, OVERLAYS, find, objects
from tests.deploy.pod_security import pod_template

pytestmark = pytest.mark.realservices  # kubectl kustomize
Json = dict[str, Any]
KUBERNETES_VERSION = latest_version()
OPERATOR_GROUP = "monitoring.coreos.com"
KUBE_PROMETHEUS_STACK = "http://kube-prometheus-stack-prometheus.monitoring.svc:9090"


def identity(document: Json) -> tuple[str, str, str]:
    return document["kind"], document["metadata"].get("namespace", ""), document["metadata"]["name"]


def advisor_args(documents: list[Json]) -> list[str]:
    (container,) = pod_template(find(documents, "CronJob", "xgpu-advisor"))["spec"]["containers"]
    args: list[str] = container["args"]
    return args


def operator_objects(documents: list[Json]) -> list[Json]:
    return [d for d in documents if d["apiVersion"].startswith(f"{OPERATOR_GROUP}/")]


def test_the_three_example_overlays_exist() -> None:
    assert {"prometheus-operator", "plain-prometheus", "hami"} <= set(OVERLAYS)


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_objects_are_schema_valid(overlay: str) -> None:
    documents = objects(overlay)
    kinds = {d["kind"] for d in documents}
    assert {"Namespace", "NetworkPolicy", "DaemonSet", "CronJob", "Deployment"} <= kinds
    for document in documents:
        if document["apiVersion"].startswith(f"{OPERATOR_GROUP}/"):
            assert document["apiVersion"] == f"{OPERATOR_GROUP}/v1"  # no schema offline
            continue
        kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)


@pytest.mark.parametrize("build", BUILD_PARAMS)
def test_images_are_set_once_and_pinned(build: str) -> None:
    """Every build names the images the base's `images:` sets, by version."""
    base = yaml.safe_load((DEPLOY / "base" / "kustomization.yaml").read_text())
    expected = {
        f"{image.get('newName', image['name'])}:{image['newTag']}" for image in base["images"]
    }
    images = {
        container["image"]
        for document in objects(build)
        if "spec" in document and document["kind"] in {"DaemonSet", "CronJob", "Deployment"}
        for container in pod_template(document)["spec"]["containers"]
    }
    assert images == expected
    assert all(re.fullmatch(r"[\w./-]+:v?\d+\.\d+\.\d+", image) for image in images)


@pytest.mark.parametrize("build", BUILD_PARAMS)
def test_the_advisors_arguments_parse(build: str) -> None:
    """The CronJob's command line, read by the advisor's own parser: no unknown flag."""
    args = advisor_parser().parse_args(advisor_args(objects(build)))
    assert args.command == "report"


@pytest.mark.parametrize("overlay", OVERLAYS)
def test_overlay_changes_only_what_it_declares(overlay: str) -> None:
    """Objects the overlay leaves alone are the base's, byte for byte (as YAML)."""
    base = {identity(d): d for d in objects("base")}
    built = {identity(d): d for d in objects(overlay)}
    touched = {
        ("CronJob", "xgpu-insight", "xgpu-advisor"),
        ("DaemonSet", "xgpu-exporter", "xgpu-exporter"),
        ("NetworkPolicy", "xgpu-exporter", "xgpu-exporter-scrape"),
        ("NetworkPolicy", "xgpu-insight", "xgpu-pushgateway"),
    } | {identity(d) for d in operator_objects(list(base.values()))}
    for key in set(base) & set(built) - touched:
        assert built[key] == base[key], key


def test_prometheus_operator_labels_what_kube_prometheus_stack_selects() -> None:
    documents = objects("prometheus-operator")
    monitors = operator_objects(documents)
    assert {d["kind"] for d in monitors} == {"ServiceMonitor", "PrometheusRule"}
    assert all(d["metadata"]["labels"]["release"] == "kube-prometheus-stack" for d in monitors)
    assert f"--prometheus={KUBE_PROMETHEUS_STACK}" in advisor_args(documents)
    # Everything else keeps the base's labels: the release label selects nothing else.
    others = [d for d in documents if d not in monitors]
    assert not any("release" in (d["metadata"].get("labels") or {}) for d in others)


def test_plain_prometheus_has_no_crds_and_ships_the_scrape_jobs_and_rules() -> None:
    documents = objects("plain-prometheus")
    assert operator_objects(documents) == []
    configmap = find(documents, "ConfigMap", "xgpu-prometheus")
    assert configmap["metadata"]["namespace"] == "monitoring"
    assert set(configmap["data"]) == {"scrape-config.yaml", "xgpu.rules.yaml"}
    sources = {
        "scrape-config.yaml": DEPLOY / "prometheus" / "scrape-config.yaml",
        "xgpu.rules.yaml": DEPLOY / "rules" / "xgpu.rules.yaml",
    }
    for key, source in sources.items():
        assert yaml.safe_load(configmap["data"][key]) == yaml.safe_load(source.read_text()), key
    assert "--prometheus=http://prometheus-server.monitoring.svc:80" in advisor_args(documents)


def test_hami_judges_by_hamis_rules_on_hamis_nodes() -> None:
    documents = objects("hami")
    args = advisor_parser().parse_args(advisor_args(documents))
    assert args.scheduler == "hami"
    # Built on the Prometheus Operator overlay.
    assert f"--prometheus={KUBE_PROMETHEUS_STACK}" in advisor_args(documents)
    # The exporter lands where HAMi's device plugin does (gpu=on), nowhere else.
    template = pod_template(find(documents, "DaemonSet", "xgpu-exporter"))
    scheduling = read_pod_scheduling({"spec": template["spec"]})
    assert scheduling.problems == ()
    for labels, admitted in [
        ({"gpu": "on"}, True),
        ({"gpu": "off"}, False),
        ({"nvidia.com/gpu.present": "true"}, False),
        ({"accelerator": "nvidia-tesla-t4"}, False),
    ]:
        node = Node("n1", cards=(), labels=labels)
        assert (static_refusal(node, scheduling.constraints) is None) is admitted, labels
