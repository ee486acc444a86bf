"""A real Pushgateway (Debian's prometheus-pushgateway) on a free loopback port.

A pytest plugin: `pytest_plugins = ["tests.advisor.pushgateway"]` gives the `pushgateway`
fixture (its base URL). Only ever loaded that way, so pytest rewrites its asserts.
"""

from __future__ import annotations

import shutil
import subprocess
import time
import urllib.parse
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.advisor.sources.realparts import free_port, http_get


@contextmanager
def running_pushgateway(home: Path) -> Iterator[str]:
    """Debian's prometheus-pushgateway on a free loopback port; its base URL."""
    binary = shutil.which("prometheus-pushgateway")
    if binary is None:
        pytest.skip("prometheus-pushgateway not installed")
    url = f"http://127.0.0.1:{free_port()}"
    log = home / "pushgateway.log"
    with log.open("wb") as err:
        process = subprocess.Popen(
            [binary, f"--web.listen-address={urllib.parse.urlsplit(url).netloc}"],
            stdout=subprocess.DEVNULL,
            stderr=err,
        )
    try:
        deadline = time.monotonic() + 20
        while not _answers(f"{url}/-/ready"):
            assert process.poll() is None, f"pushgateway exited: {log.read_text()}"
            assert time.monotonic() < deadline, f"pushgateway not ready: {log.read_text()}"
            time.sleep(0.05)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


def _answers(url: str) -> bool:
    try:
        return http_get(url, timeout=1)[0] == 200
    except OSError:
        return False


@pytest.fixture
def pushgateway(tmp_path: Path) -> Iterator[str]:
    with running_pushgateway(tmp_path) as url:
        yield url
