"""deploy/autoscaling/: prometheus-adapter's rules, the HPA and the KEDA ScaledObject.

The rules' queries run on a real Prometheus scraping a real exporter in --simulate mode,
rendered the way the adapter renders them for an HPA's request, and each pod's answer is
held to what the exporter serves for that pod's vGPUs. The manifests: kubernetes-validate
for the core kinds, `kubectl kustomize` for the ConfigMap, and KEDA's documented fields
for the ScaledObject (its CRD has no schema offline).
"""

from __future__ import annotations

import json
import re
import urllib.parse
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import latest_version
from prometheus_client.parser import text_string_to_metric_families

from tests.deploy.builds import kustomize, objects
from tests.realparts import (
    Prometheus,
    Sample,
    at_least,
    running_prometheus,
    scrape_config,
    start_exporter,
)

pytestmark = pytest.mark.realservices  # Prometheus, the exporter, kubectl kustomize

REPO = Path(__file__).resolve().parents[2]
AUTOSCALING = REPO / "deploy" / "autoscaling"
ADAPTER = AUTOSCALING / "prometheus-adapter"
HPA = AUTOSCALING / "hpa.yaml"
SCALED_OBJECT = AUTOSCALING / "keda-scaledobject.yaml"
KUBERNETES_VERSION = latest_version()
Json = dict[str, Any]

NODE = "gpu-node-1"
# The examples' Deployment web/infer: three replicas of two vGPUs each on memory+core
# isolated cards (30 % of core over two cards: 15 % allotted on each). Beside it, what
# the queries must leave out: another Deployment of the namespace whose name starts alike,
# and a pod of the same name in another namespace.
INFER = ("infer-7d9f8b6c5d-x2x9k", "infer-7d9f8b6c5d-q8w4z", "infer-7d9f8b6c5d-m5n7p")
CANARY = "infer-canary-5c6b7d8f9-k2j3h"
SCENARIO: Json = {
    "nodes": [
        {
            "name": NODE,
            "allocatable": {"cpu": "64", "memory": "256Gi", "pods": 110},
            "cards": [{"index": i, "memory_mib": 40960} for i in range(5)],
        }
    ],
    "pods": [
        *(
            {
                "name": f"web/{pod}",
                "node": NODE,
                "cards": cards,
                "request": {"gpus": 2, "memory_mib": 8192, "core_percent": 30},
                "owner": "Deployment/web/infer",
            }
            for pod, cards in zip(INFER, ([0, 1], [0, 1], [2, 3]), strict=True)
        ),
        {
            "name": f"web/{CANARY}",
            "node": NODE,
            "cards": [4],
            "request": {"gpus": 1, "memory_mib": 4096},
            "owner": "Deployment/web/infer-canary",
        },
        {
            "name": f"ml/{INFER[0]}",
            "node": NODE,
            "cards": [4],
            "request": {"gpus": 1, "memory_mib": 4096},
            "owner": "Deployment/ml/infer",
        },
    ],
}
VGPUS = 8  # series per family: 3 x 2 + 1 + 1


def load(path: Path) -> Json:
    document: Json = yaml.safe_load(path.read_text())
    return document


def rules() -> list[Json]:
    found: list[Json] = load(ADAPTER / "config.yaml")["rules"]
    return found


# --- the adapter, as its code does it --------------------------------------------------


def api_name(rule: Json, series: str) -> str | None:
    """The name the adapter serves `series` under, or None where the rule skips it.
    Mirrors prometheus-adapter pkg/naming/metric_namer.go: `name.matches` is searched (Go's
    regexp, unanchored; default `.*`), `name.as` expanded with its $N groups (default `$0`
    without groups, `$1` with one)."""
    pattern = re.compile(rule.get("name", {}).get("matches") or ".*")
    match = pattern.search(series)
    if match is None:
        return None
    template = rule["name"].get("as") or ("$0" if pattern.groups == 0 else "$1")
    return re.sub(r"\$\{?(\d+)\}?", lambda g: match.group(int(g.group(1))), template)


def label_matchers(namespace: str, pods: Sequence[str]) -> str:
    """<<.LabelMatchers>> for a request on pods of one namespace, as the adapter builds it
    (pkg/naming/metrics_query.go Build, pkg/client/helpers.go): the namespace label, then the
    pod label, `=` for one name and `=~` with the names joined by `|` for several; values
    quoted with Go's %q, which is JSON's quoting for these names."""
    pod = f"pod={json.dumps(pods[0])}" if len(pods) == 1 else f"pod=~{json.dumps('|'.join(pods))}"
    return f"namespace={json.dumps(namespace)},{pod}"


