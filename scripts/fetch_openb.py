"""`make openb`: download the public Alibaba openb trace (cluster-trace-gpu-v2023) that the
replay tests and benchmarks use, each file pinned to a commit of alibaba/clusterdata and
checked against its SHA-256, into the git-ignored `data/openb/`.

A file is written only once its checksum matches (to a temporary name, then renamed), so an
interrupted or tampered download leaves nothing behind. `--base-url` points at a mirror (a
`file://` folder laid out as `<commit>/cluster-trace-gpu-v2023/csv/<file>` works too).
Errors: one line on stderr, exit 2.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

BASE_URL = "https://raw.githubusercontent.com/alibaba/clusterdata"
TRACE_DIR = "cluster-trace-gpu-v2023/csv"
MAX_BYTES = 64 * 2**20  # the largest file is under 1 MiB; anything far larger is not it
# file -> (commit of alibaba/clusterdata holding it, SHA-256 of its content)
FILES: dict[str, tuple[str, str]] = {
    "openb_node_list_gpu_node.csv": (
        "50a91c7c74abe3b658188dc78ac1dd302970d40c",
        "2beca64b4d3dfa342036a34b56a495c6cef9225db836c81f541282cb1df320b5",
    ),
    "openb_pod_list_default.csv": (
        "50a91c7c74abe3b658188dc78ac1dd302970d40c",
        "1ee7ed79c27a3b0861cda8ddba86a004c6aba904caafa329a76ae93ca63834a8",
    ),
    "openb_pod_list_gpushare100.csv": (
        "0c9677bb156ded9c63ca40d9aa54cd31d3e75061",
        "12dbc07d6a49bf8641e2275a2ff5bf7be74b5df7d148d531e135b140b95f9a3d",
    ),
    "openb_pod_list_multigpu50.csv": (
        "b937928cf81f0edb6fe33634d01f2069a8d6ab17",
        "206f2f5959db30ecb7c44e7f13197c8ec50b7a35558ad3777cc3662ef0fe5373",
    ),
}


class FetchError(Exception):
    """One line: which file, from where, what went wrong."""


def fetch(base_url: str, dest: Path, timeout_s: float = 60.0) -> list[str]:
    """Download every file not already present with the right checksum; the names fetched."""
    dest.mkdir(parents=True, exist_ok=True)
    fetched = []
    for name, (commit, sha256) in FILES.items():
        target = dest / name
        if target.is_file() and _digest(target.read_bytes()) == sha256:
            continue
        url = f"{base_url.rstrip('/')}/{commit}/{TRACE_DIR}/{name}"
        body = _download(url, timeout_s)
        if _digest(body) != sha256:
            raise FetchError(f"{url}: checksum mismatch (expected sha256 {sha256[:12]}…)")
        fd, tmp = tempfile.mkstemp(prefix=f".{name}.", dir=dest)
        try:
            with open(fd, "wb") as out:
                out.write(body)
            Path(tmp).replace(target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        fetched.append(name)
    return fetched


def _download(url: str, timeout_s: float) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=timeout_s) as answer:
            body: bytes = answer.read(MAX_BYTES + 1)
    except (urllib.error.URLError, OSError, ValueError) as err:
        raise FetchError(f"{url}: {getattr(err, 'reason', err)}") from None
    if len(body) > MAX_BYTES:
        raise FetchError(f"{url}: larger than {MAX_BYTES} bytes, not the trace")
    return body


def _digest(body: bytes) -> str:
    return hashlib.sha256(body).hexdigest()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", default=BASE_URL, help=f"default: {BASE_URL}")
    parser.add_argument("--dest", type=Path, default=Path("data/openb"))
    args = parser.parse_args(argv)
    try:
        fetched = fetch(args.base_url, args.dest)
    except FetchError as err:
        print(f"fetch-openb: {err}", file=sys.stderr)
        return 2
    print(f"fetch-openb: {len(fetched)} fetched, {len(FILES) - len(fetched)} already there")
    return 0


if __name__ == "__main__":
    sys.exit(main())
