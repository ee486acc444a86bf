"""Fixtures for the deploy/ tests: the render script, promtool, the rendered objects."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
RULES = DEPLOY / "rules" / "xgpu.rules.yaml"
RENDERED = DEPLOY / "rendered" / "all.yaml"


def load_documents(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as stream:
        return [document for document in yaml.safe_load_all(stream) if document is not None]


def load_script(name: str, path: Path) -> ModuleType:
    """A script that is no package's module (deploy/render.py, scripts/check_image.py),
    loaded from its file under `name`."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def render() -> ModuleType:
    """deploy/render.py, loaded from its file (deploy/ is not a package)."""
    return load_script("xgpu_deploy_render", DEPLOY / "render.py")


@pytest.fixture(scope="session")
def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail("promtool not found: install the Debian package prometheus (make system-deps)")
    return path


@pytest.fixture(scope="session")
def rendered_documents() -> list[dict[str, Any]]:
    return load_documents(RENDERED)


@pytest.fixture(scope="session")
def rule_groups() -> list[dict[str, Any]]:
    groups: list[dict[str, Any]] = yaml.safe_load(RULES.read_text(encoding="utf-8"))["groups"]
    return groups
