"""Headless Chromium for the page tests: run it safely, and read back its PNG screenshots."""

from __future__ import annotations

import os
import re
import shutil
import signal
import struct
import subprocess
import zlib
from collections import Counter
from pathlib import Path

import pytest


def chromium_path() -> str:
    """The chromium binary; skips the calling test where it is not installed."""
    path = shutil.which("chromium")
    if path is None:
        pytest.skip("chromium is not installed")
    return path


def run_chromium(binary: str, profile: Path, *args: str) -> bytes:
    """Runs headless Chromium, killing its whole process group if it hangs."""
    command = [
        binary,
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        f"--user-data-dir={profile}",
        *args,
    ]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True
    ) as process:
        try:
            out, _ = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            raise
    assert process.returncode == 0, f"chromium exited {process.returncode}"
    return out


def screenshot(binary: str, page: Path, out: Path, width: int, height: int) -> bytes:
    """The PNG Chromium writes of `page` in a window of width x height."""
    run_chromium(
        binary,
        out.parent / f"{out.stem}-profile",
        f"--window-size={width},{height}",
        f"--screenshot={out}",
        page.as_uri(),
    )
    return out.read_bytes()


def dump_dom(binary: str, page: Path, profile: Path) -> str:
    """The DOM after Chromium parsed and laid out `page`, serialised."""
    return run_chromium(binary, profile, "--dump-dom", page.as_uri()).decode()


_WIDTH_PROBE = (
    "<script>document.body.dataset.scrollWidth = document.documentElement.scrollWidth;"
    "document.body.dataset.viewportWidth = document.documentElement.clientWidth;</script>"
)


def page_widths(binary: str, page: Path, width: int, profile: Path) -> tuple[int, int]:
    """The document's scroll width and the viewport's width of `page` in a window `width`
    wide: a copy of the page (beside `profile`) with a script that writes both into the DOM
    Chromium dumps."""
    probe = profile.with_name(f"{profile.name}-probe.html")
    probe.write_text(
        page.read_text(encoding="utf-8").replace("</body>", _WIDTH_PROBE + "</body>"),
        encoding="utf-8",
    )
    dom = run_chromium(binary, profile, f"--window-size={width},900", "--dump-dom", probe.as_uri())
    found = re.search(rb'data-scroll-width="(\d+)" data-viewport-width="(\d+)"', dom)
    assert found, "the width probe did not run"
    return int(found[1]), int(found[2])


def decode_png(data: bytes) -> tuple[int, int, list[bytes]]:
    """Width, height and RGB rows of an 8-bit RGB/RGBA non-interlaced PNG (what Chromium writes)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, []
    width = height = bpp = 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert (depth, interlace) == (8, 0), (depth, interlace)
            assert colour in (2, 6), colour
            bpp = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            idat.append(body)
        elif kind == b"IEND":
            break
        pos += 12 + length
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    assert len(raw) == height * (stride + 1)
    prev = bytes(stride)
    rows = []
    for y in range(height):
        start = y * (stride + 1)
        kind_of_filter = raw[start]
        line = bytearray(raw[start + 1 : start + 1 + stride])
        if kind_of_filter == 1:  # Sub
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif kind_of_filter == 2:  # Up
            line = bytearray((a + b) & 255 for a, b in zip(line, prev, strict=True))
        elif kind_of_filter == 3:  # Average
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + ((left + prev[i]) >> 1)) & 255
        elif kind_of_filter == 4:  # Paeth
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b = prev[i]
                c = prev[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        prev = bytes(line)
        rows.append(prev if bpp == 3 else bytes(b for i, b in enumerate(prev) if i % 4 != 3))
    return width, height, rows


def pixel_counts(rows: list[bytes]) -> Counter[bytes]:
    return Counter(row[i : i + 3] for row in rows for i in range(0, len(row), 3))


def hex_rgb(colour: str) -> bytes:
    return bytes.fromhex(colour.lstrip("#"))
