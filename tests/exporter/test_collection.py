"""The collection engine with the simulated source: single-flight, freshness, cached renders."""

from __future__ import annotations

import asyncio
import gzip
import shutil
from pathlib import Path

from exporter.collection import Engine
from exporter.scenario_pods import ScenarioPodSource
from exporter.simulate import SimulatedReader
from tests.wait import eventually

DATA = Path(__file__).parent / "data"
NODE = "gpu-node-1"


def engine_for(scenario: Path, freshness_s: float = 1.0) -> tuple[Engine, ScenarioPodSource]:
    pods = ScenarioPodSource(scenario, NODE, poll_s=0.05)
    cluster = pods.load()
    node = next(n for n in cluster.nodes if n.name == NODE)
    reader = SimulatedReader(node, lambda: pods.view().allotments)
    engine = Engine(
        node=NODE,
        reader=reader,
        reader_name="simulate",
        pods=pods,
        resolver=reader,
        freshness_s=freshness_s,
    )
    return engine, pods


async def test_concurrent_scrapes_share_one_collection() -> None:
    engine, _ = engine_for(DATA / "exporter-node.yaml")
    got = await asyncio.gather(*(engine.latest() for _ in range(50)))
    assert engine.collections == 1
    assert all(c is got[0] for c in got)
    bodies = await asyncio.gather(*(c.exposition(False, False) for c in got))
    assert all(b is bodies[0] for b in bodies)  # rendered once, shared


async def test_freshness_window_reuses_then_recollects() -> None:
    engine, _ = engine_for(DATA / "exporter-node.yaml", freshness_s=60.0)
    first = await engine.latest()
    assert await engine.latest() is first
    engine.freshness_s = 0.0
    second = await engine.latest()
    assert second is not first
    assert second.seq == 2
    assert engine.ready


async def test_formats_and_gzip_are_cached_per_collection() -> None:
    engine, _ = engine_for(DATA / "exporter-node.yaml")
    collection = await engine.latest()
    text = await collection.exposition(False, False)
    om = await collection.exposition(True, False)
    zipped = await collection.exposition(False, True)
    assert om.endswith(b"# EOF\n")
    assert not text.endswith(b"# EOF\n")
    assert gzip.decompress(zipped) == text
    assert await collection.exposition(True, False) is om


async def test_a_broken_scenario_edit_keeps_the_last_allotments(tmp_path: Path) -> None:
    scenario = tmp_path / "scenario.yaml"
    shutil.copy(DATA / "exporter-node.yaml", scenario)
    engine, pods = engine_for(scenario, freshness_s=0.0)
    await pods.start()
    try:
        scenario.write_text("nodes: [oops\n")
        await eventually(lambda: not pods.view().ok, what="the poller read the broken edit")
        snap = (await engine.latest()).snapshot
        runs = {r.name: r for r in snap.collectors}
        assert runs["scenario"].success is False
        assert runs["scenario"].error
        assert str(scenario) in runs["scenario"].error
        assert runs["simulate"].success
        assert runs["attribution"].success
        assert len(snap.vgpus) == 3  # still served from the last good view
    finally:
        await pods.close()


async def test_past_half_the_window_a_scrape_refreshes_in_the_background() -> None:
    engine, _ = engine_for(DATA / "exporter-node.yaml", freshness_s=60.0)
    first = await engine.latest((True, False))
    # Aged 31 s of the 60 s window (past half of it, still inside it) by moving its start
    # back, not by waiting: however slow the machine, the age stays within the window.
    first.started -= 31.0
    assert await engine.latest((True, False)) is first  # served at once, no waiting
    # the refresh it started lands without anyone waiting for it
    await eventually(lambda: engine.collections == 2, what="the background refresh")
    second = await engine.latest((True, False))
    assert second is not first
    assert second.seq == 2
    # the format scraped so far was rendered with the refresh
    assert second.formats() == {(True, False)}
    assert second._renders[(True, False)].done()
