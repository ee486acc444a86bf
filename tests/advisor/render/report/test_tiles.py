"""The report's summary tiles: the fragmentation tile leads with stranded memory, and takes its
colour from it, with FGD's ratio as the secondary line."""

from __future__ import annotations

import re
from typing import Any

from advisor.render.report.data import Tile, fragmentation_tile
from advisor.render.report.html import render_report_html
from advisor.render.report.markdown import render_report_markdown
from advisor.render.report.read import read_report
from advisor.schemas import REPORT_SCHEMA

# 80% of the free memory fits no typical request, yet every Pending pod could use it: the case
# that read "Fragmentation 80%" in red beside "Stranded 0 MiB".
FRAGMENTED_BUT_NOTHING_STRANDED = {
    "free_mib": 81920,
    "ratio": 0.8,
    "stranded_mib": 0,
    "stranded_gpus": 0.0,
}
# 4096 of 81920 MiB free that no Pending pod can use; 4096 / 16384 MiB per card = 0.25 GPUs.
SOME_STRANDED = {"free_mib": 81920, "ratio": 0.1, "stranded_mib": 4096, "stranded_gpus": 0.25}


def _tile_html(page: str) -> str:
    found = re.search(
        r'<div class="tile [a-z]+"><div class="label">Stranded memory.*?</div></div>', page
    )
    assert found is not None, "no stranded-memory tile"
    return found.group(0)


def _report(fragmentation: dict[str, Any]) -> dict[str, Any]:
    return {"schema": REPORT_SCHEMA, "fragmentation": fragmentation}


def tile_of(fragmentation: dict[str, Any]) -> Tile:
    """The tile as the pages make it: from the report read into its typed form."""
    return fragmentation_tile(read_report(_report(fragmentation)).get("fragmentation"))


def test_a_fragmented_cluster_with_nothing_stranded_is_good_and_says_0_mib() -> None:
    tile = tile_of(FRAGMENTED_BUT_NOTHING_STRANDED)
    assert (tile.label, tile.value, tile.tone) == ("Stranded memory", "0 MiB", "good")
    # 0.8 as a percentage with one decimal; 81920 grouped by thousands.
    assert tile.detail.startswith("Fragmentation 80.0%: of 81,920 MiB free,")
    assert tile.detail.endswith("(0 GPUs of memory).")


def test_stranded_memory_makes_the_tile_bad_whatever_the_ratio() -> None:
    tile = tile_of(SOME_STRANDED)
    assert (tile.value, tile.tone) == ("4,096 MiB", "bad")
    assert "Fragmentation 10.0%" in tile.detail
    assert "(0.25 GPUs of memory)" in tile.detail


def test_unknown_stranded_memory_is_neutral_and_a_question_mark() -> None:
    tile = tile_of({"free_mib": 81920, "ratio": 0.8, "stranded_mib": None})
    assert (tile.value, tile.tone) == ("?", "neutral")
    empty = tile_of({})
    assert (empty.value, empty.tone) == ("?", "neutral")


def test_the_html_tile_shows_stranded_memory_as_its_value_and_colour() -> None:
    good = _tile_html(render_report_html(_report(FRAGMENTED_BUT_NOTHING_STRANDED)))
    assert good.startswith('<div class="tile good">')
    assert '<div class="value">0 MiB</div>' in good
    assert "Fragmentation 80.0%" in good
    bad = _tile_html(render_report_html(_report(SOME_STRANDED)))
    assert bad.startswith('<div class="tile bad">')
    assert '<div class="value">4,096 MiB</div>' in bad


def test_the_markdown_summary_leads_with_stranded_memory() -> None:
    text = render_report_markdown(_report(SOME_STRANDED))
    assert "- **Stranded memory: 4,096 MiB**: Fragmentation 10.0%: of 81,920 MiB free," in text
    assert "**Fragmentation:" not in text
