"""Building and running the Go harnesses (docs/conformance.md). Each is a Go module under
conformance/ that imports one upstream at a pinned version; its binary is cached in the
git-ignored conformance/.build and rebuilt when a source of its module is newer."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent
BUILD = ROOT / ".build"
# name: (its Go module under conformance/, the package to build)
PACKAGES = {
    "kube": ("kube", "."),  # kube-scheduler's filter plugins
    "volcano-cards": ("volcano", "./cards"),  # Volcano's vGPU device code
    "volcano-mig": ("volcano", "./migcards"),  # its MIG mode, card by card
    "volcano": ("volcano14", "./session"),  # Volcano v1.14.1's scheduler session
}
HARNESSES = tuple(PACKAGES)
# Runs of a harness's binary in another mode: name: (the binary, its flags).
MODES = {"kube-preempt": ("kube", ("-preempt",))}  # DefaultPreemption's PostFilter

# Go modules a harness builds from besides its own (a replace to a folder beside it).
SHARED = {
    "kube": ("cluster",),
    "volcano": ("cluster",),
    "volcano-cards": ("cluster",),
    "volcano-mig": ("cluster",),
}
# Harnesses that cannot be built, and why (none now: docs/conformance.md).
BLOCKED: dict[str, str] = {}


class HarnessError(RuntimeError):
    """A harness could not be built or did not answer."""


def go_missing() -> str | None:
    """Why the harnesses cannot be built here, or None when they can."""
    if shutil.which("go") is None:
        return "go is not on PATH: the differential harnesses are Go programs (docs/conformance.md)"
    return None


def binary(name: str) -> Path:
    """The harness's binary, built first when missing or older than its sources."""
    if name in BLOCKED:
        raise HarnessError(BLOCKED[name])
    missing = go_missing()
    if missing is not None:
        raise HarnessError(missing)
    folder, package = PACKAGES[name]
    module = ROOT / folder
    out = BUILD / name
    folders = [module, *(ROOT / shared for shared in SHARED.get(name, ()))]
    sources = [
        p
        for folder in folders
        for p in folder.rglob("*")
        if p.suffix == ".go" or p.name in ("go.mod", "go.sum")
    ]
    if out.exists() and all(p.stat().st_mtime <= out.stat().st_mtime for p in sources):
        return out
    BUILD.mkdir(exist_ok=True)
    env = {**os.environ, "GOFLAGS": "-mod=readonly"}  # go.sum as committed, nothing added
    partial = out.with_name(f"{name}.{os.getpid()}.partial")  # two builds at once: last wins
    done = subprocess.run(
        ["go", "build", "-o", str(partial), package],
        cwd=module,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise HarnessError(
            f"go build of {package} in conformance/{folder} failed:\n{done.stderr[-4000:]}"
        )
    partial.replace(out)
    return out


CHUNK = 500  # scenarios per process: a command line well within ARG_MAX
# Volcano's session keeps package state from one session to the next (plugin globals,
# device registrations): one scenario per process, so no cluster sees another's.
CHUNKS = {"volcano": 1}


def run(name: str, paths: list[Path]) -> list[dict[str, Any]]:
    """The harness's JSON for each scenario, in order (one process per CHUNK of them)."""
    built, flags = MODES.get(name, (name, ()))
    exe = binary(built) if paths else None
    # No in-cluster config: upstream code that looks for an API server finds none.
    env = {k: v for k, v in os.environ.items() if not k.startswith("KUBERNETES_")}
    results: list[dict[str, Any]] = []
    size = CHUNKS.get(name, CHUNK)
    for start in range(0, len(paths), size):
        chunk = paths[start : start + size]
        for _ in range(2):  # once more where the process died answering nothing (below)
            done = subprocess.run(
                [str(exe), *flags, *map(str, chunk)],
                capture_output=True,
                text=True,
                env=env,
                check=False,
            )
            lines = [line for line in done.stdout.splitlines() if line.strip()]
            # Volcano's cache handles the harness's evictions in informer goroutines
            # beside the session; once in thousands of runs upstream's RemoveTask panics
            # there (a race in its code, not a verdict), and the same file then runs clean.
            if lines or done.returncode == 0:
                break
        if len(lines) != len(chunk):
            raise HarnessError(
                f"{name} harness answered {len(lines)} of {len(chunk)}: {done.stderr[-2000:]}"
            )
        results += [json.loads(line) for line in lines]
    for result in results:
        if result.get("error"):
            raise HarnessError(f"{name} harness: {result['error']}")
    return results


def run_scenarios(name: str, datas: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`run` on scenarios held in memory: each written to a temporary JSON file first."""
    with tempfile.TemporaryDirectory(prefix="xgpu-conformance-") as tmp:
        paths = []
        for i, data in enumerate(datas):
            path = Path(tmp) / f"cluster-{i}.json"
            path.write_text(json.dumps(data))
            paths.append(path)
        return run(name, paths)
