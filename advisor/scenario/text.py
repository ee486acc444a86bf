"""A scenario file's text, within bounds: at most MAX_SCENARIO_BYTES read (a file larger, or a
stream such as /dev/zero, is refused unread or before parsing), UTF-8, not empty. Each refusal
is one `ScenarioError` line naming the file, "(file)" and the problem.

Apart from `parse` because it loads neither PyYAML nor the core: a command reads its input
with it before it loads the model, so that a missing or unreadable file is refused at once
(README "Start-up").
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from advisor.defaults import MAX_SCENARIO_BYTES
from advisor.infile import open_input
from advisor.scenario.errors import ScenarioError


def read_scenario_text(path: Path, max_bytes: int = MAX_SCENARIO_BYTES) -> str:
    """The file's text, refused unread when larger than `max_bytes`; never more than that
    read from anything (a pipe, a device)."""
    limit = f"more than the {max_bytes:,} bytes a scenario may have (--scenario.max-bytes)"
    try:
        with open_input(path) as handle:
            info = os.fstat(handle.fileno())
            if stat.S_ISREG(info.st_mode) and info.st_size > max_bytes:
                raise ScenarioError(f"{path}: (file): {info.st_size:,} bytes, {limit}")
            raw = handle.read(max_bytes + 1)
    except OSError as err:
        raise ScenarioError(f"{path}: (file): {err}") from None
    if len(raw) > max_bytes:
        raise ScenarioError(f"{path}: (file): {limit}")
    try:
        text = raw.decode("utf-8-sig")  # a byte-order mark is no part of the text
    except UnicodeDecodeError as err:
        raise ScenarioError(f"{path}: (file): not UTF-8 text (byte {err.start:,})") from None
    if not text.strip():  # also a FIFO no one writes to (advisor.infile)
        raise ScenarioError(f"{path}: (file): empty")
    return text
