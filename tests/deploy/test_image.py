"""The image, checked without a container engine.

- scripts/check_image.py's rules (digest-pinned FROM, non-root USER, no `latest`, the lock
  installed with hashes first and nothing fetched after) hold for deploy/Dockerfile and
  requirements.lock, and each rule catches the mistake it is about;
- the Dockerfile's own steps, run in a fresh venv: its COPY instructions fill a build
  folder, its `pip install` commands run there as written, and both programs start.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.deploy.conftest import load_script

REPO = Path(__file__).resolve().parents[2]
DOCKERFILE = REPO / "deploy" / "Dockerfile"
LOCK = REPO / "requirements.lock"
PYPROJECT = REPO / "pyproject.toml"
# RUN commands that shape the image only (users, cleanup): nothing to install.
IMAGE_ONLY_COMMANDS = ("rm -rf /src", "useradd ")


@pytest.fixture(scope="module")
def check_image() -> ModuleType:
    """scripts/check_image.py, loaded from its file (scripts/ is not a package)."""
    return load_script("xgpu_check_image", REPO / "scripts" / "check_image.py")


def test_the_repository_passes_the_image_check(
    check_image: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    assert check_image.problems() == []
    assert check_image.main() == 0
    assert capsys.readouterr().out == "ok: deploy/Dockerfile and requirements.lock\n"


def dockerfile_problems(check_image: ModuleType, text: str) -> list[str]:
    problems: list[str] = check_image.dockerfile_problems(text, "Dockerfile", "requirements.lock")
    return problems


DIGEST = "sha256:" + "0" * 64


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        (f"@{DIGEST}", "", "FROM python:3.11-slim is not pinned by digest"),
        ("python:3.11-slim@", "python:latest@", "names the tag latest"),
        ("USER 10001:10001", "USER root", "the last USER is root"),
        ("USER 10001:10001\n", "", "no USER: the image would run as root"),
        ("COPY requirements.lock ./\n", "", "requirements.lock is never copied in"),
        ("--require-hashes ", "", "the lock is installed without ['--require-hashes']"),
        ("--no-index --no-deps ", "", "pip install after the lock must be --no-index --no-deps"),
        ("COPY advisor/ advisor/", "ADD https://example.com/a.tgz /src/", "ADD fetches"),
    ],
)
def test_each_dockerfile_rule_catches_its_mistake(
    check_image: ModuleType, old: str, new: str, problem: str
) -> None:
    good = f"""\
FROM python:3.11-slim@{DIGEST}
WORKDIR /src
COPY requirements.lock ./
RUN pip install --require-hashes --no-deps -r requirements.lock
COPY advisor/ advisor/
RUN pip install --no-index --no-deps --no-build-isolation . \\
    && useradd xgpu
USER 10001:10001
"""
    assert dockerfile_problems(check_image, good) == []
    assert old in good
    found = dockerfile_problems(check_image, good.replace(old, new))
    assert any(problem in line for line in found), found


def test_a_pip_install_before_the_lock_is_refused(check_image: ModuleType) -> None:
    text = f"""\
FROM python:3.11-slim@{DIGEST}
COPY requirements.lock ./
RUN pip install numpy
RUN pip install --require-hashes --no-deps -r requirements.lock
USER 1
"""
    assert dockerfile_problems(check_image, text) == [
        "Dockerfile:3: pip install before the lock is installed"
    ]


LOCK_TEXT = """\
# comment
numpy==2.0.0 \\
    --hash=sha256:{a}
    # via xgpu-insight
pyyaml==6.0.1 \\
    --hash=sha256:{b}
