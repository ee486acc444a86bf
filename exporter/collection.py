"""Collections: off the event loop, bounded in time, shared by concurrent scrapes, cached.

One `Collection` = one frozen `Snapshot` plus its rendered expositions (once per format:
the format that triggered it is rendered with it, others on first request). Scrapes within
the freshness window reuse it; scrapes during a collection await the same one
(single-flight). A reader that does not answer in time is left running in its thread
(threads cannot be cancelled) and joined by the next collection, never duplicated; the
snapshot is then built without it and its collector reports failure.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Protocol, TypeVar, cast

from exporter.allotments import PodSource, PodsView
from exporter.attribution import Owner, PidResolver
from exporter.metrics import FAMILY_GROUPS, render
from exporter.readings import NvmlError, NvmlReading, NvmlUnavailable
from exporter.snapshot import CardKey, CollectorRun, Snapshot, build_snapshot, card_key_of

T = TypeVar("T")
log = logging.getLogger("xgpu.exporter.collection")

# Fields a card does not have are absent series, not failures (the reader drops these too).
SOFT_CODES = frozenset({"not_supported"})


class Reader(Protocol):
    """A card reading source: `exporter.nvml.NvmlReader` or the simulated one. Blocking."""

    def read(self) -> NvmlReading: ...

    def close(self) -> None: ...


Format = tuple[bool, bool]  # (OpenMetrics, gzip)
REFRESH_AHEAD = 0.5  # share of the freshness window after which a scrape triggers a refresh


def render_format(
    snapshot: Snapshot, fmt: Format, families: frozenset[str] = FAMILY_GROUPS
) -> bytes:
    body = render(snapshot, fmt[0], families)
    return gzip.compress(body, 6) if fmt[1] else body


class RunOutcome:
    """One collector run in progress: the block sets `error` to fail it (raising fails it too)."""

    __slots__ = ("error",)

    def __init__(self) -> None:
        self.error: str | None = None


@contextlib.contextmanager
def collector_run(
    runs: list[CollectorRun],
    name: str,
    *,
    on_timeout: str = "timed out",
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[RunOutcome]:
    """Times one collector's run and records its success and duration, as node_exporter's
    `execute` does for each collector: a TimeoutError from the block reads `on_timeout`; any
    other exception is a collector bug, logged with its traceback and reported as a failed
    run rather than taking the endpoint down."""
    outcome = RunOutcome()
    started = clock()
    try:
        yield outcome
    except TimeoutError:
        outcome.error = on_timeout
    except Exception as exc:
        log.exception("collector failed", extra={"collector": name})
        outcome.error = f"failed: {exc!r}"
    runs.append(CollectorRun(name, outcome.error is None, clock() - started, outcome.error))


@dataclass(slots=True)
class Collection:
    snapshot: Snapshot
    seq: int
    started: float  # monotonic; the data's age counts from here
    collect_s: float
    families: frozenset[str] = FAMILY_GROUPS  # the metric families the exporter serves
    _renders: dict[Format, asyncio.Future[bytes]] = field(default_factory=dict)

    def formats(self) -> set[Format]:
        return set(self._renders)

    async def exposition(self, openmetrics: bool, compressed: bool) -> bytes:
        """Rendered bytes for this format; rendered off the loop once, then shared."""
        key = (openmetrics, compressed)
        future = self._renders.get(key)
        if future is None:
            future = asyncio.ensure_future(
                asyncio.to_thread(render_format, self.snapshot, key, self.families)
            )
            self._renders[key] = future
        return await asyncio.shield(future)


class Engine:
    def __init__(
        self,
        *,
        node: str,
        reader: Reader | None,
        reader_name: str = "nvml",
        pods: PodSource | None,
        resolver: PidResolver | None,
        freshness_s: float = 1.0,
        timeout_s: float = 3.0,
        families: frozenset[str] = FAMILY_GROUPS,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.node = node
        self.reader = reader
        self.reader_name = reader_name
        self.pods = pods
        self.resolver = resolver
        self.freshness_s = freshness_s
        self.timeout_s = timeout_s
        self.families = families
        self.wall_clock = wall_clock
        self.collections = 0  # how many collections ran; numbers them (X-Xgpu-Collection)
        self._current: Collection | None = None
        self._inflight: asyncio.Future[Collection] | None = None
        self._worker = DaemonWorker("card-reader")
        self._reading: asyncio.Future[NvmlReading] | None = None
        self._known_cards: tuple[CardKey, ...] = ()
        self._health: dict[CardKey, tuple[str, ...]] = {}  # problems of each card last read
        self._errors: Counter[tuple[str, str]] = Counter()

    @property
    def ready(self) -> bool:
        return self._current is not None

    @property
    def current(self) -> Collection | None:
        return self._current

    async def latest(self, fmt: Format | None = None) -> Collection:
        """The collection to serve: the fresh one, the one running, or a new one.

        Data served is never older than the freshness window. Past half the window, a scrape
        also starts the next collection in the background (pre-rendering the formats asked
        for so far), so a steady stream of scrapes never waits for one.
        """
        wanted = {fmt} if fmt else set()
        current = self._current
        if current is not None:
            age = time.monotonic() - current.started
            if age < self.freshness_s:
                if age >= self.freshness_s * REFRESH_AHEAD and self._inflight is None:
                    self._inflight = self._spawn(current.formats() | wanted)
                return current
        if self._inflight is None:
            self._inflight = self._spawn(wanted)
        return await asyncio.shield(self._inflight)

    async def close(self) -> None:
        if self.reader is not None:
            try:
                await asyncio.wait_for(self._worker.submit(self.reader.close), self.timeout_s)
            except Exception as exc:  # shutting down (maybe a hung driver): report, go on
                log.warning("reader close failed", extra={"error": repr(exc)})

    def _spawn(self, formats: set[Format]) -> asyncio.Future[Collection]:
        future = asyncio.ensure_future(self._run(formats))
        future.add_done_callback(_log_failure)
        return future

    async def _run(self, formats: set[Format]) -> Collection:
        try:
            collection = await self._collect(formats)
            self._current = collection
            return collection
        finally:
            self._inflight = None

    async def _collect(self, formats: set[Format]) -> Collection:
        started = time.monotonic()
        deadline = started + self.timeout_s
        collected_at = self.wall_clock()
        runs: list[CollectorRun] = []

        reading = await self._read_cards(deadline, runs)
        view = self._view_pods(runs)
        owners = await self._attribute(reading, deadline, runs)
        errors = tuple(sorted((f, c, n) for (f, c), n in self._errors.items()))
        known_cards = self._known_cards
        families = self.families

        def build() -> tuple[Snapshot, dict[Format, bytes]]:
            snapshot = build_snapshot(
                node=self.node,
                collected_at=collected_at,
                reading=reading,
                known_cards=known_cards,
                pods=view,
                owners=owners,
                collectors=tuple(runs),
                nvml_errors=errors,
            )
            bodies = {fmt: render_format(snapshot, fmt, families) for fmt in sorted(formats)}
            return snapshot, bodies

        # Joining and rendering are CPU only: one hop to a thread, no deadline needed.
        snapshot, bodies = await asyncio.to_thread(build)
        self.collections += 1
        collection = Collection(
            snapshot=snapshot,
            seq=self.collections,
            started=started,
            collect_s=time.monotonic() - started,
            families=families,
        )
        loop = asyncio.get_running_loop()
        for fmt, body in bodies.items():
            done: asyncio.Future[bytes] = loop.create_future()
            done.set_result(body)
            collection._renders[fmt] = done
        return collection

    async def _read_cards(self, deadline: float, runs: list[CollectorRun]) -> NvmlReading | None:
        if self.reader is None:
            return None
        if self._reading is None or self._reading.done():
            # Only one read at a time: a hung driver gets joined, not piled up in threads.
            self._reading = self._worker.submit(self.reader.read)
            self._reading.add_done_callback(self._count_errors)
        reading: NvmlReading | None = None
        # The reader counts its own stuck calls; the timeout is the collection's deadline.
        timeout = f"no answer within {self.timeout_s:g}s"
        with collector_run(runs, self.reader_name, on_timeout=timeout) as run:
            try:
                reading = await asyncio.wait_for(
                    asyncio.shield(self._reading), _remaining(deadline)
                )
            except NvmlUnavailable as exc:
                run.error = f"unavailable: {exc}"
            if reading is not None:
                hard = [e for e in reading.errors if e.code not in SOFT_CODES]
                if hard:
                    run.error = ", ".join(f"{e.function}: {e.code}" for e in hard[:5])
                if reading.cards or not hard:
                    self._known_cards = tuple(card_key_of(c) for c in reading.cards)
                    self._log_health_changes(reading)
                else:
                    reading = None  # a reading cut short (a stuck call) knows nothing of cards
        if run.error is not None:
            log.warning(
                "card reading failed", extra={"collector": self.reader_name, "error": run.error}
            )
        return reading

    def _log_health_changes(self, reading: NvmlReading) -> None:
        """Why a card turned unhealthy, and when it recovers: the metric only says 0 or 1."""
        health = {card_key_of(c): c.health_problems for c in reading.cards}
        for key, problems in health.items():
            if problems == self._health.get(key, ()):
                continue
            card = {"gpu_index": key.gpu_index, "gpu_uuid": key.gpu_uuid}
            if problems:
                log.warning("card unhealthy", extra={**card, "problems": "; ".join(problems)})
            else:
                log.info("card healthy again", extra=card)
        self._health = health

    def _view_pods(self, runs: list[CollectorRun]) -> PodsView | None:
        if self.pods is None:
            return None
        view = PodsView(allotments=(), ok=False)  # what a source that raised leaves
        with collector_run(runs, self.pods.name) as run:
            view = self.pods.view()
            run.error = None if view.ok else (view.error or "not refreshed")
        if run.error is not None and view.error is None:
            view = replace(view, ok=False, error=run.error)
        return view

    async def _attribute(
        self, reading: NvmlReading | None, deadline: float, runs: list[CollectorRun]
    ) -> dict[int, Owner] | None:
        if self.resolver is None:
            return None
        owners: dict[int, Owner] | None = {}  # no reading: nothing to attribute, a success
        with collector_run(runs, "attribution", on_timeout="timed out reading process cgroups"):
            if reading is not None:
                owners = None
                pids = sorted({p.pid for p in reading.processes})
                found = asyncio.to_thread(self.resolver.owners, pids)
                owners = dict(await asyncio.wait_for(found, _remaining(deadline)))
        return owners

    def _count_errors(self, future: asyncio.Future[NvmlReading]) -> None:
        """Counts a read's failed calls when it answers, even after its collection gave up."""
        if future.cancelled():
            return
        failure = future.exception()
        if failure is None:
            found: tuple[NvmlError, ...] = future.result().errors
        elif isinstance(failure, NvmlUnavailable) and failure.error is not None:
            found = (failure.error,)
        else:
            found = ()
        for error in found:
            self._errors[(error.function, error.code)] += 1


class DaemonWorker:
    """Runs blocking calls one after another on one daemon thread.

    Unlike executor threads, a call hung in the driver cannot keep the process from exiting
    on SIGTERM; the engine submits a new read only when the previous one has answered.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._calls: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def submit(self, work: Callable[[], T]) -> asyncio.Future[T]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()

        def settle(result: T | None, error: BaseException | None) -> None:
            if future.done():
                return
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(cast(T, result))

        def call() -> None:
            try:
                result, error = work(), None
            except Exception as exc:
                result, error = None, exc
            with contextlib.suppress(RuntimeError):  # the loop closed while we were hung
                loop.call_soon_threadsafe(settle, result, error)

        self._calls.put(call)
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name=self.name, daemon=True)
            self._thread.start()
        return future

    def _serve(self) -> None:
        while True:
            self._calls.get()()


def _remaining(deadline: float) -> float:
    return max(deadline - time.monotonic(), 0.0)


def _log_failure(future: asyncio.Future[Collection]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.error("collection failed", exc_info=future.exception())
