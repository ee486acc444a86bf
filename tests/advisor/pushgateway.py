"""A real Pushgateway (Debian's prometheus-pushgateway) on a free loopback port.

A pytest plugin: `pytest_plugins = ["tests.advisor.pushgateway"]` gives the `pushgateway`
fixture (its base URL); skipped where the Pushgateway is not installed.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.realparts import running_pushgateway


@pytest.fixture
def pushgateway(tmp_path: Path) -> Iterator[str]:
    if shutil.which("prometheus-pushgateway") is None:
        pytest.skip("prometheus-pushgateway not installed")
    with running_pushgateway(tmp_path) as url:
        yield url
