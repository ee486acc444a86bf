"""Writing scenarios and reports atomically (advisor.scenario_write.write_atomic)."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

from advisor.scenario_write import write_atomic


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
