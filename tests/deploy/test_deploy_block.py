"""The deploy steps of README ("Deploying to a cluster") and docs/deployment.md (sections 1
to 3), run as written up to the push: the image they build is the one they push, and the
overlay they apply runs it in every container.

No container engine or registry here: `make image push ...` runs as `make -n` (make prints
the engine's commands without running them), `docker`/`podman` lines are read, not run.
`make overlay ...` runs as written in a working copy (other targets, such as `make lock`,
are no deploy step); `kubectl apply -k DIR` renders
DIR with kubectl's own kustomize instead of applying it; other kubectl lines need a cluster.
Also: `make overlay`'s script (scripts/image_overlay.py) on its own, and its refusals.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from tests.deploy.builds import kubectl, kustomize
from tests.deploy.conftest import load_script
from tests.deploy.pod_security import WORKLOAD_KINDS, pod_template
from tests.docs.test_readme_commands import Block, blocks_of, working_copy

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
GUIDE = REPO / "docs" / "deployment.md"
# The sections holding each document's deploy steps (from their heading to the next one
# of the same level).
DEPLOY_SECTIONS = {
    README: ["## Deploying to a cluster"],
    GUIDE: ["## 1. Build the image", "## 2. Adapt it in an overlay", "## 3. Apply"],
}
ENGINES = ("docker", "podman")
Json = dict[str, Any]


@pytest.fixture(scope="module")
def image_overlay() -> ModuleType:
    return load_script("xgpu_image_overlay", REPO / "scripts" / "image_overlay.py")


# --- reading the steps -----------------------------------------------------------------


def section_blocks(path: Path, heading: str) -> list[Block]:
    """The blocks between `heading` and the next heading of its level or above."""
    lines = path.read_text().splitlines()
    level = len(heading) - len(heading.lstrip("#"))
    start = lines.index(heading)
    end = next(
        (k for k in range(start + 1, len(lines)) if re.match(rf"^#{{1,{level}}} ", lines[k])),
        len(lines),
    )
    return [b for b in blocks_of(path) if start < int(b.where.rpartition(":")[2]) <= end]


def deploy_commands(path: Path) -> list[list[str]]:
    """Every command of the document's deploy sections' shell blocks, as argv, in order
    (comments dropped; a block's lines are its commands)."""
    commands = []
    for heading in DEPLOY_SECTIONS[path]:
        for block in section_blocks(path, heading):
            if block.language not in {"sh", "bash", "shell"}:
                continue
            for line in block.body.replace("\\\n", " ").splitlines():
                argv = shlex.split(line, comments=True)
                if argv:
                    commands.append(argv)
    return commands


@dataclass
class Steps:
    built: list[str] = field(default_factory=list)
    pushed: list[str] = field(default_factory=list)
    applied: list[str] = field(default_factory=list)  # the folders `kubectl apply -k` names
    ran: list[str] = field(default_factory=list)


def engine_line(argv: list[str], steps: Steps) -> None:
    """`docker build ... -t IMAGE .` or `docker push IMAGE` (podman alike), read."""
    if argv[1] == "build":
        tags = [argv[i + 1] for i, arg in enumerate(argv) if arg in {"-t", "--tag"}]
        steps.built += tags
    elif argv[1] == "push":
        steps.pushed.append(argv[-1])


def run_steps(path: Path, work: Path) -> Steps:
    steps = Steps()
    env = {**os.environ, "PATH": f"{work / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    for argv in deploy_commands(path):
        text = shlex.join(argv)
        if argv[0] in ENGINES:
            engine_line(argv, steps)
        elif argv[0] == "make" and {"image", "push"} & set(argv):
            dry = subprocess.run(
                ["make", "--no-print-directory", "-n", *argv[1:], "ENGINE=docker"],
                cwd=work,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )
            assert dry.returncode == 0, f"{path.name}: `{text}`: {dry.stderr}"
            for line in dry.stdout.splitlines():
                printed = shlex.split(line)
                if printed and printed[0] in ENGINES:
                    engine_line(printed, steps)
        elif argv[0] == "make" and "overlay" in argv:
            result = subprocess.run(
                argv, cwd=work, env=env, capture_output=True, text=True, timeout=120, check=False
            )
            assert result.returncode == 0, f"{path.name}: `{text}`: {result.stderr}"
            steps.ran.append(text)
        elif argv[:3] == ["kubectl", "apply", "-k"]:
            steps.applied.append(argv[3])
    return steps


def container_images(documents: list[Json]) -> dict[str, str]:
    """{"Kind namespace/name container": image} for every container and init container of
    every workload."""
    found = {}
    for document in documents:
        if document["kind"] not in WORKLOAD_KINDS:
            continue
        spec = pod_template(document)["spec"]
        meta = document["metadata"]
        for container in [*spec.get("initContainers", []), *spec["containers"]]:
            key = f"{document['kind']} {meta.get('namespace', '')}/{meta['name']} "
            found[key + container["name"]] = container["image"]
    return found


def project_image_name() -> str:
    """The project's image as deploy/base renders it (its `images:` entry's newName)."""
    base = yaml.safe_load((REPO / "deploy" / "base" / "kustomization.yaml").read_text())
    (entry,) = [e for e in base["images"] if e["name"] == "xgpu-insight"]
    return str(entry["newName"])


def deployed_problems(steps: Steps, work: Path) -> list[str]:
    """What keeps the steps from running the image they build: nothing built or pushed,
    another image pushed, or a container of an applied build running another image."""
    problems = []
    if not steps.built:
        problems.append("no step builds the image")
    if sorted(set(steps.pushed)) != sorted(set(steps.built)):
        problems.append(f"built {steps.built} but pushed {steps.pushed}")
    if not steps.applied:
        problems.append("no step applies an overlay (kubectl apply -k)")
    base = container_images(kustomize(REPO / "deploy" / "base"))
    project = project_image_name()
    for folder in steps.applied:
        for container, image in container_images(kustomize(work / folder)).items():
            theirs = base.get(container, "")
            if theirs.startswith(f"{project}:") or theirs.startswith(f"{project}@"):
                wanted = steps.built
                if image not in wanted:
                    problems.append(f"{folder}: {container} runs {image}, not {wanted}")
            elif image != theirs:
                problems.append(f"{folder}: {container} runs {image}, the base {theirs}")
    return problems


# --- the documents' steps --------------------------------------------------------------


@pytest.mark.realservices  # make, kubectl kustomize
@pytest.mark.parametrize("path", [README, GUIDE], ids=lambda p: p.name)
def test_the_deploy_steps_run_the_image_they_build_and_push(path: Path, tmp_path: Path) -> None:
    kubectl()  # fails with the reason where kubectl's kustomize is missing or too old
    work = working_copy(tmp_path / "checkout")
    steps = run_steps(path, work)
    assert steps.ran, f"{path.name}: no step sets the image in an overlay"
    assert deployed_problems(steps, work) == []


@pytest.mark.realservices  # kubectl kustomize
def test_the_check_catches_the_base_applied_as_it_is(tmp_path: Path) -> None:
    """The steps README once gave: an image built and never pushed, and the base applied,
    whose containers run an image nobody pushed (ImagePullBackOff)."""
    steps = Steps(built=["registry.example.com/xgpu-insight:0.1.0"], applied=["deploy/base"])
    problems = deployed_problems(steps, REPO)
    assert problems[0] == "built ['registry.example.com/xgpu-insight:0.1.0'] but pushed []"
    unpushed = f"{project_image_name()}:0.1.0, not ['registry.example.com/xgpu-insight:0.1.0']"
    # The exporter, the CronJob's advisor and the reports server run an image nobody pushed.
    assert [p.partition(" runs ")[2] for p in problems[1:]] == [unpushed] * 3
    assert any(p.startswith("deploy/base: DaemonSet xgpu-exporter/") for p in problems)


def test_the_guides_overlay_example_sets_the_image_as_make_overlay_writes_it(
    image_overlay: ModuleType,
) -> None:
    """docs/deployment.md's example kustomization names the image as the script does."""
    (example,) = [
        yaml.safe_load(b.body)
        for b in blocks_of(GUIDE)
        if b.language == "yaml" and "kind: Kustomization" in b.body
    ]
    (pushed,) = {step for argv in deploy_commands(GUIDE) for step in argv if "IMAGE=" in step}
    entry = image_overlay.image_entry(pushed.removeprefix("IMAGE="))
    assert example["images"][0] == {"name": project_image_name(), **entry}


# --- make's refusals and its engine -----------------------------------------------------


def make_with_path(tmp_path: Path, engines: tuple[str, ...], *args: str) -> tuple[int, str, str]:
    """`make -n ARGS` with a PATH holding make and the given engines only (stubs make -n
    never runs)."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    make = subprocess.run(["sh", "-c", "command -v make"], capture_output=True, text=True)
    (bin_dir / "make").symlink_to(make.stdout.strip())
    for engine in engines:
        (bin_dir / engine).write_text("#!/bin/sh\nexit 99\n")
        (bin_dir / engine).chmod(0o755)
    result = subprocess.run(
        ["make", "--no-print-directory", "-n", *args],
        cwd=REPO,
        env={"PATH": str(bin_dir), "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return result.returncode, result.stdout, result.stderr


@pytest.mark.realservices  # make
@pytest.mark.parametrize("engine", ENGINES)
def test_make_image_push_uses_the_engine_on_path(tmp_path: Path, engine: str) -> None:
    image = "registry.example.com/team/xgpu-insight:0.1.0"
    code, out, _ = make_with_path(tmp_path, (engine,), "image", "push", f"IMAGE={image}")
    assert code == 0
    assert [shlex.split(line) for line in out.splitlines()] == [
        [engine, "build", "-f", "deploy/Dockerfile", "-t", image, "."],
        [engine, "push", image],
    ]


@pytest.mark.realservices  # make
@pytest.mark.parametrize(
    ("engines", "args", "says"),
    [
        (ENGINES, ["image", "push"], "IMAGE is unset: name the image to build, push and deploy"),
        (ENGINES, ["push", "IMAGE="], "IMAGE is unset"),
        (ENGINES, ["overlay", "OVERLAY=overlays/prod"], "IMAGE is unset"),
        ((), ["image", "IMAGE=r.example.com/x:1"], "no container engine: neither docker nor"),
        (ENGINES, ["overlay", "IMAGE=r.example.com/x:1"], "OVERLAY is unset"),
    ],
)
def test_make_refuses_in_one_line_without_what_it_needs(
    tmp_path: Path, engines: tuple[str, ...], args: list[str], says: str
) -> None:
    code, out, err = make_with_path(tmp_path, engines, *args)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert says in err


# --- scripts/image_overlay.py ----------------------------------------------------------


@pytest.mark.parametrize(
    ("reference", "entry"),
    [
        ("registry.example.com/team/xgpu-insight:0.1.0", {"newTag": "0.1.0"}),
        ("localhost:5000/xgpu-insight:v2", {"newTag": "v2"}),
        ("xgpu-insight@sha256:" + "a" * 64, {"digest": "sha256:" + "a" * 64}),
    ],
)
def test_a_reference_becomes_its_name_tag_and_digest(
    image_overlay: ModuleType, reference: str, entry: Json
) -> None:
    name = re.split(r":(?=[^/]*$)|@", reference)[0]
    assert image_overlay.image_entry(reference) == {"newName": name, **entry}


@pytest.mark.parametrize(
    ("reference", "says"),
    [
        ("registry.example.com/team/xgpu-insight", "no tag or digest"),
        ("localhost:5000/xgpu-insight", "no tag or digest"),
        ("registry.example.com/xgpu-insight:latest", "'latest' moves with every push"),
        ("registry.example.com/Team/xgpu-insight:1", "not an image reference"),
        ("", "not an image reference"),
    ],
)
def test_a_reference_without_a_version_is_refused_and_nothing_written(
    image_overlay: ModuleType,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    reference: str,
    says: str,
) -> None:
    assert image_overlay.main([reference, str(tmp_path / "prod")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"image_overlay: IMAGE {reference!r}: ")
    assert says in err
    assert err.count("\n") == 1
    assert not (tmp_path / "prod").exists()


def test_an_existing_overlay_keeps_its_keys_and_gets_the_image_replaced(
    image_overlay: ModuleType, tmp_path: Path
) -> None:
    overlay = tmp_path / "prod"
    overlay.mkdir()
    name = project_image_name()
    kept = {"name": "prom/pushgateway", "newName": "mirror.example.com/pushgateway"}
    original: Json = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": ["../base"],
        "images": [{"name": name, "newName": "old.example.com/x", "newTag": "1"}, kept],
        "patches": [{"target": {"kind": "DaemonSet"}, "patch": "[]"}],
    }
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(original))
    assert image_overlay.main(["new.example.com/x:2", str(overlay)]) == 0
    written = yaml.safe_load((overlay / "kustomization.yaml").read_text())
    assert written == {
        **original,
        "images": [{"name": name, "newName": "new.example.com/x", "newTag": "2"}, kept],
    }


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("resources: [../base\n", "line 2: expected ',' or ']'"),
        ("- a list\n", "not a Kustomization (a mapping), but a list"),
        ("images: {name: x}\n", "images: must be a list of mappings"),
    ],
)
def test_a_broken_overlay_is_one_line_and_left_as_it_was(
    image_overlay: ModuleType,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    text: str,
    says: str,
) -> None:
    path = tmp_path / "kustomization.yaml"
    path.write_text(text)
    assert image_overlay.main(["r.example.com/x:1", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"image_overlay: {path}: ")
    assert says in err
    assert err.count("\n") == 1
    assert path.read_text() == text
    assert [p.name for p in tmp_path.iterdir()] == ["kustomization.yaml"]  # no temporary left


@pytest.mark.realservices  # kubectl kustomize
@pytest.mark.parametrize("resources", ["deploy/base", "deploy/overlays/hami"])
def test_a_new_overlay_renders_the_image_in_every_container(
    image_overlay: ModuleType, tmp_path: Path, resources: str
) -> None:
    overlay = tmp_path / "overlays" / "prod"
    reference = "registry.example.com/team/xgpu-insight@sha256:" + "0" * 64
    assert image_overlay.main([reference, str(overlay), "--resources", str(REPO / resources)]) == 0
    steps = Steps(built=[reference], pushed=[reference], applied=[str(overlay)])
    assert deployed_problems(steps, tmp_path) == []
