"""deploy/render.py: the generated files are current, and its kustomize subset is right."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from tests.deploy.builds import kustomize

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"


def test_generated_files_are_up_to_date(render: ModuleType) -> None:
    expected = render.render()
    assert set(expected) == {
        DEPLOY / "base" / "prometheusrule.yaml",
        DEPLOY / "base" / "kustomization.yaml",
        DEPLOY / "rendered" / "all.yaml",
        DEPLOY / "overlays" / "plain-prometheus" / "scrape-config.yaml",
        DEPLOY / "overlays" / "plain-prometheus" / "xgpu.rules.yaml",
    }
    assert render.stale_files(expected) == [], "run: python deploy/render.py"


def test_prometheus_rule_embeds_the_rules_file_unchanged(render: ModuleType) -> None:
    rules = yaml.safe_load((DEPLOY / "rules" / "xgpu.rules.yaml").read_text())
    prometheus_rule = yaml.safe_load((DEPLOY / "base" / "prometheusrule.yaml").read_text())
    assert prometheus_rule["kind"] == "PrometheusRule"
    assert prometheus_rule["spec"]["groups"] == rules["groups"]


@pytest.mark.realservices  # runs render.py as a process
def test_check_reports_a_stale_copy_and_rendering_fixes_it(tmp_path: Path) -> None:
    deploy = tmp_path / "deploy"
    shutil.copytree(DEPLOY, deploy)
    rules = deploy / "rules" / "xgpu.rules.yaml"
    rules.write_text(rules.read_text().replace("for: 5m", "for: 7m", 1))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, str(deploy / "render.py"), *args]
        return subprocess.run(command, capture_output=True, text=True, check=False)

    stale = run("--check")
    assert stale.returncode == 1
    assert "stale: deploy/base/prometheusrule.yaml" in stale.stdout
    assert "stale: deploy/rendered/all.yaml" in stale.stdout
    assert "stale: deploy/overlays/plain-prometheus/xgpu.rules.yaml" in stale.stdout
    assert "scrape-config.yaml" not in stale.stdout
    assert "kustomization.yaml" not in stale.stdout
    assert run().returncode == 0
    assert run("--check").returncode == 0
    assert "for: 7m" in (deploy / "rendered" / "all.yaml").read_text()
    assert "for: 7m" in (deploy / "overlays" / "plain-prometheus" / "xgpu.rules.yaml").read_text()


DIGEST = "sha256:" + "a" * 64


def make_base(tmp_path: Path, kustomization: dict[str, Any]) -> Path:
    base = tmp_path / "base"
    (base / "dashboards").mkdir(parents=True)
    (base / "ns.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: demo\n")
    # Two objects in one file, an empty document, and kinds out of kustomize's order.
    (base / "app.yaml").write_text(
        "---\n"
        "apiVersion: apps/v1\nkind: DaemonSet\nmetadata:\n  name: b\n  namespace: demo\n"
        "spec:\n  template:\n    spec:\n"
        "      initContainers:\n        - name: init\n          image: busybox:1.36\n"
        "      containers:\n        - name: app\n          image: registry.local:5000/app:1.0\n"
        "        - name: side\n          image: registry.local:5000/app-sidecar\n"
        "---\n"
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: z\n  namespace: demo\n"
        "---\n"
        "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: a\n  namespace: demo\n"
    )
    (base / "monitor.yaml").write_text(
        "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\n"
        "metadata:\n  name: m\n  namespace: demo\n"
    )
    (base / "dashboards" / "b.json").write_text('{"title": "b"}\n')
    (base / "dashboards" / "a.json").write_text('{\n  "title": "a"\n}\n')
    (base / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    return base


def demo_kustomization(**generator_options: Any) -> dict[str, Any]:
    options = {"disableNameSuffixHash": True, "labels": {"grafana_dashboard": "1"}}
    options.update(generator_options)
    return {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["app.yaml", "monitor.yaml", "ns.yaml"],
        "images": [
            {"name": "registry.local:5000/app", "newTag": "2.0"},
            {"name": "busybox", "newName": "mirror.local/busybox", "digest": DIGEST},
        ],
        "configMapGenerator": [
            {
                "name": "xgpu-dashboards",
                "namespace": "demo",
                "files": ["dashboards/a.json", "dashboards/b.json"],
                "options": options,
            }
        ],
    }


def read_file(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def test_build_merges_resources_and_generator_in_kustomize_order(
    render: ModuleType, tmp_path: Path
) -> None:
    base = make_base(tmp_path, demo_kustomization())
    documents = render.build(base, read_file)
    assert [(d["kind"], d["metadata"]["name"]) for d in documents] == [
        ("Namespace", "demo"),
        ("ServiceAccount", "a"),
        ("ServiceAccount", "z"),
        ("ConfigMap", "xgpu-dashboards"),
        ("DaemonSet", "b"),
        ("ServiceMonitor", "m"),
    ]
    configmap = documents[3]
    assert configmap == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "xgpu-dashboards",
            "namespace": "demo",
            "labels": {"grafana_dashboard": "1"},
        },
        "data": {"a.json": '{\n  "title": "a"\n}\n', "b.json": '{"title": "b"}\n'},
    }
    # `images:` sets the tag behind a registry's port, name and digest of an init
    # container, and leaves an image with a similar name alone.
    pod = documents[4]["spec"]["template"]["spec"]
    assert pod["initContainers"][0]["image"] == f"mirror.local/busybox@{DIGEST}"
    assert [c["image"] for c in pod["containers"]] == [
        "registry.local:5000/app:2.0",
        "registry.local:5000/app-sidecar",
    ]
    # Multi-line file contents survive the dump as they were.
    assert yaml.safe_load(render.dump_documents(documents).split("---\n")[3]) == configmap


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"namePrefix": "x-"}, "unsupported field namePrefix"),
        ({"resources": ["missing.yaml"]}, "missing.yaml: no such file"),
        ({"resources": ["dashboards"]}, "only files in the base"),
        ({"resources": ["https://example.com/x.yaml"]}, "only files in the base"),
        ({"resources": ["ns.yaml", "ns.yaml"]}, "duplicate object"),
        ({"images": [{"name": "busybox", "newTag": "1", "digest": DIGEST}]}, "not both"),
        (
            {"images": [{"name": "busybox", "tagSuffix": "x"}]},
            "busybox: unsupported field tagSuffix",
        ),
    ],
)
def test_build_refuses_what_it_does_not_implement(
    render: ModuleType, tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    base = make_base(tmp_path, {**demo_kustomization(), **change})
    with pytest.raises(render.RenderError, match=message.replace("(", r"\(").replace(")", r"\)")):
        render.build(base, read_file)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"disableNameSuffixHash": False}, "only disableNameSuffixHash: true"),
        ({"annotations": {"a": "b"}}, "options.annotations"),
    ],
)
def test_generator_refuses_unsupported_options(
    render: ModuleType, tmp_path: Path, options: dict[str, Any], message: str
) -> None:
    base = make_base(tmp_path, demo_kustomization(**options))
    with pytest.raises(render.RenderError, match=message):
        render.build(base, read_file)


def test_sync_lists_every_dashboard_json_sorted(render: ModuleType, tmp_path: Path) -> None:
    kustomization = demo_kustomization()
    kustomization["configMapGenerator"][0]["files"] = []
    base = make_base(tmp_path, kustomization)
    (base / "dashboards" / "c.json").write_text(json.dumps({"title": "c"}))
    (base / "dashboards" / "notes.txt").write_text("not a dashboard")
    synced = yaml.safe_load(render.sync_kustomization(read_file(base / "kustomization.yaml"), base))
    assert synced["configMapGenerator"][0]["files"] == [
        "dashboards/a.json",
        "dashboards/b.json",
        "dashboards/c.json",
    ]
    assert synced["resources"] == kustomization["resources"]


def test_dashboard_placeholders_are_valid_json() -> None:
    dashboards = sorted((DEPLOY / "base" / "dashboards").glob("*.json"))
    assert dashboards
    for path in dashboards:
        dashboard = json.loads(path.read_text())
        assert dashboard["title"]
        assert dashboard["uid"]


@pytest.mark.realservices  # kubectl
def test_render_matches_real_kustomize_on_the_base(render: ModuleType) -> None:
    """kubectl's built-in kustomize is the reference."""
    reference = kustomize(DEPLOY / "base")
    assert render.build(DEPLOY / "base", read_file) == reference


@pytest.mark.realservices  # kubectl
def test_render_matches_real_kustomize_on_a_demo_base(render: ModuleType, tmp_path: Path) -> None:
    base = make_base(tmp_path, demo_kustomization())
    reference = kustomize(base)
    assert render.build(base, read_file) == reference
