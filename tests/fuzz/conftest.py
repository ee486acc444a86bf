"""The fuzz suite's shared fixture: a loopback stand-in exporter for the commands that read
one (`--exporters`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fuzz.standin import standin_server
from tests.fuzz.test_sources_readers import exposition_lines


@pytest.fixture(scope="module")
def exporter_url() -> Iterator[str]:
    page = ("\n".join(exposition_lines("n1")) + "\n").encode()
    with standin_server() as standin:
        standin.answer = lambda path, query: (200, page) if path == "/metrics" else (404, b"")
        yield standin.base
