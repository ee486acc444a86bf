"""Writing scenarios and reports atomically (advisor.scenario.write.write_atomic)."""

from __future__ import annotations

import os
import stat
import threading
import time
from pathlib import Path
from unittest.mock import patch

from advisor.scenario import write
from advisor.scenario.write import PARTIAL_SUFFIX, STALE_PARTIAL_S, write_atomic


def test_a_regular_file_is_replaced_whole(tmp_path: Path) -> None:
    target = tmp_path / "out.yaml"
    target.write_text("old, longer than the new text\n")
    write_atomic(target, "new\n")
    assert target.read_text() == "new\n"
    assert [p.name for p in tmp_path.iterdir()] == ["out.yaml"]  # no temporary file left


def test_a_pipe_is_written_to_not_replaced(tmp_path: Path) -> None:
    """Found by the fuzz suite: `--output /dev/null` (as root) renamed a file over the device.
    A FIFO is the same case without touching /dev: the writer must open it, not rename."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "stdout"  # as /dev/stdout is a link to the descriptor
    link.symlink_to(fifo)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()), daemon=True)
    reader.start()
    write_atomic(link, "through the pipe\n")
    reader.join(timeout=30)
    assert received == ["through the pipe\n"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    assert link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe", "stdout"]


def test_a_killed_writers_old_partial_file_is_removed_by_the_next_write(tmp_path: Path) -> None:
    """A run killed between writing and renaming leaves its temporary file; the next write of
    the same target removes it once it is old, and leaves a young one (a writer at work) and
    every other file alone."""
    target = tmp_path / "report.json"
    old = tmp_path / f".report.json.k1ll3d{PARTIAL_SUFFIX}"
    young = tmp_path / f".report.json.w0rk1n{PARTIAL_SUFFIX}"
    other_target = tmp_path / f".report.md.k1ll3d{PARTIAL_SUFFIX}"
    user_file = tmp_path / ".report.json.bak"
    for path in (old, young, other_target, user_file):
        path.write_text("{")
    long_ago = time.time() - STALE_PARTIAL_S - 60
    for path in (old, other_target, user_file):
        os.utime(path, (long_ago, long_ago))
    write_atomic(target, "{}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [target.name, young.name, other_target.name, user_file.name]
    )


def test_a_text_is_written_slice_by_slice_to_the_same_bytes(tmp_path: Path) -> None:
    text = "".join(f"line {i} é ✓ \U0001f600\n" for i in range(50))
    with patch.object(write, "WRITE_SLICE", 7):
        write_atomic(tmp_path / "sliced.json", text)
    assert (tmp_path / "sliced.json").read_bytes() == text.encode("utf-8")
