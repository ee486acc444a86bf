"""Opening a file the user names (a scenario, --pods-from, a trace) without waiting on it.

`open()` of a FIFO blocks until something opens it for writing, so `--scenario FIFO` with no
writer would hang for ever. Opened non-blocking, a FIFO without a writer reads as empty (the
readers then refuse it in one line); one with a writer (`--scenario <(kubectl ...)`) reads
as it would have. A writer that opens the FIFO and then writes nothing would still hold a
blocking read for ever, so anything that is not a regular file is read with an idle bound:
`IDLE_TIMEOUT_S` without a byte ends the read with an error that says so. A directory is
refused by name rather than by errno text.
"""

from __future__ import annotations

import errno
import io
import os
import select
import stat
import time
from pathlib import Path
from typing import BinaryIO

# Long enough for `<(kubectl get ...)` on a large cluster to send its first byte.
IDLE_TIMEOUT_S = 60.0


class _InWords(OSError):
    """Said in words ("a directory, not a file"), not as "[Errno 21] ...: 'PATH'"."""

    def __str__(self) -> str:
        return str(self.strerror)


class IsADirectory(_InWords, IsADirectoryError):
    pass


class NothingWritten(_InWords, TimeoutError):
    pass


class _IdleBounded(io.RawIOBase):
    """A pipe or device read that gives up after `idle_s` seconds without a byte."""

    def __init__(self, fd: int, idle_s: float) -> None:
        self._fd = fd
        self._idle_s = idle_s

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._fd

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        # Read first: a FIFO that never had a writer reads as EOF at once, though select()
        # would never call it readable.
        deadline = time.monotonic() + self._idle_s
        while True:
            try:
                return os.readv(self._fd, [buffer])
            except BlockingIOError:  # a writer, and nothing written yet
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self._fd], [], [], left)[0]:
                    raise NothingWritten(
                        errno.ETIMEDOUT, f"nothing written for {self._idle_s:g} s"
                    ) from None

    def close(self) -> None:
        if not self.closed:
            os.close(self._fd)
        super().close()


def open_input(path: Path) -> BinaryIO:
    """`path` opened for reading, in binary; OSError when it cannot be."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectory(errno.EISDIR, "a directory, not a file")
        if stat.S_ISREG(mode):
            os.set_blocking(fd, True)
            return os.fdopen(fd, "rb")
        # A pipe or a device: non-blocking, each read waits at most IDLE_TIMEOUT_S.
        return io.BufferedReader(_IdleBounded(fd, IDLE_TIMEOUT_S))
    except BaseException:
        os.close(fd)
        raise