def metrics_query(rule: Json, series: str, namespace: str, pods: Sequence[str]) -> str:
    """The rule's metricsQuery with the fields an HPA's request on pods fills (the Go
    template with `<<` `>>` delimiters; GroupBy is the resource's label, `pod`). The rules
    use no other field and no template logic."""
    query = str(rule["metricsQuery"])
    for field, value in [
        ("Series", series),
        ("LabelMatchers", label_matchers(namespace, pods)),
        ("GroupBy", "pod"),
    ]:
        query = query.replace(f"<<.{field}>>", value)
    assert "<<" not in query, query
    return query


def discovered(prometheus: Prometheus, rule: Json) -> dict[str, str]:
    """API name -> Prometheus series name, for the series the rule's seriesQuery finds
    (the adapter asks /api/v1/series) and whose labels name the overridden resources."""
    answer = prometheus.api("/api/v1/series", [("match[]", rule["seriesQuery"])])
    assert answer["status"] == "success", answer
    names: dict[str, str] = {}
    for series in answer["data"]:
        assert set(rule["resources"]["overrides"]) <= set(series), series
        name = api_name(rule, series["__name__"])
        if name is not None:
            names[name] = series["__name__"]
    return names


def rule_for(name: str) -> Json:
    (rule,) = [r for r in rules() if r["name"]["as"] == name]
    return rule


# --- what the exporter serves ----------------------------------------------------------


@dataclass(frozen=True)
class Served:
    prometheus: Prometheus
    # family -> (namespace, pod) -> the values of the pod's vGPUs, from /metrics
    vgpus: dict[str, dict[tuple[str, str], list[float]]]

    def per_pod(self, family: str, namespace: str, pod: str) -> list[float]:
        values = self.vgpus[family][namespace, pod]
        assert values, (family, namespace, pod)
        return values


def vgpu_values(exposition: str) -> dict[str, dict[tuple[str, str], list[float]]]:
    found: dict[str, dict[tuple[str, str], list[float]]] = {}
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            if "pod" in sample.labels:
                pods = found.setdefault(sample.name, {})
                key = (sample.labels["namespace"], sample.labels["pod"])
                pods.setdefault(key, []).append(sample.value)
    return found


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The exporter simulating NODE, every scrape served from one collection (freshness of
    an hour: the values Prometheus holds are the ones /metrics shows), and Prometheus
    scraping it as deploy/'s job does."""
    home = tmp_path_factory.mktemp("autoscaling")
    scenario = home / "scenario.yaml"
    scenario.write_text(yaml.safe_dump(SCENARIO))
    args = ["--simulate", str(scenario), "--node", NODE, "--collection.freshness", "1h"]
    exporter = start_exporter(args, home / "exporter.log", node=NODE)
    try:
        with running_prometheus(home, scrape_config({exporter.url: NODE})) as prometheus:
            prometheus.wait_for("xgpu_core_percentage_used", at_least(VGPUS))
            prometheus.wait_for("xgpu_memory_used", at_least(VGPUS))
            yield Served(prometheus, vgpu_values(exporter.metrics()))
    finally:
        exporter.stop()


def mean(values: list[float]) -> float:
    return sum(values) / len(values)


# What each API metric means for one pod, from the exporter's own figures.
EXPECTED: dict[str, Callable[[Served, str, str], float]] = {
    "xgpu_core_percentage_used": lambda s, ns, pod: mean(
        s.per_pod("xgpu_core_percentage_used", ns, pod)
    ),
    "xgpu_core_percentage_used_of_allotted": lambda s, ns, pod: (
        100
        * sum(s.per_pod("xgpu_core_percentage_used", ns, pod))
        / sum(s.per_pod("xgpu_core_percentage_total", ns, pod))
    ),
    "xgpu_memory_used": lambda s, ns, pod: sum(s.per_pod("xgpu_memory_used", ns, pod)),
}


def by_pod(result: list[Sample]) -> dict[str, float]:
    pods = [sample["metric"]["pod"] for sample in result]
    assert len(pods) == len(set(pods)), f"more than one sample per pod: {result}"
    return {sample["metric"]["pod"]: float(sample["value"][1]) for sample in result}


def adapter_answer(
    served: Served, name: str, namespace: str, pods: Sequence[str]
) -> dict[str, float]:
    rule = rule_for(name)
    series = discovered(served.prometheus, rule)[name]
    return by_pod(served.prometheus.query(metrics_query(rule, series, namespace, pods)))


# --- the adapter's rules ---------------------------------------------------------------


