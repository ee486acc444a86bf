"""What each way of installing deploys: the base (deploy/rendered/all.yaml, which
test_render.py holds equal to `kubectl kustomize deploy/base`) and every overlay under
deploy/overlays/, built by kubectl's own kustomize."""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.network_policy import Pod
from tests.deploy.pod_security import WORKLOAD_KINDS, pod_template

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
RENDERED = DEPLOY / "rendered" / "all.yaml"
OVERLAYS = sorted(p.parent.name for p in (DEPLOY / "overlays").glob("*/kustomization.yaml"))
BUILDS = ["base", *OVERLAYS]
# As test parameters: an overlay is built by running kubectl, a real process.
BUILD_PARAMS = [
    "base",
    *(pytest.param(overlay, marks=pytest.mark.realservices) for overlay in OVERLAYS),
]
# kustomize v4 (kubectl 1.21) is the first with `patches` targets by label and `$patch:
# delete` through them; Debian bookworm's kubernetes-client (kubectl 1.20) has v2.0.3.
MINIMUM_KUSTOMIZE = (4, 0)
Json = dict[str, Any]


@functools.cache
def kubectl() -> str:
    path = shutil.which("kubectl")
    if path is None:
        pytest.fail("kubectl not found: install it (make system-deps)")
    result = subprocess.run(
        [path, "version", "--client"], capture_output=True, text=True, timeout=60, check=False
    )
    match = re.search(r"Kustomize Version: v(\d+)\.(\d+)", result.stdout)
    if match is None or (int(match.group(1)), int(match.group(2))) < MINIMUM_KUSTOMIZE:
        pytest.fail(
            f"{path}: its kustomize is older than v{MINIMUM_KUSTOMIZE[0]} (kubectl 1.21): "
            f"install a newer kubectl (pkgs.k8s.io) ahead of it on PATH"
        )
    return path


def kustomize(directory: Path) -> list[Json]:
    result = subprocess.run(
        [kubectl(), "kustomize", str(directory)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return [d for d in yaml.safe_load_all(result.stdout) if d is not None]


@functools.cache
def _objects(build: str) -> tuple[Json, ...]:
    if build == "base":
        return tuple(d for d in yaml.safe_load_all(RENDERED.read_text()) if d is not None)
    return tuple(kustomize(DEPLOY / "overlays" / build))


def objects(build: str) -> list[Json]:
    """A fresh copy each time: tests may change what they get."""
    return yaml.safe_load(yaml.safe_dump(list(_objects(build))))  # type: ignore[no-any-return]


def workloads(documents: list[Json]) -> list[Json]:
    return [d for d in documents if d["kind"] in WORKLOAD_KINDS]


def find(documents: list[Json], kind: str, name: str) -> Json:
    matches = [d for d in documents if d["kind"] == kind and d["metadata"]["name"] == name]
    assert len(matches) == 1, f"expected one {kind} {name}, found {len(matches)}"
    return matches[0]


def pod_of(workload: Json) -> Pod:
    """The workload's pods as a NetworkPolicy sees them: namespace, labels, named ports."""
    template = pod_template(workload)
    ports = {
        port["name"]: port["containerPort"]
        for container in template["spec"]["containers"]
        for port in container.get("ports") or []
    }
    return Pod(workload["metadata"]["namespace"], dict(template["metadata"]["labels"]), ports)
