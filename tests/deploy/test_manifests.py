"""Kubernetes manifests: schema-valid, least-privilege RBAC, locked-down workloads."""

from __future__ import annotations

import copy
import re
import subprocess
import urllib.parse
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import latest_version

from advisor.core.model import Node
from advisor.podspec.scheduling import read_pod_scheduling
from tests.advisor.core.filter_checker import static_refusal

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
BASE = DEPLOY / "base"
RENDERED = DEPLOY / "rendered" / "all.yaml"

# The newest Kubernetes whose schemas kubernetes-validate ships (1.37 at the time of writing).
KUBERNETES_VERSION = latest_version()
# CRDs of the Prometheus Operator: no schema offline; checked below and by promtool.
OPERATOR_KINDS = {"ServiceMonitor", "PodMonitor", "PrometheusRule"}
# In base/ but deliberately not in kustomization.yaml (see the file's header).
OPT_IN_FILES = {"exporter-podmonitor.yaml"}
READ_ONLY = ["get", "list", "watch"]
Document = dict[str, Any]


def load(path: Path) -> list[Document]:
    return [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d is not None]


def manifest_files() -> list[Path]:
    files = sorted(p for p in BASE.glob("*.yaml") if p.name != "kustomization.yaml")
    return [*files, RENDERED]


def all_documents() -> list[tuple[str, Document]]:
    return [
        (f"{path.relative_to(DEPLOY)}#{index}", document)
        for path in manifest_files()
        for index, document in enumerate(load(path))
    ]


