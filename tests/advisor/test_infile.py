"""advisor.infile: a pipe whose writer never writes ends the read in words, after the idle
bound, instead of holding the command for ever; one that writes slowly is read whole."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from advisor import infile
from advisor.scenario import ScenarioError
from advisor.scenario.text import read_scenario_text
from advisor.trace_rows import TraceError, read_rows


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(infile, "IDLE_TIMEOUT_S", 0.3)


@pytest.fixture
def silent_fifo(tmp_path: Path) -> Iterator[Path]:
    """A FIFO with a writer that holds it open and writes nothing."""
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    writer = os.open(fifo, os.O_RDWR)  # O_RDWR: opens at once, with no reader yet
    try:
        yield fifo
    finally:
        os.close(writer)


@pytest.mark.usefixtures("quick")
def test_a_scenario_fifo_whose_writer_never_writes_is_refused_in_words(silent_fifo: Path) -> None:
    started = time.monotonic()
    with pytest.raises(ScenarioError) as caught:
        read_scenario_text(silent_fifo)
    assert str(caught.value) == f"{silent_fifo}: (file): nothing written for 0.3 s"
    assert time.monotonic() - started < 5


@pytest.mark.usefixtures("quick")
def test_a_trace_fifo_whose_writer_never_writes_is_refused_in_words(silent_fifo: Path) -> None:
    with pytest.raises(TraceError, match=r": \(file\): nothing written for 0\.3 s$"):
        read_rows(silent_fifo, {"name"})


@pytest.mark.usefixtures("quick")
def test_a_writer_slower_than_nothing_but_within_the_bound_is_read_whole(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.yaml"
    os.mkfifo(fifo)
    text = "nodes: []\npods: []\n"

    def write_slowly() -> None:
        with fifo.open("w") as out:
            for char in text:
                out.write(char)
                out.flush()
                time.sleep(0.01)

    writer = threading.Thread(target=write_slowly, daemon=True)
    writer.start()
    time.sleep(0.05)  # the writer is blocked in open() until the reader opens
    assert read_scenario_text(fifo) == text
    writer.join(5)


def test_a_regular_file_is_read_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text("nodes: []\n")
    with infile.open_input(path) as handle:
        assert handle.read() == b"nodes: []\n"
