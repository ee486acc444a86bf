"""The advisor's ClusterRole grants every list its Kubernetes source makes: one live read
against the API double (the real client, every optional list answered), each request path
turned into the (API group, resource) RBAC checks it against."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.sources.kubernetes import read_kubernetes
from tests.deploy.conftest import DEPLOY, load_documents
from tests.kubeapi.server import KubeApiDouble

pytestmark = pytest.mark.realservices  # the Kubernetes API double

pytest_plugins = ["tests.kubeapi.fixtures"]


def granted_lists() -> set[tuple[str, str]]:
    (role,) = load_documents(DEPLOY / "base" / "advisor-clusterrole.yaml")
    return {
        (group, resource)
        for rule in role["rules"]
        if "list" in rule["verbs"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
    }


def asked(path: str) -> tuple[str, str]:
    """`/api/v1/pods` -> ("", "pods"); `/apis/G/V/namespaces/NS/R` -> ("G", "R")."""
    parts = path.strip("/").split("/")
    group = "" if parts[0] == "api" else parts[1]
    return group, parts[-1]


async def test_the_cluster_role_grants_every_list_the_advisor_makes(
    kube_api: KubeApiDouble, tmp_path: Path
) -> None:
    state = await read_kubernetes(str(kube_api.write_kubeconfig(tmp_path / "kubeconfig")))
    assert state.warnings == ()  # every list answered, none left out
    lists = {asked(r.path) for r in kube_api.requests}
    assert ("autoscaling", "horizontalpodautoscalers") in lists
    assert ("scheduling.volcano.sh", "queues") in lists
    assert lists <= granted_lists()
