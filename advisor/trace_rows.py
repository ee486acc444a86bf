"""Reading the openb trace's CSV files within bounds, for `advisor.replay`.

A line is at most MAX_LINE_CHARS long and a file holds at most MAX_ROWS rows (so /dev/zero
or a runaway file is refused, not read into memory whole); numbers are plain ASCII digits
within each column's range (`int()` would also take "١٢", "1_000" or thousands of digits);
a byte-order mark before the header is no part of the first column's name. Every refusal
is one `TraceError` line: 'FILE: line N: problem'.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO

from advisor.errors import InputError
from advisor.infile import open_input

MAX_LINE_CHARS = 64 * 1024
MAX_ROWS = 1_000_000  # the openb files hold about 9,000
# Per column, the largest value the model takes: far beyond any real node or pod, small
# enough that sums over a whole trace stay within int64.
MAXIMUM = {
    "gpu": 64,  # cards on one node; openb's largest has 8
    "num_gpu": 64,  # cards of one pod: more than one node has never fit
    "gpu_milli": 1000,  # a share of one card, in thousandths
    "cpu_milli": 2**40,
    "memory_mib": 2**40,  # 1 EiB: 2**60 bytes
    "creation_time": 10**15,  # seconds: 30 million years
}
_DIGITS = re.compile(r"[0-9]+")


class TraceError(InputError):
    """Bad trace input: str() is 'FILE: line N: problem'."""


def _bounded_lines(handle: IO[str], path: Path) -> Iterator[str]:
    number = 0
    while line := handle.readline(MAX_LINE_CHARS + 1):
        number += 1
        if len(line) > MAX_LINE_CHARS:
            raise TraceError(f"{path}: line {number}: longer than {MAX_LINE_CHARS:,} characters")
        yield line


def read_rows(path: Path, required: set[str]) -> list[tuple[int, dict[str, str]]]:
    """(line number, row) of each data row; the header must name every `required` column."""
    try:
        with io.TextIOWrapper(open_input(path), encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(_bounded_lines(handle, path))
            missing = required - set(reader.fieldnames or [])
            if missing:
                raise TraceError(f"{path}: line 1: missing columns {', '.join(sorted(missing))}")
            rows: list[tuple[int, dict[str, str]]] = []
            for row in reader:
                if len(rows) == MAX_ROWS:
                    raise TraceError(f"{path}: line {reader.line_num}: more than {MAX_ROWS:,} rows")
                rows.append((reader.line_num, row))
            return rows
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise TraceError(f"{path}: (file): {err}") from None


def read_int(
    path: Path, line: int, row: dict[str, str], column: str, default: int | None = None
) -> int:
    """The column's value: ASCII digits, at most MAXIMUM[column]; empty gives `default`
    where there is one."""
    value = (row.get(column) or "").strip()
    if value == "" and default is not None:
        return default
    if value.startswith("-") and _DIGITS.fullmatch(value[1:]):
        raise TraceError(f"{path}: line {line}: {column} {value} is negative")
    if _DIGITS.fullmatch(value) is None:
        raise TraceError(f"{path}: line {line}: {column} {value[:30]!r} is not an integer")
    maximum = MAXIMUM.get(column, 2**62)
    if len(value) > len(str(maximum)) or int(value) > maximum:
        raise TraceError(f"{path}: line {line}: {column} {value[:30]} is more than {maximum:,}")
    return int(value)


def read_name(path: Path, line: int, row: dict[str, str], column: str) -> str:
    name = row.get(column) or ""
    if not name.strip():
        raise TraceError(f"{path}: line {line}: {column} is empty")
    return name


def once(path: Path, line: int, what: str, name: str, seen: dict[str, int]) -> None:
    """A node or pod row names its node or pod once: a second row would count it twice."""
    if name in seen:
        raise TraceError(f"{path}: line {line}: {what} {name!r} again (first on line {seen[name]})")
    seen[name] = line


@dataclass(frozen=True, slots=True)
class NodeRow:
    """A node of the trace with GPUs, as its row says it; cpu_milli and memory_mib only when
    the nodes' resources are read."""

    name: str
    gpus: int
    model: str
    cpu_milli: int | None = None
    memory_mib: int | None = None


@dataclass(frozen=True, slots=True)
class TraceRows:
    """The trace's GPU nodes, checked, and its pod rows as read (what a pod may ask depends on
    the scheduler's profile: `replay.trace_from_rows` checks them)."""

    nodes: list[NodeRow]
    pods_csv: Path
    pods: list[tuple[int, dict[str, str]]]


def read_trace_rows(nodes_csv: Path, pods_csv: Path, every: bool) -> TraceRows:
    """Both files read, each problem refused in the order a reader meets it: the node file,
    its rows, then the pod file. Apart from `replay` because it loads none of the model:
    the `replay` command reads its input with it before the model loads (README "Start-up");
    `every`: the nodes' and pods' cpu_milli and memory_mib too."""
    node_columns = {"sn", "gpu"} | ({"cpu_milli", "memory_mib"} if every else set())
    nodes = []
    seen: dict[str, int] = {}
    for line, row in read_rows(nodes_csv, node_columns):
        sn = read_name(nodes_csv, line, row, "sn")
        once(nodes_csv, line, "node", sn, seen)
        gpus = read_int(nodes_csv, line, row, "gpu")
        if gpus:
            node = NodeRow(sn, gpus, row.get("model") or "")
            if every:
                cpu = read_int(nodes_csv, line, row, "cpu_milli")
                memory = read_int(nodes_csv, line, row, "memory_mib")
                node = replace(node, cpu_milli=cpu, memory_mib=memory)
            nodes.append(node)
    pod_columns = {"name", "num_gpu", "gpu_milli"} | (
        {"cpu_milli", "memory_mib"} if every else set()
    )
    return TraceRows(nodes, pods_csv, read_rows(pods_csv, pod_columns))
