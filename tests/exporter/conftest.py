"""Exporter test fixtures: the fake libnvidia-ml.so.1, built once per session.

`fake_nvml` (per test) hands out a `FakeNvml`: `.write(FakeState(...))` changes what the
library reports, `.env()` is the environment for a subprocess that should load it
(LD_LIBRARY_PATH + FAKE_NVML_STATE), `.lib_dir` / `.state_path` for anything else. In this
process the library is already loaded, so pynvml (and `exporter.nvml`) use it directly.
Import the state classes with `from tests.exporter.fakenvml.state import FakeCard, FakeState, ...`.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from exporter.nvml import NvmlReader
from tests.exporter.fakenvml.state import STATE_ENV, FakeNvml, FakeState
from tests.servicecheck import not_a_service

FAKE_NVML_SOURCE = Path(__file__).resolve().parent / "fakenvml" / "fake_nvml.c"


def build_fake_nvml(lib_dir: Path) -> Path:
    """Compiles the fake into lib_dir/libnvidia-ml.so.1 and returns that path."""
    gcc = shutil.which("gcc")
    if gcc is None:
        pytest.fail("gcc is needed to build the fake libnvidia-ml.so.1 (make system-deps)")
    lib = lib_dir / "libnvidia-ml.so.1"
    with not_a_service():  # a build step, once per session
        subprocess.run(
            [gcc, "-shared", "-fPIC", "-O1", "-Wall", "-Wl,-soname,libnvidia-ml.so.1",
             "-o", str(lib), str(FAKE_NVML_SOURCE)],
            check=True,
        )  # fmt: skip
    return lib


@pytest.fixture(scope="session")
def fake_nvml_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeNvml]:
    lib_dir = tmp_path_factory.mktemp("fakenvml")
    lib = build_fake_nvml(lib_dir)
    fake = FakeNvml(lib_dir=lib_dir, state_path=lib_dir / "state")
    fake.write(FakeState())
    # Set once, before any NVML worker thread exists: the library calls getenv on every call.
    previous = os.environ.get(STATE_ENV)
    os.environ[STATE_ENV] = str(fake.state_path)
    # Loaded by path before pynvml's first init: its CDLL("libnvidia-ml.so.1") then gets
    # this copy (same SONAME) instead of searching the library path.
    ctypes.CDLL(str(lib))
    yield fake
    if previous is None:
        os.environ.pop(STATE_ENV, None)
    else:
        os.environ[STATE_ENV] = previous


@pytest.fixture
def fake_nvml(fake_nvml_session: FakeNvml) -> FakeNvml:
    """The fake library, reset to a loaded driver with no cards."""
    fake_nvml_session.write(FakeState())
    return fake_nvml_session


@pytest.fixture
def make_reader(fake_nvml: FakeNvml) -> Iterator[Callable[..., NvmlReader]]:
    """Builds NvmlReaders over the fake library and closes them after the test."""
    readers: list[NvmlReader] = []

    def make(**options: Any) -> NvmlReader:
        reader = NvmlReader(**options)
        readers.append(reader)
        return reader

    yield make
    for reader in readers:
        reader.close()
