"""Namespaces, Pod Security and NetworkPolicies of the base and of every overlay.

- The exporter (hostPID) is alone in a namespace that enforces `privileged`; the advisor,
  the Pushgateway and anything else run where `restricted` is enforced, and every
  workload there meets `restricted` (tests/deploy/pod_security.py, the documented rules).
- Ingress is denied by default in both namespaces: the exporter admits only the scraping
  Prometheus, the Pushgateway only the advisor and that Prometheus, and opens nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.deploy.builds import BUILD_PARAMS, BUILDS, find, objects, pod_of, workloads
from tests.deploy.network_policy import Cluster, Pod
from tests.deploy.pod_security import enforced_levels, pod_template, violations

Json = dict[str, Any]
EXPORTER_NAMESPACE = "xgpu-exporter"
RESTRICTED_NAMESPACE = "xgpu-insight"
MONITORING = "monitoring"

# The Prometheus each build admits, as its pods are labelled by the setup the build is for.
PROMETHEUS = {
    "base": Pod(MONITORING, {"app.kubernetes.io/name": "prometheus"}),
    "prometheus-operator": Pod(
        MONITORING,
        {"app.kubernetes.io/name": "prometheus", "prometheus": "kube-prometheus-stack-prometheus"},
    ),
    "hami": Pod(
        MONITORING,
        {"app.kubernetes.io/name": "prometheus", "prometheus": "kube-prometheus-stack-prometheus"},
    ),
    "plain-prometheus": Pod(
        MONITORING,
        {"app.kubernetes.io/name": "prometheus", "app.kubernetes.io/component": "server"},
    ),
}
# Pods that must reach nothing of ours: Grafana beside Prometheus, a Prometheus-labelled
# pod of another namespace, any pod of `default`.
STRANGERS = [
    Pod(MONITORING, {"app.kubernetes.io/name": "grafana"}),
    Pod(
        "team-a",
        {
            "app.kubernetes.io/name": "prometheus",
            "prometheus": "x",
            "app.kubernetes.io/component": "server",
        },
    ),
    Pod("default", {"app": "curl"}),
]
# The reports server admits readers labelled so, in any namespace
# (base/advisor-reports-networkpolicy.yaml): an ingress controller, say.
REPORTS_READER = Pod("ingress-nginx", {"xgpu.io/reports-reader": "true"})


def cluster(documents: list[Json]) -> Cluster:
    outside: dict[str, dict[str, str]] = {
        name: {} for name in (MONITORING, "team-a", "default", "ingress-nginx")
    }
    return Cluster(documents, outside)


def pods(documents: list[Json]) -> dict[str, Pod]:
    return {w["metadata"]["name"]: pod_of(w) for w in workloads(documents)}


def test_every_build_names_its_prometheus() -> None:
    assert set(PROMETHEUS) == set(BUILDS)
    assert {"base", "prometheus-operator", "plain-prometheus", "hami"} <= set(BUILDS)


# --- namespaces and Pod Security ---------------------------------------------------------


@pytest.mark.parametrize("build", BUILD_PARAMS)
def test_two_namespaces_with_their_pod_security_levels(build: str) -> None:
    documents = objects(build)
    assert enforced_levels(documents) == {
        EXPORTER_NAMESPACE: "privileged",
        RESTRICTED_NAMESPACE: "restricted",
    }
    labels = find(documents, "Namespace", RESTRICTED_NAMESPACE)["metadata"]["labels"]
    # Audit and warn at the enforced level: kubectl warns before the API server refuses.
    for mode in ("audit", "warn"):
        assert labels[f"pod-security.kubernetes.io/{mode}"] == "restricted"


@pytest.mark.parametrize("build", BUILD_PARAMS)
def test_the_privileged_namespace_holds_the_exporter_alone(build: str) -> None:
    documents = objects(build)
    in_exporter_namespace = [
        (w["kind"], w["metadata"]["name"])
        for w in workloads(documents)
        if w["metadata"]["namespace"] == EXPORTER_NAMESPACE
    ]
    assert in_exporter_namespace == [("DaemonSet", "xgpu-exporter")]


@pytest.mark.parametrize("build", BUILD_PARAMS)
def test_every_workload_meets_its_namespaces_pod_security_level(build: str) -> None:
    documents = objects(build)
    levels = enforced_levels(documents)
    checked = []
    for workload in workloads(documents):
        template = pod_template(workload)
        level = levels[workload["metadata"]["namespace"]]
        found = violations(template["spec"], template["metadata"].get("annotations"), level)
        assert found == [], (workload["kind"], workload["metadata"]["name"], found)
        if level == "restricted":
            checked.append(workload["metadata"]["name"])
    assert {"xgpu-advisor", "xgpu-pushgateway"} <= set(checked)


@pytest.mark.parametrize("build", BUILD_PARAMS)
def test_the_exporter_breaks_restricted_only_where_it_must(build: str) -> None:
    """hostPID (process attribution) and uid 0 without capabilities (device nodes that
    hardened hosts leave root-only): nothing else `restricted` forbids."""
    template = pod_template(find(objects(build), "DaemonSet", "xgpu-exporter"))
    spec, annotations = template["spec"], template["metadata"].get("annotations")
    assert violations(spec, annotations, "baseline") == ["pod: hostPID"]
    assert sorted(violations(spec, annotations, "restricted")) == [
        "containers[exporter]: runAsNonRoot not true (container or pod)",
        "containers[exporter]: runAsUser 0",
        "pod: hostPID",
    ]


# --- NetworkPolicies ---------------------------------------------------------------------


@pytest.mark.parametrize("build", BUILD_PARAMS)
def test_every_pod_of_ours_is_isolated_for_ingress(build: str) -> None:
    documents = objects(build)
    policies = cluster(documents)
    for name, pod in pods(documents).items():
        assert policies.isolated(pod, "Ingress"), name


@pytest.mark.parametrize("build", BUILD_PARAMS)
def test_only_the_scraping_prometheus_reaches_the_exporter(build: str) -> None:
    documents = objects(build)
    policies, exporter = cluster(documents), pods(documents)["xgpu-exporter"]
    assert policies.allows(PROMETHEUS[build], exporter, "metrics")
    for stranger in [*STRANGERS, *pods(documents).values()]:
        assert not policies.allows(stranger, exporter, "metrics"), stranger


@pytest.mark.parametrize("build", BUILD_PARAMS)
def test_pushes_reach_the_pushgateway_only_from_the_advisor(build: str) -> None:
    documents = objects(build)
    policies, ours = cluster(documents), pods(documents)
    pushgateway = ours["xgpu-pushgateway"]
    assert policies.allows(ours["xgpu-advisor"], pushgateway, "http")
    # Scrapes use the same port (a NetworkPolicy sees connections, not HTTP methods).
    assert policies.allows(PROMETHEUS[build], pushgateway, "http")
    others = [pod for name, pod in ours.items() if name not in {"xgpu-advisor", "xgpu-pushgateway"}]
    # Another pod of the advisor's namespace that is not the advisor: refused.
    impostor = Pod(RESTRICTED_NAMESPACE, {"app.kubernetes.io/name": "something-else"})
    for stranger in [*STRANGERS, *others, impostor]:
        assert not policies.allows(stranger, pushgateway, "http"), stranger


@pytest.mark.parametrize("build", BUILD_PARAMS)
def test_the_pushgateway_opens_no_connection(build: str) -> None:
    documents = objects(build)
    policies, ours = cluster(documents), pods(documents)
    pushgateway = ours["xgpu-pushgateway"]
    assert policies.isolated(pushgateway, "Egress")
    assert not policies.allows(pushgateway, ours["xgpu-exporter"], "metrics")
    assert not policies.allows(pushgateway, pushgateway, "http")


@pytest.mark.parametrize("build", BUILD_PARAMS)
def test_every_served_port_is_admitted_from_somewhere(build: str) -> None:
    """A workload added to these namespaces with a port and no policy of its own would be
    unreachable behind the default deny: it needs a NetworkPolicy."""
    documents = objects(build)
    policies, ours = cluster(documents), pods(documents)
    candidates = [PROMETHEUS[build], REPORTS_READER, *STRANGERS, *ours.values()]
    for name, pod in ours.items():
        for port in pod.ports:
            admitted = [c for c in candidates if policies.allows(c, pod, port)]
            assert admitted, f"{name}:{port} is admitted from nowhere: add a NetworkPolicy"


def test_the_policy_model_admits_everything_without_policies() -> None:
    """The checks above mean something only if the model, with no policy, admits all."""
    documents = [d for d in objects("base") if d["kind"] != "NetworkPolicy"]
    policies, ours = cluster(documents), pods(documents)
    assert policies.allows(STRANGERS[2], ours["xgpu-exporter"], "metrics")
    assert policies.allows(STRANGERS[2], ours["xgpu-pushgateway"], "http")
