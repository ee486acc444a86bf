"""The reports' server (`xgpu-advisor serve`) as deployed: in the base and every overlay,
schema-valid, meeting Pod Security `restricted`, reading the reports volume read-only, its
flags accepted by the real CLI parser and matching its ports, probe and Service, reachable
only from pods labelled as readers, and opening no connection of its own."""

from __future__ import annotations

from typing import Any

import kubernetes_validate
import pytest
import yaml
from kubernetes_validate.utils import latest_version

from advisor.cli import _parser
from tests.deploy.builds import BUILD_PARAMS, DEPLOY, find, objects, pod_of
from tests.deploy.network_policy import Cluster, Pod
from tests.deploy.pod_security import pod_template, violations

Json = dict[str, Any]
NAME = "xgpu-advisor-reports"
FILES = (
    "advisor-reports-deployment.yaml",
    "advisor-reports-service.yaml",
    "advisor-reports-networkpolicy.yaml",
)
READER = {"xgpu.io/reports-reader": "true"}
BASE_DIR = DEPLOY / "base"


def own_documents() -> list[Json]:
    return [
        d
        for name in FILES
        for d in yaml.safe_load_all((BASE_DIR / name).read_text(encoding="utf-8"))
        if d is not None
    ]


@pytest.mark.parametrize("document", own_documents(), ids=lambda d: d["kind"])
def test_schema_valid(document: Json) -> None:
    kubernetes_validate.validate(document, latest_version(), strict=True)


def test_listed_in_the_base_kustomization() -> None:
    listed = yaml.safe_load((BASE_DIR / "kustomization.yaml").read_text())["resources"]
    assert set(FILES) <= set(listed)


@pytest.mark.parametrize("build", BUILD_PARAMS)
def test_restricted_and_read_only(build: str) -> None:
    documents = objects(build)
    deployment = find(documents, "Deployment", NAME)
    template = pod_template(deployment)
    spec = template["spec"]
    assert violations(spec, template["metadata"].get("annotations"), "restricted") == []
    assert spec["automountServiceAccountToken"] is False
    (container,) = spec["containers"]
    context = container["securityContext"]
    assert context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"] == {"drop": ["ALL"]}
    (mount,) = container["volumeMounts"]
    assert mount["readOnly"] is True
    (volume,) = spec["volumes"]
    assert volume["name"] == mount["name"]
    # the claim the CronJob writes its reports to, mounted read-only at the volume level too
    claim = volume["persistentVolumeClaim"]
    assert claim["readOnly"] is True
    cronjob = find(documents, "CronJob", "xgpu-advisor")
    cron_volumes = pod_template(cronjob)["spec"]["volumes"]
    assert claim["claimName"] in {
        v["persistentVolumeClaim"]["claimName"]
        for v in cron_volumes
        if "persistentVolumeClaim" in v
    }


@pytest.mark.parametrize("build", BUILD_PARAMS)
def test_the_cronjob_prefers_the_node_its_read_write_once_volume_is_on(build: str) -> None:
    # The claim is ReadWriteOnce: the CronJob's pod can mount it only on the server's node.
    # It prefers that node (pod affinity on the server's labels, by hostname); preferred,
    # so it still runs where the optional server is not deployed.
    documents = objects(build)
    claim = find(documents, "PersistentVolumeClaim", "xgpu-advisor-reports")
    assert claim["spec"]["accessModes"] == ["ReadWriteOnce"]
    server = pod_template(find(documents, "Deployment", NAME))["metadata"]["labels"]
    affinity = pod_template(find(documents, "CronJob", "xgpu-advisor"))["spec"]["affinity"]
    assert "requiredDuringSchedulingIgnoredDuringExecution" not in affinity["podAffinity"]
    (term,) = affinity["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    wanted = term["podAffinityTerm"]
    assert wanted["topologyKey"] == "kubernetes.io/hostname"
    assert wanted["labelSelector"]["matchLabels"].items() <= server.items()


@pytest.mark.parametrize("build", BUILD_PARAMS)
def test_flags_ports_probes_and_service_agree(build: str) -> None:
    """The real parser reads the container's command line; the port it listens on is the
    container's `http` port, which the probes and the Service's target name."""
    documents = objects(build)
    deployment = find(documents, "Deployment", NAME)
    (container,) = pod_template(deployment)["spec"]["containers"]
    assert container["command"] == ["xgpu-advisor"]
    args = _parser().parse_args(container["args"])
    assert args.command == "serve"
    assert str(args.reports) == container["volumeMounts"][0]["mountPath"]
    port = int(args.listen.rpartition(":")[2])
    (declared,) = container["ports"]
    assert (declared["name"], declared["containerPort"]) == ("http", port)
    for probe in ("livenessProbe", "readinessProbe"):
        assert container[probe]["httpGet"] == {"path": "/healthz", "port": "http"}
    service = find(documents, "Service", NAME)
    selector = service["spec"]["selector"]
    labels = pod_template(deployment)["metadata"]["labels"]
    assert selector.items() <= labels.items()
    assert deployment["spec"]["selector"]["matchLabels"].items() <= labels.items()
    (service_port,) = service["spec"]["ports"]
    assert service_port["targetPort"] == "http"


@pytest.mark.parametrize("build", BUILD_PARAMS)
def test_only_readers_reach_it_and_it_reaches_nothing(build: str) -> None:
    documents = objects(build)
    policies = Cluster(documents, {name: {} for name in ("monitoring", "ingress", "default")})
    server = pod_of(find(documents, "Deployment", NAME))
    reader = Pod("ingress", READER)
    assert policies.allows(reader, server, "http")
    advisor = pod_of(find(documents, "CronJob", "xgpu-advisor"))
    strangers = [
        Pod("monitoring", {"app.kubernetes.io/name": "grafana"}),
        Pod("default", {"app": "curl"}),
        advisor,
    ]
    for stranger in strangers:
        assert not policies.allows(stranger, server, "http"), stranger
    assert policies.isolated(server, "Egress")
    # not taken for the advisor: the Pushgateway admits pushes from the advisor's pods only
    pushgateway = pod_of(find(documents, "Deployment", "xgpu-pushgateway"))
    assert not policies.allows(server, pushgateway, "http")
