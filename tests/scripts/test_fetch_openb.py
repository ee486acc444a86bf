"""`make openb` (scripts/fetch_openb.py) against a local `file://` mirror laid out as the
pinned repository is: these machines reach no public host, so the real download is the one
thing not run here."""

from __future__ import annotations

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.trace_dir import find_openb, not_found

pytestmark = pytest.mark.realservices  # the fetch script as a process, a local mirror

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "fetch_openb.py"
NAMES = (
    "openb_node_list_gpu_node.csv",
    "openb_pod_list_default.csv",
    "openb_pod_list_gpushare100.csv",
    "openb_pod_list_multigpu50.csv",
)


def pinned() -> dict[str, tuple[str, str]]:
    """The script's table (it is a program, as make runs it, not an importable module)."""
    namespace: dict[str, object] = {"__name__": "fetch_openb"}
    exec(compile(SCRIPT.read_text(), str(SCRIPT), "exec"), namespace)
    files = namespace["FILES"]
    assert isinstance(files, dict)
    return files


def fetch(mirror: Path, dest: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--base-url", mirror.as_uri(), "--dest", str(dest)],
        capture_output=True,
        text=True,
        timeout=120,
    )


def lay_out(mirror: Path, name: str, body: bytes) -> None:
    commit = pinned()[name][0]
    folder = mirror / commit / "cluster-trace-gpu-v2023" / "csv"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(body)


def test_the_table_pins_every_file_by_commit_and_checksum() -> None:
    files = pinned()
    assert set(files) == set(NAMES)
    for commit, sha in files.values():
        assert len(commit) == 40
        assert int(commit, 16) >= 0
        assert len(sha) == 64
        assert int(sha, 16) >= 0


def test_a_mirror_with_the_trace_fills_the_folder(tmp_path: Path) -> None:
    trace = find_openb()
    if trace is None:
        pytest.skip(not_found())
    mirror, dest = tmp_path / "mirror", tmp_path / "data" / "openb"
    for name in NAMES:
        lay_out(mirror, name, (trace / name).read_bytes())
    proc = fetch(mirror, dest)
    assert proc.returncode == 0, proc.stderr
    assert "4 fetched" in proc.stdout
    for name in NAMES:
        assert (dest / name).read_bytes() == (trace / name).read_bytes()
    again = fetch(mirror, dest)  # nothing to do the second time
    assert again.returncode == 0
    assert "0 fetched, 4 already there" in again.stdout


def test_a_tampered_file_is_refused_and_nothing_is_left(tmp_path: Path) -> None:
    mirror, dest = tmp_path / "mirror", tmp_path / "out"
    body = b"name,cpu_milli\nopenb-pod-0000,1000\n"
    for name in NAMES:
        lay_out(mirror, name, body)
    proc = fetch(mirror, dest)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert "checksum mismatch" in proc.stderr
    assert hashlib.sha256(body).hexdigest()[:12] not in proc.stderr
    assert list(dest.iterdir()) == []


def test_an_unreachable_mirror_is_one_line(tmp_path: Path) -> None:
    proc = fetch(tmp_path / "nowhere", tmp_path / "out")
    assert proc.returncode == 2
    assert proc.stderr.startswith("fetch-openb: file://")
    assert proc.stderr.count("\n") == 1
    assert "Traceback" not in proc.stderr
