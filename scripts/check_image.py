"""Check the image's recipe without a container engine: the Dockerfile's rules and the lock.

    python scripts/check_image.py    # exit 0, or 1 with one line per problem

The Dockerfile (deploy/Dockerfile):
- every FROM names its image by digest (`@sha256:` and 64 hex digits), never `latest`;
- no ADD (it fetches URLs and unpacks archives; COPY says what it does);
- the last USER is set and is not root;
- the lock file is copied in and installed with `pip install --require-hashes --no-deps
  -r requirements.lock`, before any other pip install, and every other pip install is
  offline (`--no-index --no-deps`): nothing enters the image unhashed.

The lock (requirements.lock, written by `make lock`):
- every requirement is `name==version` with at least one `--hash=sha256:`;
- every dependency pyproject.toml declares, and the build backend it requires, is locked
  at a version its specifier admits.
"""

from __future__ import annotations

import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

REPO = Path(__file__).resolve().parents[1]
DOCKERFILE = REPO / "deploy" / "Dockerfile"
LOCK = REPO / "requirements.lock"
PYPROJECT = REPO / "pyproject.toml"

DIGEST = re.compile(r"@sha256:[0-9a-f]{64}$")
LOCKED = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s\\;]+)")
HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}\b")


@dataclass(frozen=True)
class Instruction:
    line: int  # where it starts, 1-based
    keyword: str  # upper case
    arguments: str  # continuation lines joined


def instructions(text: str) -> list[Instruction]:
    """The Dockerfile's instructions, comments dropped, continuation lines joined."""
    found: list[Instruction] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue  # a comment inside a continued instruction
        if not pending:
            start = number
        pending.append(stripped[:-1] if stripped.endswith("\\") else stripped)
        if stripped.endswith("\\"):
            continue
        keyword, _, arguments = " ".join(pending).partition(" ")
        found.append(Instruction(start, keyword.upper(), arguments.strip()))
        pending = []
    return found


def _pip_installs(arguments: str) -> list[list[str]]:
    """The `pip install` commands of a RUN (split on &&), each as its words."""
    commands = [command.split() for command in arguments.split("&&")]
    return [
        words
        for words in commands
        if len(words) >= 2 and words[0] in {"pip", "pip3"} and words[1] == "install"
    ]


def dockerfile_problems(text: str, name: str, lock_name: str) -> list[str]:
    problems: list[str] = []
    parsed = instructions(text)
    if not any(i.keyword == "FROM" for i in parsed):
        problems.append(f"{name}: no FROM")
    for instruction in parsed:
        where = f"{name}:{instruction.line}"
        if instruction.keyword == "FROM":
            image = instruction.arguments.split()[0]
            if not DIGEST.search(image):
                problems.append(f"{where}: FROM {image} is not pinned by digest (@sha256:...)")
            if image.split("@")[0].endswith(":latest"):
                problems.append(f"{where}: FROM {image} names the tag latest")
        elif instruction.keyword == "ADD":
            problems.append(f"{where}: ADD fetches and unpacks; use COPY")
    users = [i for i in parsed if i.keyword == "USER"]
    if not users:
        problems.append(f"{name}: no USER: the image would run as root")
    elif users[-1].arguments.split(":")[0] in {"0", "root"}:
        problems.append(f"{name}:{users[-1].line}: the last USER is root")
    problems += _install_problems(parsed, name, lock_name)
    return problems


def _install_problems(parsed: list[Instruction], name: str, lock_name: str) -> list[str]:
    problems: list[str] = []
    copied = any(i.keyword == "COPY" and lock_name in i.arguments.split()[:-1] for i in parsed)
    if not copied:
        problems.append(f"{name}: {lock_name} is never copied in")
    lock_installed = False
    for instruction in parsed:
        if instruction.keyword != "RUN":
            continue
        for words in _pip_installs(instruction.arguments):
            where = f"{name}:{instruction.line}"
            if f"-r {lock_name}" in " ".join(words) or f"--requirement={lock_name}" in words:
                missing = {"--require-hashes", "--no-deps"} - set(words)
                if missing:
                    problems.append(f"{where}: the lock is installed without {sorted(missing)}")
                lock_installed = True
            elif not lock_installed:
                problems.append(f"{where}: pip install before the lock is installed")
            elif not {"--no-index", "--no-deps"} <= set(words):
                problems.append(f"{where}: pip install after the lock must be --no-index --no-deps")
    if not lock_installed:
        problems.append(f"{name}: no `pip install --require-hashes -r {lock_name}`")
    return problems


def locked_versions(text: str, name: str) -> tuple[dict[str, Version], list[str]]:
    """{canonical name: version} of the lock, and its problems."""
    problems: list[str] = []
    versions: dict[str, Version] = {}
    # A requirement and its `\`-continued hash lines form one entry.
    entries = re.split(r"\n(?=[^\s#])", text)
    for entry in entries:
        first = entry.strip().splitlines()[0] if entry.strip() else ""
        if not first or first.startswith("#"):
            continue
        match = LOCKED.match(first)
        if match is None:
            problems.append(f"{name}: not pinned with ==: {first}")
            continue
        package = canonicalize_name(match.group(1))
        try:
            versions[package] = Version(match.group(2))
        except InvalidVersion:
            problems.append(f"{name}: {package}: bad version {match.group(2)}")
        if not HASH.search(entry):
            problems.append(f"{name}: {package} has no --hash=sha256:")
    return versions, problems


def coverage_problems(
    requirements: list[str], versions: dict[str, Version], name: str
) -> list[str]:
    problems: list[str] = []
    for text in requirements:
        try:
            requirement = Requirement(text)
        except InvalidRequirement as error:
            problems.append(f"pyproject.toml: {text}: {error}")
            continue
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        package = canonicalize_name(requirement.name)
        if package not in versions:
            problems.append(f"{name}: {requirement.name} is not locked (run make lock)")
        elif not requirement.specifier.contains(versions[package], prereleases=True):
            problems.append(
                f"{name}: {requirement.name}=={versions[package]} does not satisfy "
                f"{requirement} (run make lock)"
            )
    return problems


def problems(
    dockerfile: Path = DOCKERFILE, lock: Path = LOCK, pyproject: Path = PYPROJECT
) -> list[str]:
    found = dockerfile_problems(dockerfile.read_text(encoding="utf-8"), dockerfile.name, lock.name)
    versions, lock_problems = locked_versions(lock.read_text(encoding="utf-8"), lock.name)
    project = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    required = [*project["project"]["dependencies"], *project["build-system"]["requires"]]
    return found + lock_problems + coverage_problems(required, versions, lock.name)


def main() -> int:
    try:
        found = problems()
    except (OSError, KeyError, tomllib.TOMLDecodeError) as error:
        print(f"check_image: {error}", file=sys.stderr)
        return 2
    for problem in found:
        print(problem)
    if not found:
        print(f"ok: {DOCKERFILE.relative_to(REPO)} and {LOCK.name}")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