def test_the_rules_discover_the_exporters_series_under_the_names_hpas_use(served: Served) -> None:
    names: dict[str, str] = {}
    for rule in rules():
        found = discovered(served.prometheus, rule)
        assert found, f"{rule['seriesQuery']} finds nothing"
        assert not set(found) & set(names), "two rules serve one name"
        names |= found
    assert names == {
        "xgpu_core_percentage_used": "xgpu_core_percentage_used",
        "xgpu_core_percentage_used_of_allotted": "xgpu_core_percentage_total",
        "xgpu_memory_used": "xgpu_memory_used",
    }
    (metric,) = load(HPA)["spec"]["metrics"]
    assert metric["pods"]["metric"]["name"] in names


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize(
    "pods", [INFER, INFER[:1], (*INFER, CANARY)], ids=["replicas", "one", "two-deployments"]
)
def test_each_rule_answers_one_sample_per_pod_with_that_pods_value(
    served: Served, name: str, pods: tuple[str, ...]
) -> None:
    """The HPA's request: the namespace and its target's pods. INFER[0]'s name is also a
    pod of namespace ml, which must not count. The canary has no core allotment."""
    answer = adapter_answer(served, name, "web", pods)
    has_series = [p for p in pods if ("web", p) in served.vgpus[source_family(name)]]
    assert sorted(answer) == sorted(has_series)
    for pod in has_series:
        assert answer[pod] == pytest.approx(EXPECTED[name](served, "web", pod), rel=1e-9), pod


def source_family(name: str) -> str:
    return "xgpu_core_percentage_total" if name.endswith("_of_allotted") else name


def test_a_pod_on_two_cards_counts_the_mean_of_its_cards(served: Served) -> None:
    """Why the rule averages: a sum (the mutant) doubles a two-card pod's core %, and the
    check above would see it."""
    rule = rule_for("xgpu_core_percentage_used")
    query = metrics_query(rule, "xgpu_core_percentage_used", "web", INFER)
    assert query.startswith("avg(")
    summed = by_pod(served.prometheus.query("sum" + query.removeprefix("avg")))
    for pod in INFER:
        cards = served.per_pod("xgpu_core_percentage_used", "web", pod)
        assert len(cards) == 2
        assert summed[pod] != pytest.approx(EXPECTED[rule["name"]["as"]](served, "web", pod))


def test_label_matchers_are_the_adapters() -> None:
    """The form the adapter's documentation and tests give (docs/config.md)."""
    assert label_matchers("somens", ["pod1", "pod2"]) == 'namespace="somens",pod=~"pod1|pod2"'
    assert label_matchers("somens", ["pod1"]) == 'namespace="somens",pod="pod1"'
    assert api_name({"name": {"matches": "^(.*)_total$", "as": "${1}_per_second"}}, "a_total") == (
        "a_per_second"
    )
    assert (
        api_name({"name": {"matches": "^xgpu_memory_used$"}}, "xgpu_core_percentage_used") is None
    )


# --- KEDA ------------------------------------------------------------------------------


def test_the_keda_query_is_one_element_the_sum_of_the_replicas_values(served: Served) -> None:
    (trigger,) = load(SCALED_OBJECT)["spec"]["triggers"]
    result = served.prometheus.query(trigger["metadata"]["query"])
    assert len(result) == 1, result  # KEDA reads a single-element vector or a scalar
    value = float(result[0]["value"][1])
    expected = sum(EXPECTED["xgpu_core_percentage_used"](served, "web", pod) for pod in INFER)
    assert value == pytest.approx(expected, rel=1e-9)
    # No pod with series: nothing at all, not 0, which ignoreNullValues "false" makes an
    # error for KEDA instead of a scale-in.
    assert trigger["metadata"]["ignoreNullValues"] == "false"
    nobody = trigger["metadata"]["query"].replace('namespace="web"', 'namespace="absent"')
    assert served.prometheus.query(nobody) == []
    # The same figures the HPA of hpa.yaml averages: equal desired replicas for one target.
    assert value == pytest.approx(
        sum(adapter_answer(served, "xgpu_core_percentage_used", "web", INFER).values())
    )


def test_the_pages_allotment_query_for_keda_is_one_element_the_replicas_sum(
    served: Served,
) -> None:
    """docs/autoscaling.md's KEDA query for `_of_allotted`: the adapter rule's per-pod
    figure, summed over the Deployment's pods."""
    page = (REPO / "docs" / "autoscaling.md").read_text().splitlines()
    (query,) = [line for line in page if line.startswith("sum(100 * sum by (pod) (")]
    result = served.prometheus.query(query)
    assert len(result) == 1, result
    name = "xgpu_core_percentage_used_of_allotted"
    expected = sum(EXPECTED[name](served, "web", pod) for pod in INFER)
    assert float(result[0]["value"][1]) == pytest.approx(expected, rel=1e-9)


