"""Opening a file the user names (a scenario, --pods-from, a trace) without waiting on it.

`open()` of a FIFO blocks until something opens it for writing, so `--scenario FIFO` with no
writer would hang for ever. Opened non-blocking, a FIFO without a writer reads as empty (the
readers then refuse it in one line); one with a writer (`--scenario <(kubectl ...)`) reads
as it would have. A directory is refused by name rather than by errno text.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO


class IsADirectory(IsADirectoryError):
    """Said in words ("a directory, not a file"), not as "[Errno 21] ...: 'PATH'"."""

    def __str__(self) -> str:
        return str(self.strerror)


def open_input(path: Path) -> BinaryIO:
    """`path` opened for reading, in binary; OSError when it cannot be."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        if stat.S_ISDIR(os.fstat(fd).st_mode):
            raise IsADirectory(errno.EISDIR, "a directory, not a file")
        os.set_blocking(fd, True)  # a pipe with a writer: wait for what it writes
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