def find(documents: list[Document], kind: str, name: str) -> Document:
    matches = [d for d in documents if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(matches) == 1, f"expected one {kind} {name}, found {len(matches)}"
    return matches[0]


def pod_template(workload: Document) -> Document:
    """The pod template of a DaemonSet, a Deployment or a CronJob."""
    spec = workload["spec"]
    template: Document = (
        spec["jobTemplate"]["spec"]["template"] if "jobTemplate" in spec else spec["template"]
    )
    return template


@pytest.fixture(scope="module")
def objects() -> list[Document]:
    return load(RENDERED)


def test_validates_against_a_recent_kubernetes() -> None:
    major, minor = (int(part) for part in KUBERNETES_VERSION.split(".")[:2])
    assert (major, minor) >= (1, 30)


@pytest.mark.parametrize(
    ("source", "document"),
    [(s, d) for s, d in all_documents() if d["kind"] not in OPERATOR_KINDS],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_manifest_is_schema_valid(source: str, document: Document) -> None:
    kubernetes_validate.validate(document, KUBERNETES_VERSION, strict=True)


def test_strict_validation_catches_an_unknown_field(objects: list[Document]) -> None:
    daemonset = copy.deepcopy(find(objects, "DaemonSet", "xgpu-exporter"))
    daemonset["spec"]["template"]["spec"]["containers"][0]["runAsRoot"] = True
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(daemonset, KUBERNETES_VERSION, strict=True)


def home_namespace(source: str) -> str:
    """The exporter's files (base/exporter-*.yaml) deploy to its namespace of its own
    (hostPID needs the `privileged` Pod Security level); the rest to xgpu-insight."""
    return "xgpu-exporter" if source.startswith("base/exporter-") else "xgpu-insight"


def base_namespaces() -> dict[tuple[str, str], set[str]]:
    """(kind, name) -> the namespaces the base files defining it call home (two, for the
    default-deny policy each namespace has)."""
    homes: dict[tuple[str, str], set[str]] = {}
    for source, document in all_documents():
        if source.startswith("base/"):
            key = (document["kind"], document["metadata"]["name"])
            homes.setdefault(key, set()).add(home_namespace(source))
    return homes


def test_operator_objects_use_the_v1_api() -> None:
    homes = base_namespaces()
    for source, document in all_documents():
        if document["kind"] in OPERATOR_KINDS:
            assert document["apiVersion"] == "monitoring.coreos.com/v1", source
            key = (document["kind"], document["metadata"]["name"])
            assert document["metadata"]["namespace"] in homes[key], source


def test_every_base_file_is_in_the_kustomization_or_a_known_opt_in() -> None:
    kustomization = yaml.safe_load((BASE / "kustomization.yaml").read_text())
    files = {p.name for p in BASE.glob("*.yaml")} - {"kustomization.yaml"}
    assert set(kustomization["resources"]) == files - OPT_IN_FILES


def test_every_namespaced_object_lives_in_its_components_namespace(
    objects: list[Document],
) -> None:
    cluster_scoped = {"Namespace", "ClusterRole", "ClusterRoleBinding"}
    homes = base_namespaces()
    homes[("ConfigMap", "xgpu-dashboards")] = {"xgpu-insight"}  # generated, no base file
    namespaces = {d["metadata"]["name"] for d in objects if d["kind"] == "Namespace"}
    assert namespaces == {"xgpu-insight", "xgpu-exporter"}
    for document in objects:
        namespace = document["metadata"].get("namespace")
        key = (document["kind"], document["metadata"]["name"])
        if document["kind"] in cluster_scoped:
            assert namespace is None, key
        else:
            assert namespace in homes[key], key
    exporter_side = {k for k, home in homes.items() if "xgpu-exporter" in home}
    assert ("DaemonSet", "xgpu-exporter") in exporter_side
    assert not any(kind in {"CronJob", "Deployment"} for kind, _ in exporter_side)


@pytest.mark.realservices  # promtool
def test_promtool_accepts_the_prometheus_rule_specs(promtool: str, tmp_path: Path) -> None:
    rules_file = yaml.safe_load((DEPLOY / "rules" / "xgpu.rules.yaml").read_text())
    rule_count = sum(len(group["rules"]) for group in rules_file["groups"])
    specs = [(s, d) for s, d in all_documents() if d["kind"] == "PrometheusRule"]
    assert len(specs) == 2  # base/prometheusrule.yaml and its copy in rendered/all.yaml
    for index, (source, document) in enumerate(specs):
        path = tmp_path / f"spec-{index}.yaml"
        path.write_text(yaml.safe_dump(document["spec"]))
        result = subprocess.run(
            [promtool, "check", "rules", str(path)], capture_output=True, text=True, check=False
        )
        assert result.returncode == 0, (source, result.stdout, result.stderr)
        assert f"SUCCESS: {rule_count} rules found" in result.stdout, source


# --- RBAC ------------------------------------------------------------------------------


def test_only_the_two_expected_roles_exist(objects: list[Document]) -> None:
    roles = {(d["kind"], d["metadata"]["name"]) for d in objects if d["kind"].endswith("Role")}
    assert roles == {("ClusterRole", "xgpu-exporter"), ("ClusterRole", "xgpu-advisor")}


@pytest.mark.parametrize(
    ("name", "resources"),
    [
        ("xgpu-exporter", [("", "pods", READ_ONLY)]),
        (
            "xgpu-advisor",
            [
                ("", "nodes", READ_ONLY),
                ("", "pods", READ_ONLY),
                # which pods plans and scale-down may evict; read once per run, never watched
                ("policy", "poddisruptionbudgets", ["get", "list"]),
                # the scheduler's job layer (docs/design.md §10.1)
                ("", "resourcequotas", READ_ONLY),
                ("", "configmaps", READ_ONLY),
                ("scheduling.volcano.sh", "podgroups", READ_ONLY),
                ("scheduling.volcano.sh", "queues", READ_ONLY),
                # how far each workload may grow (docs/design.md §12.1); read once per run
                ("autoscaling", "horizontalpodautoscalers", ["get", "list"]),
            ],
        ),
    ],
)
def test_roles_are_read_only_and_least_privilege(
    objects: list[Document], name: str, resources: list[tuple[str, str, list[str]]]
) -> None:
    role = find(objects, "ClusterRole", name)
    granted = {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    assert granted == {(g, r, v) for g, r, verbs in resources for v in verbs}
    # Only the advisor's ConfigMap rule names its object, and it names Volcano's one only:
    # the role reads no other ConfigMap (which may hold credentials).
    named = [rule for rule in role["rules"] if "resourceNames" in rule]
    assert all(
        set(rule) == {"apiGroups", "resources", "verbs"}
        for rule in role["rules"]
        if rule not in named
    )
    if any("configmaps" in rule["resources"] for rule in role["rules"]):
        assert [(r["resources"], r["resourceNames"]) for r in named] == [
            (["configmaps"], ["volcano-scheduler-configmap"])
        ]
    else:
        assert named == []


@pytest.mark.parametrize("name", ["xgpu-exporter", "xgpu-advisor"])
def test_each_role_is_bound_to_its_own_service_account_only(
    objects: list[Document], name: str
) -> None:
    bindings = [d for d in objects if d["kind"].endswith("RoleBinding")]
    mine = [b for b in bindings if b["roleRef"]["name"] == name]
    assert len(mine) == 1
    assert mine[0]["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "ClusterRole",
        "name": name,
    }
    account = find(objects, "ServiceAccount", name)
    assert mine[0]["subjects"] == [
        {"kind": "ServiceAccount", "name": name, "namespace": account["metadata"]["namespace"]}
    ]


# --- exporter DaemonSet ----------------------------------------------------------------


@pytest.fixture(scope="module")
def exporter_pod(objects: list[Document]) -> Document:
    pod: Document = pod_template(find(objects, "DaemonSet", "xgpu-exporter"))["spec"]
    return pod


def test_exporter_pod_has_host_pid_and_nothing_else_from_the_host(exporter_pod: Document) -> None:
    assert exporter_pod["hostPID"] is True
    assert not exporter_pod.get("hostNetwork")
    assert not exporter_pod.get("hostIPC")
    assert all("hostPath" not in volume for volume in exporter_pod.get("volumes", []))
    assert exporter_pod["serviceAccountName"] == "xgpu-exporter"
    assert exporter_pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}


def test_exporter_container_is_locked_down(exporter_pod: Document) -> None:
    (container,) = exporter_pod["containers"]
    context = container["securityContext"]
    assert context["privileged"] is False
    assert context["allowPrivilegeEscalation"] is False
    assert context["readOnlyRootFilesystem"] is True
    assert context["capabilities"] == {"drop": ["ALL"]}
    # uid 0 without capabilities, on purpose (see the manifest's comment): make it explicit.
    assert context["runAsNonRoot"] is False
    assert context["runAsUser"] == 0


def test_exporter_priority_is_not_system_critical(exporter_pod: Document) -> None:
    assert not str(exporter_pod.get("priorityClassName", "")).startswith("system-")


def test_exporter_runs_on_gpu_nodes_only_and_tolerates_gpu_taints(exporter_pod: Document) -> None:
    terms = exporter_pod["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    expressions = [e for term in terms["nodeSelectorTerms"] for e in term["matchExpressions"]]
    assert {"key": "nvidia.com/gpu.present", "operator": "In", "values": ["true"]} in expressions
    assert {"key": "accelerator", "operator": "Exists"} in expressions
    assert {"key": "gpu", "operator": "In", "values": ["on"]} in expressions  # HAMi's label
    # Each term is a single GPU-label condition: no term may match a CPU-only node.
    assert all(len(term["matchExpressions"]) == 1 for term in terms["nodeSelectorTerms"])
    tolerations = exporter_pod["tolerations"]
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in tolerations
    # Never tolerate everything (a toleration without key).
    assert all(toleration.get("key") for toleration in tolerations)


@pytest.mark.parametrize(
    ("labels", "admitted"),
    [
        ({"nvidia.com/gpu.present": "true"}, True),  # GPU operator / feature discovery
        ({"accelerator": "nvidia-tesla-t4"}, True),  # CCE and others
        ({"gpu": "on"}, True),  # HAMi's device plugin selects these
        ({"gpu": "on", "nvidia.com/gpu.present": "false"}, True),  # terms are ORed
        ({"gpu": "off"}, False),
        ({"nvidia.com/gpu.present": "false"}, False),
        ({"kubernetes.io/os": "linux"}, False),  # a CPU-only node
    ],
)
def test_exporter_lands_on_every_schedulers_gpu_nodes(
    exporter_pod: Document, labels: dict[str, str], admitted: bool
) -> None:
    """The DaemonSet's affinity as kube-scheduler reads it (the advisor's pod reader, judged
    by the tests' independent NodeAffinity restatement), on nodes labelled as the GPU
    operator, CCE and HAMi label them."""
    scheduling = read_pod_scheduling({"spec": exporter_pod})
    assert scheduling.problems == ()
    node = Node("n1", cards=(), labels=labels)
    assert (static_refusal(node, scheduling.constraints) is None) is admitted


def test_exporter_container_wiring(exporter_pod: Document) -> None:
    (container,) = exporter_pod["containers"]
    env = {e["name"]: e for e in container["env"]}
    assert env["NODE_NAME"]["valueFrom"] == {"fieldRef": {"fieldPath": "spec.nodeName"}}
    assert env["NVIDIA_VISIBLE_DEVICES"]["value"] == "all"
    assert container["ports"] == [{"name": "metrics", "containerPort": 19400, "protocol": "TCP"}]
    assert "--web.listen-address=:19400" in container["args"]
    assert container["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "metrics"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "metrics"}


def quantity(value: str) -> float:
    """CPU or memory quantity in base units (only the suffixes used here)."""
    match = re.fullmatch(r"([0-9.]+)(m|Mi|Gi)?", value)
    assert match, value
    scale = {None: 1.0, "m": 1e-3, "Mi": 2.0**20, "Gi": 2.0**30}[match.group(2)]
    return float(match.group(1)) * scale


WORKLOADS = [
    ("DaemonSet", "xgpu-exporter"),
    ("CronJob", "xgpu-advisor"),
    ("Deployment", "xgpu-pushgateway"),
    ("Deployment", "xgpu-advisor-reports"),
]


def test_every_workload_is_checked_here(objects: list[Document]) -> None:
    kinds = {"DaemonSet", "Deployment", "StatefulSet", "CronJob", "Job", "Pod", "ReplicaSet"}
    found = {(d["kind"], d["metadata"]["name"]) for d in objects if d["kind"] in kinds}
    assert found == set(WORKLOADS)


@pytest.mark.parametrize(("kind", "name"), WORKLOADS)
def test_every_container_is_locked_down(objects: list[Document], kind: str, name: str) -> None:
    pod = pod_template(find(objects, kind, name))["spec"]
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not pod.get("hostNetwork")
    assert not pod.get("hostIPC")
    # hostPID is the exporter's alone (process attribution).
    assert bool(pod.get("hostPID")) == (name == "xgpu-exporter")
    assert all("hostPath" not in volume for volume in pod.get("volumes", []))
    for container in pod["containers"]:
        context = container["securityContext"]
        assert context["privileged"] is False
        assert context["allowPrivilegeEscalation"] is False
        assert context["readOnlyRootFilesystem"] is True
        assert context["capabilities"] == {"drop": ["ALL"]}
        assert "add" not in context["capabilities"]
        # A pinned image: a tag that names a version, never latest or none.
        image = container["image"]
        assert re.fullmatch(r"[\w./-]+:v?\d+\.\d+\.\d+", image), image


@pytest.mark.parametrize(("kind", "name"), WORKLOADS)
def test_resources_are_bounded(objects: list[Document], kind: str, name: str) -> None:
    pod = pod_template(find(objects, kind, name))["spec"]
    for container in pod["containers"]:
        resources = container["resources"]
        for resource in ("cpu", "memory"):
            request = quantity(str(resources["requests"][resource]))
            limit = quantity(str(resources["limits"][resource]))
            assert 0 < request <= limit, (container["name"], resource)
    if kind == "DaemonSet":  # one per GPU node: keep it small
        (container,) = pod["containers"]
        assert quantity(container["resources"]["limits"]["cpu"]) <= 0.25
        assert quantity(container["resources"]["limits"]["memory"]) <= 256 * 2**20


# --- advisor CronJob -------------------------------------------------------------------


@pytest.fixture(scope="module")
def advisor_cronjob(objects: list[Document]) -> Document:
    return find(objects, "CronJob", "xgpu-advisor")


def test_advisor_runs_every_five_minutes_without_overlap(advisor_cronjob: Document) -> None:
    spec = advisor_cronjob["spec"]
    assert spec["schedule"] == "*/5 * * * *"
    assert spec["concurrencyPolicy"] == "Forbid"
    assert spec["jobTemplate"]["spec"]["activeDeadlineSeconds"] < 300


def test_advisor_writes_reports_to_its_volume(
    objects: list[Document], advisor_cronjob: Document
) -> None:
    pod = pod_template(advisor_cronjob)["spec"]
    (container,) = pod["containers"]
    assert container["command"] == ["xgpu-advisor"]
    args = container["args"]
    assert args[0] == "report"
    assert any(a.startswith("--prometheus=http") for a in args)
    assert "--output-dir=/reports" in args
    assert "--textfile=/reports/xgpu_advisor.prom" in args
    # Pending pods are known only to the API server: without this the model has none.
    assert "--kubernetes" in args
    # Findings must not fail the Job (it would be retried); alerts carry them instead.
    assert not any(a.startswith("--fail-on") for a in args)
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert mounts["reports"] == "/reports"
    volumes = {v["name"]: v for v in pod["volumes"]}
    claim = volumes["reports"]["persistentVolumeClaim"]["claimName"]
    assert claim == "xgpu-advisor-reports"
    find(objects, "PersistentVolumeClaim", claim)
    assert pod["serviceAccountName"] == "xgpu-advisor"


def test_advisor_is_locked_down_and_non_root(advisor_cronjob: Document) -> None:
    pod = pod_template(advisor_cronjob)["spec"]
    assert not pod.get("hostPID")
    assert not pod.get("hostNetwork")
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    (container,) = pod["containers"]
    context = container["securityContext"]
    assert context["privileged"] is False
    assert context["allowPrivilegeEscalation"] is False
    assert context["readOnlyRootFilesystem"] is True
    assert context["capabilities"] == {"drop": ["ALL"]}


def flag_value(args: list[str], flag: str) -> str:
    (value,) = [a.split("=", 1)[1] for a in args if a.startswith(f"{flag}=")]
    return value


def test_advisor_pushes_to_the_deployed_pushgateway(
    objects: list[Document], advisor_cronjob: Document
) -> None:
    (container,) = pod_template(advisor_cronjob)["spec"]["containers"]
    url = urllib.parse.urlsplit(flag_value(container["args"], "--pushgateway"))
    assert url.scheme == "http"
    assert url.path in ("", "/")
    # <service>.<namespace>.svc:<port> names the Service in the base, on its port.
    assert url.hostname is not None
    name, namespace, svc = url.hostname.split(".")
    assert svc == "svc"
    service = find(objects, "Service", name)
    assert service["metadata"]["namespace"] == namespace
    (port,) = service["spec"]["ports"]
    assert url.port == port["port"] == 9091


def test_advisor_finishes_its_work_before_its_deadline(advisor_cronjob: Document) -> None:
    (container,) = pod_template(advisor_cronjob)["spec"]["containers"]
    budget = float(flag_value(container["args"], "--time-budget"))
    deadline = advisor_cronjob["spec"]["jobTemplate"]["spec"]["activeDeadlineSeconds"]
    # The plan search is the long part; sources and rendering need time besides.
    assert 0 < budget <= deadline / 2


# --- Pushgateway -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def pushgateway(objects: list[Document]) -> Document:
    return find(objects, "Deployment", "xgpu-pushgateway")


def test_pushgateway_image_is_pinned_upstream(pushgateway: Document) -> None:
    (container,) = pod_template(pushgateway)["spec"]["containers"]
    assert re.fullmatch(r"prom/pushgateway:v\d+\.\d+\.\d+", container["image"])


def test_pushgateway_runs_as_non_root_without_api_access(
    objects: list[Document], pushgateway: Document
) -> None:
    pod = pod_template(pushgateway)["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    # No Kubernetes API use: no token, no service account of its own, no role.
    assert pod["automountServiceAccountToken"] is False
    assert pod.get("serviceAccountName", "default") == "default"
    subjects = [s for d in objects if d["kind"].endswith("RoleBinding") for s in d["subjects"]]
    assert all("pushgateway" not in s["name"] for s in subjects)


def test_pushgateway_keeps_no_state_and_is_probed(pushgateway: Document) -> None:
    assert pushgateway["spec"]["replicas"] == 1  # two would split the pushes between them
    pod = pod_template(pushgateway)["spec"]
    (container,) = pod["containers"]
    assert "--persistence.file=" in container["args"]  # nothing written: read-only root
    assert not container.get("volumeMounts")
    assert container["ports"] == [{"name": "http", "containerPort": 9091, "protocol": "TCP"}]
    assert container["livenessProbe"]["httpGet"] == {"path": "/-/healthy", "port": "http"}
    assert container["readinessProbe"]["httpGet"] == {"path": "/-/ready", "port": "http"}


def test_pushgateway_service_selects_its_pods(
    objects: list[Document], pushgateway: Document
) -> None:
    service = find(objects, "Service", "xgpu-pushgateway")
    pod_labels = pod_template(pushgateway)["metadata"]["labels"]
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert pushgateway["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    (port,) = service["spec"]["ports"]
    assert port["targetPort"] == "http"
    assert service["spec"].get("clusterIP") != "None"


def test_pushgateway_service_monitor_honors_the_pushed_labels(objects: list[Document]) -> None:
    monitor = find(objects, "ServiceMonitor", "xgpu-pushgateway")
    service = find(objects, "Service", "xgpu-pushgateway")
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["xgpu-insight"]}
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] == service["spec"]["ports"][0]["name"]
    assert endpoint["honorLabels"] is True
    (drop,) = endpoint["relabelings"]
    assert drop["action"] == "labeldrop"
    for label in ("pod", "namespace", "container", "service", "endpoint"):
        assert re.fullmatch(drop["regex"], label), label
    for label in ("job", "instance", "cause", "kind"):
        assert not re.fullmatch(drop["regex"], label), label


def test_exporter_service_monitor_does_not_select_the_pushgateway(
    objects: list[Document],
) -> None:
    """Each monitor picks exactly its own Service: no series scraped twice."""
    services = [d for d in objects if d["kind"] == "Service"]
    for monitor in (d for d in objects if d["kind"] == "ServiceMonitor"):
        wanted = monitor["spec"]["selector"]["matchLabels"].items()
        picked = [
            s["metadata"]["name"] for s in services if wanted <= s["metadata"]["labels"].items()
        ]
        assert picked == [monitor["metadata"]["name"]]


# --- Service, monitors, dashboards -----------------------------------------------------


def test_service_is_headless_and_selects_the_exporter_pods(objects: list[Document]) -> None:
    service = find(objects, "Service", "xgpu-exporter")
    pod_labels = pod_template(find(objects, "DaemonSet", "xgpu-exporter"))["metadata"]["labels"]
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["selector"].items() <= pod_labels.items()
    assert service["spec"]["ports"][0]["name"] == "metrics"
    assert service["spec"]["ports"][0]["targetPort"] == "metrics"


def monitors() -> list[tuple[Document, Document]]:
    """(monitor, its endpoint) for the ServiceMonitor and the opt-in PodMonitor."""
    service_monitor = find(
        load(BASE / "exporter-servicemonitor.yaml"), "ServiceMonitor", "xgpu-exporter"
    )
    pod_monitor = find(load(BASE / "exporter-podmonitor.yaml"), "PodMonitor", "xgpu-exporter")
    return [
        (service_monitor, service_monitor["spec"]["endpoints"][0]),
        (pod_monitor, pod_monitor["spec"]["podMetricsEndpoints"][0]),
    ]


@pytest.mark.parametrize(("monitor", "endpoint"), monitors(), ids=["ServiceMonitor", "PodMonitor"])
def test_monitor_keeps_workload_labels_and_adds_node(
    objects: list[Document], monitor: Document, endpoint: Document
) -> None:
    daemonset = find(objects, "DaemonSet", "xgpu-exporter")
    pod_labels = pod_template(daemonset)["metadata"]["labels"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= pod_labels.items()
    namespace = daemonset["metadata"]["namespace"]
    assert monitor["metadata"]["namespace"] == namespace
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": [namespace]}
    assert endpoint["port"] == "metrics"
    assert endpoint["honorLabels"] is True
    relabelings = endpoint["relabelings"]
    assert {
        "sourceLabels": ["__meta_kubernetes_pod_node_name"],
        "targetLabel": "node",
        "action": "replace",
    } in relabelings
    (drop,) = [r for r in relabelings if r["action"] == "labeldrop"]
    for label in ("pod", "namespace", "container"):
        assert re.fullmatch(drop["regex"], label), label
    for label in ("node", "gpu_index", "job", "instance"):
        assert not re.fullmatch(drop["regex"], label), label


def test_service_monitor_is_deployed_and_the_pod_monitor_is_not(objects: list[Document]) -> None:
    kinds = {d["kind"] for d in objects}
    assert "ServiceMonitor" in kinds
    assert "PodMonitor" not in kinds


def test_dashboards_configmap_is_provisioned_for_grafana(objects: list[Document]) -> None:
    configmap = find(objects, "ConfigMap", "xgpu-dashboards")
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    expected = {p.name for p in (BASE / "dashboards").glob("*.json")}
    assert set(configmap["data"]) == expected
    for name, text in configmap["data"].items():
        assert text == (BASE / "dashboards" / name).read_text()


# --- image -----------------------------------------------------------------------------


def test_dockerfile_builds_the_project_for_a_non_root_user(objects: list[Document]) -> None:
    lines = [
        line.strip()
        for line in (DEPLOY / "Dockerfile").read_text().splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    # The Python the lock was compiled for, by digest (scripts/check_image.py: the rules).
    assert re.fullmatch(r"FROM python:3\.11[\w.-]*@sha256:[0-9a-f]{64}", lines[0]), lines[0]
    assert "# This file is autogenerated by pip-compile with Python 3.11" in (
        (REPO / "requirements.lock").read_text()
    )
    assert 'ENTRYPOINT ["xgpu-exporter"]' in lines
    (user,) = [line.split()[1] for line in lines if line.startswith("USER ")]
    uid = int(user.split(":")[0])
    assert uid != 0
    pod = pod_template(find(objects, "CronJob", "xgpu-advisor"))["spec"]
    assert pod["securityContext"]["runAsUser"] == uid
    # Every package the project installs is copied in.
    pyproject = (REPO / "pyproject.toml").read_text()
    packages = re.search(r"include = \[(.*?)\]", pyproject)
    assert packages
    for package in re.findall(r'"(\w+)\*"', packages.group(1)):
        assert f"COPY {package}/ {package}/" in lines, package
    # Both programs are entry points of the one image.
    for script in ("xgpu-exporter", "xgpu-advisor"):
        assert re.search(rf"^{script} = ", pyproject, re.MULTILINE), script
    images = {
        container["image"]
        for document in objects
        if document["kind"] in {"DaemonSet", "CronJob"}
        for container in pod_template(document)["spec"]["containers"]
    }
    assert len(images) == 1


def test_images_are_named_in_the_kustomization_only() -> None:
    """Registry, name and tag live in base/kustomization.yaml's `images:`; the manifests
    name the image by a bare name that `images:` rewrites."""
    kustomization = yaml.safe_load((BASE / "kustomization.yaml").read_text())
    names = {image["name"] for image in kustomization["images"]}
    for image in kustomization["images"]:
        assert re.fullmatch(r"v?\d+\.\d+\.\d+", image["newTag"]), image
    used = set()
    for source, document in all_documents():
        if source.startswith("base/") and document["kind"] in {
            "DaemonSet",
            "CronJob",
            "Deployment",
        }:
            for container in pod_template(document)["spec"]["containers"]:
                assert container["image"] in names, (source, container["image"])
                used.add(container["image"])
    assert used == names  # no stale entry either


def test_dashboards_fit_client_side_apply(objects: list[Document]) -> None:
    """`kubectl apply` copies the object into an annotation limited to 256 KiB."""
    configmap = find(objects, "ConfigMap", "xgpu-dashboards")
    size = sum(len(key) + len(text.encode()) for key, text in configmap["data"].items())
    assert size < 256 * 1024, "too big for client-side apply: split the ConfigMap"