# The ScaledObject's fields as KEDA documents them (keda.sh docs, "ScaledObject
# specification" and the Prometheus scaler, 2.16): checked by name and type, as the
# Prometheus Operator's kinds are in test_manifests.py.
SCALED_OBJECT_SPEC = {
    "scaleTargetRef", "pollingInterval", "cooldownPeriod", "initialCooldownPeriod",
    "idleReplicaCount", "minReplicaCount", "maxReplicaCount", "fallback", "advanced", "triggers",
}  # fmt: skip
TRIGGER = {"type", "metadata", "name", "useCachedMetrics", "authenticationRef", "metricType"}
PROMETHEUS_METADATA = {
    "serverAddress", "query", "queryParameters", "threshold", "activationThreshold",
    "namespace", "customHeaders", "ignoreNullValues", "unsafeSsl",
}  # fmt: skip


def test_the_scaled_object_uses_kedas_documented_fields_and_the_hpas_target() -> None:
    scaled = load(SCALED_OBJECT)
    hpa = load(HPA)
    assert (scaled["apiVersion"], scaled["kind"]) == ("keda.sh/v1alpha1", "ScaledObject")
    assert set(scaled["spec"]) <= SCALED_OBJECT_SPEC
    assert scaled["metadata"]["namespace"] == hpa["metadata"]["namespace"]
    # KEDA's default target kind is a Deployment (apps/v1).
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "apps/v1",
        "kind": scaled["spec"]["scaleTargetRef"].get("kind", "Deployment"),
        "name": scaled["spec"]["scaleTargetRef"]["name"],
    }
    assert scaled["spec"]["minReplicaCount"] == hpa["spec"]["minReplicas"]
    assert scaled["spec"]["maxReplicaCount"] == hpa["spec"]["maxReplicas"]
    (trigger,) = scaled["spec"]["triggers"]
    assert set(trigger) <= TRIGGER
    assert trigger["type"] == "prometheus"
    assert trigger["metricType"] in {"AverageValue", "Value"}
    metadata = trigger["metadata"]
    assert set(metadata) <= PROMETHEUS_METADATA
    assert {"serverAddress", "query", "threshold"} <= set(metadata)
    # The CRD's metadata is a map of strings: a bare number or boolean is refused.
    assert all(isinstance(value, str) for value in metadata.values()), metadata
    (metric,) = hpa["spec"]["metrics"]
    assert float(metadata["threshold"]) == float(metric["pods"]["target"]["averageValue"])
    assert metadata["serverAddress"] == prometheus_operator_url()


def prometheus_operator_url() -> str:
    """The Prometheus the prometheus-operator overlay's advisor queries."""
    (cronjob,) = [d for d in objects("prometheus-operator") if d["kind"] == "CronJob"]
    (container,) = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    (url,) = [
        a.removeprefix("--prometheus=") for a in container["args"] if a.startswith("--prometheus=")
    ]
    return str(url)


# --- the manifests ---------------------------------------------------------------------


def test_the_hpa_is_schema_valid_and_reads_a_pods_metric_per_pod() -> None:
    hpa = load(HPA)
    kubernetes_validate.validate(hpa, KUBERNETES_VERSION, strict=True)
    (metric,) = hpa["spec"]["metrics"]
    assert metric["type"] == "Pods"
    assert metric["pods"]["target"]["type"] == "AverageValue"
    assert hpa["spec"]["scaleTargetRef"]["kind"] == "Deployment"


def test_strict_validation_catches_a_misspelt_hpa_field() -> None:
    hpa = load(HPA)
    hpa["spec"]["metrics"][0]["pods"]["target"]["averageValues"] = "60"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(hpa, KUBERNETES_VERSION, strict=True)


def test_the_adapter_configmap_builds_and_carries_the_rules_as_config_yaml() -> None:
    documents = kustomize(ADAPTER)
    (configmap,) = documents
    kubernetes_validate.validate(configmap, KUBERNETES_VERSION, strict=True)
    assert configmap["kind"] == "ConfigMap"
    assert set(configmap["data"]) == {"config.yaml"}  # the file the chart's adapter reads
    assert yaml.safe_load(configmap["data"]["config.yaml"]) == load(ADAPTER / "config.yaml")
    values = load(ADAPTER / "values.yaml")
    assert configmap["metadata"]["name"] == values["rules"]["existing"]
    # The chart registers the custom metrics API only with `default` or `custom` set.
    assert values["rules"]["default"] is True
    url = urllib.parse.urlsplit(prometheus_operator_url())
    host = url.hostname or ""
    assert (values["prometheus"]["url"], values["prometheus"]["port"]) == (
        f"{url.scheme}://{host}",
        url.port,
    )
    # Beside that Prometheus and the adapter: <service>.<namespace>.svc
    assert configmap["metadata"]["namespace"] == host.split(".")[1]