""".format(a="a" * 64, b="b" * 64)


@pytest.mark.parametrize(
    ("lock", "required", "problem"),
    [
        (LOCK_TEXT, ["numpy>=1.26", "PyYAML>=6.0"], None),
        (LOCK_TEXT.replace("--hash=sha256:" + "b" * 64, ""), ["PyYAML"], "pyyaml has no --hash"),
        (LOCK_TEXT.replace("numpy==2.0.0", "numpy>=2.0.0"), [], "not pinned with ==: numpy>=2.0.0"),
        (LOCK_TEXT, ["aiohttp>=3.9"], "aiohttp is not locked"),
        (LOCK_TEXT, ["numpy<2"], "numpy==2.0.0 does not satisfy numpy<2"),
        (LOCK_TEXT, ['pywin32; sys_platform == "win32"'], None),  # not for this platform
    ],
)
def test_lock_rules(
    check_image: ModuleType, lock: str, required: list[str], problem: str | None
) -> None:
    versions, found = check_image.locked_versions(lock, "requirements.lock")
    found += check_image.coverage_problems(required, versions, "requirements.lock")
    if problem is None:
        assert found == []
    else:
        (only,) = found
        assert problem in only


def test_the_lock_covers_exactly_the_projects_dependencies(check_image: ModuleType) -> None:
    """Nothing but the project's dependency closure: every locked package is needed."""
    versions, problems = check_image.locked_versions(LOCK.read_text(), LOCK.name)
    assert problems == []
    # Each locked package says who needs it; the roots are the project and its build.
    entries = re.split(r"\n(?=[^\s#])", LOCK.read_text())
    for entry in entries:
        if entry.strip() and not entry.lstrip().startswith("#"):
            assert "# via" in entry, entry.splitlines()[0]
    assert "setuptools" in versions  # the build backend, for the offline project install


def copy_context(destination: Path, sources: list[str], target: str) -> None:
    """One COPY instruction into the build folder (WORKDIR /src is its root)."""
    into = destination / target
    for source in sources:
        path = REPO / source
        if path.is_dir():
            shutil.copytree(
                path,
                into if target.endswith("/") and len(sources) == 1 else into / path.name,
                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
                dirs_exist_ok=True,
            )
        else:
            into.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, into / path.name)


def pip_environment() -> dict[str, str]:
    """PyPI, as the image build sees it: no local config, wheel folder or constraints."""
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("PIP_") or key in {"PIP_CERT", "PIP_DEFAULT_TIMEOUT"}
    }
    environment["PIP_CONFIG_FILE"] = os.devnull
    environment["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return environment


@pytest.mark.realservices  # creates a venv and installs from PyPI: slow, and needs PyPI
@pytest.mark.timeout(900)  # about 2 minutes with a warm pip cache; cold, more
def test_the_dockerfiles_install_steps_work_in_a_fresh_venv(
    check_image: ModuleType, tmp_path: Path
) -> None:
    context = tmp_path / "src"
    context.mkdir()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    ran = []
    for instruction in check_image.instructions(DOCKERFILE.read_text()):
        if instruction.keyword == "COPY":
            *sources, target = instruction.arguments.split()
            copy_context(context, sources, target)
        elif instruction.keyword == "RUN":
            for command in instruction.arguments.split("&&"):
                words = command.split()
                if words[:2] == ["pip", "install"]:
                    result = subprocess.run(
                        [str(python), "-m", "pip", "install", "-q", *words[2:]],
                        cwd=context,
                        env=pip_environment(),
                        capture_output=True,
                        text=True,
                        timeout=900,
                        check=False,
                    )
                    assert result.returncode == 0, (command, result.stderr[-3000:])
                    ran.append(" ".join(words))
                else:
                    assert command.strip().startswith(IMAGE_ONLY_COMMANDS), command
    assert len(ran) == 2  # the lock, then the project
    # Nothing missing although every install was --no-deps: the lock is complete.
    check = subprocess.run(
        [str(python), "-m", "pip", "check"], capture_output=True, text=True, timeout=120
    )
    assert check.returncode == 0, check.stdout
    versions, _ = check_image.locked_versions(LOCK.read_text(), LOCK.name)
    freeze = subprocess.run(
        [str(python), "-m", "pip", "list", "--format=freeze"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    installed = dict(line.split("==") for line in freeze.stdout.split())
    installed = {re.sub(r"[-_.]+", "-", k).lower(): v for k, v in installed.items()}
    assert installed.pop("xgpu-insight") == "0.1.0"
    installed.pop("pip")
    assert installed == {name: str(version) for name, version in versions.items()}
    for program in ("xgpu-advisor", "xgpu-exporter"):
        result = subprocess.run(
            [str(venv / "bin" / program), "--help"],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        assert result.stdout.startswith(f"usage: {program}"), result.stdout[:200]
