"""The HTML report in a real headless Chromium: it renders, draws the bars, shows every pod."""

from __future__ import annotations

import os
import shutil
import signal
import struct
import subprocess
import zlib
from collections import Counter
from pathlib import Path

import pytest

from advisor.render import render_html
from advisor.render._style import MODE_PALETTES
from advisor.render.sample import sample_diagnosis, sample_view

WIDTH, HEIGHT = 1200, 1400  # tall enough to show the first node's bars under the header


@pytest.fixture(scope="module")
def chromium() -> str:
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


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("render") / "diagnosis.html"
    path.write_text(render_html(sample_diagnosis(), sample_view()), encoding="utf-8")
    return path


def test_screenshot_shows_the_report(chromium: str, page: Path, tmp_path: Path) -> None:
    shot = tmp_path / "diagnosis.png"
    run_chromium(
        chromium,
        tmp_path / "profile",
        f"--window-size={WIDTH},{HEIGHT}",
        f"--screenshot={shot}",
        page.as_uri(),
    )
    data = shot.read_bytes()
    assert len(data) > 50_000  # a blank page of this size compresses to a few KiB
    width, height, rows = decode_png(data)
    assert (width, height) == (WIDTH, HEIGHT)
    counts = pixel_counts(rows)
    _, most = counts.most_common(1)[0]
    assert most < 0.8 * width * height, "the page is mostly one colour"
    assert len(counts) > 500, "too few distinct colours for text, badges and bars"
    # The bars are drawn: solid fills of both isolation modes' colour families.
    memory = sum(counts[hex_rgb(c)] for c in MODE_PALETTES[0])
    memory_core = sum(counts[hex_rgb(c)] for c in MODE_PALETTES[1])
    assert memory > 40_000, memory
    assert memory_core > 20_000, memory_core


def test_dom_contains_every_pod_and_node(chromium: str, page: Path, tmp_path: Path) -> None:
    dom = run_chromium(chromium, tmp_path / "profile", "--dump-dom", page.as_uri()).decode()
    assert dom.count('class="bar"') == 24
    for pod in sample_diagnosis()["pods"]:
        assert pod["pod"] in dom
    for node in sample_view()["nodes"]:
        assert f'id="node-{node["name"]}"' in dom
        for card in node["cards"]:
            for allotment in card["allotments"]:
                assert allotment["pod"] in dom
