"""How the API serves under load: lanes (a thread with its own event loop and its own backend clients).

- **reader lanes** (``serve.readers``) answer retrieve/context/list/export calls: their SQLite reads never
  run on the HTTP event loop and never wait for a write;
- the **ingest lane** only appends accepted messages to the durable log (a short transaction);
- the **processor lane** runs the pipeline in the background: it drains the log's backlog on start and
  after every append, and runs deletions between batches (never inside one);
- the **embed lane** owns the embedding model and its vector cache; the other lanes reach it through
  :class:`EmbedderProxy` (one model in memory; the cache's connection and in-flight table used from one loop
  only). The forwards run in the model's own threads: a question's beside the pipeline's, not behind them
  (:mod:`backends.embed.base`).

With ``serve --workers N`` (:mod:`memstream.serve_procs`) each of N processes runs these lanes on one shared
port (``shared``): the process holding the data dir's processing lock runs the processor lane and notices
the other processes' appends by polling the log's backlog every ``POLL_S``; the others serve reads and
append writes, retry the lock every ``TAKEOVER_S`` (one takes over when the processing process dies) and
run :meth:`Lanes.exclusive` work (deletions, ``wait``) after the processor has consumed what the log held,
between its batches (:class:`memstream.dirlock.WorkLock`, one batch or deletion at a time across processes).

A request waits for a reader or the ingest lane at most ``serve.max_wait_s`` (less under a standing
overload), else :class:`Busy` (the API answers 429 with Retry-After), at once when the lane's queue is
expected to take longer (:mod:`memstream.lane_queue`). Pending raw messages above ``serve.max_backlog`` also
refuse new writes (429). With a Kafka log the API only appends; the Faust workers process. Injected clients
(tests) run inline on the caller's loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from backends.embed.base import SOON, warm_up
from language.text import clear_text_caches
from memstream.clients import Clients, build_clients
from memstream.dirlock import WorkLock, release_processing_lock, try_processing_lock
from memstream.lane_queue import Busy, LaneQueue
from memstream.lane_task import run_on
from memstream.settings import ServeConfig, Settings
from streams.topics import RAW_MESSAGES

__all__ = ["Busy", "EmbedderProxy", "Lane", "Lanes"]

log = logging.getLogger("memstream.serving")
T = TypeVar("T")
# the background worker waits this long after a wake-up before it runs, so writes arriving meanwhile are
# processed as one batch (a run per one-message POST cost ~11 ms of CPU a message, mostly per-run overhead)
GATHER_S = 0.25
POLL_S = 0.2  # shared: how often the processing process looks for appends made by the other processes
TAKEOVER_S = 1.0  # shared: how often the other processes try to take over processing
CATCH_UP_S = 30.0  # shared: how long exclusive work waits for the processor to consume the log's backlog


class Lane:
    """A thread running its own event loop; ``call(fn)`` runs ``fn(clients)`` there and awaits the result,
    one call at a time (they share the lane's thread: two at once each took about as long as both), the
    others queued within the bounds of ``serve`` (:class:`LaneQueue`)."""

    def __init__(self, name: str, serve: ServeConfig | None = None) -> None:
        self.name = name
        self.queue = LaneQueue(name, serve or ServeConfig())  # used only from the caller's (HTTP) loop
        self.loop: asyncio.AbstractEventLoop | None = None
        self.clients: Any = None
        self._thread: threading.Thread | None = None

    async def start(self, open_clients: Callable[[], Awaitable[Any]] | None = None) -> Lane:
        ready = threading.Event()

        def run() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self.loop = loop
            ready.set()
            loop.run_forever()
            loop.close()

        self._thread = threading.Thread(target=run, name=f"memstream-{self.name}", daemon=True)
        self._thread.start()
        await asyncio.to_thread(ready.wait)
        if open_clients is not None:
            self.clients = await self.submit(open_clients())
        return self

    async def submit(self, coro: Awaitable[T]) -> T:
        """Run ``coro`` on this lane's loop (unbounded: for start-up, shutdown and background work)."""
        if self.loop is None:
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self.loop))  # type: ignore[arg-type]

    @property
    def pending(self) -> int:
        """Calls running or waiting on this lane."""
        return self.queue.pending

    async def call(self, fn: Callable[[Any], Awaitable[T]]) -> T:
        """``fn(clients)`` run on this lane (:class:`Busy` when it would wait too long for its turn)."""
        return await self.queue.run(lambda: self.submit(fn(self.clients)))

    async def stop(self, close: Callable[[Any], Awaitable[None]] | None = None) -> None:
        if close is not None and self.clients is not None:
            await self.submit(close(self.clients))
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self.loop.stop)
            await asyncio.to_thread(self._thread.join, 10)  # type: ignore[union-attr]


class EmbedderProxy:
    """The shared embedder seen from another lane: ``embed`` runs on the embed lane's loop."""

    def __init__(self, inner: Any, lane: Lane) -> None:
        self.inner = inner
        self.lane = lane

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def embed(self, texts: list[str], *, is_query: bool = False):
        fut = asyncio.run_coroutine_threadsafe(self.inner.embed(texts, is_query=is_query), self.lane.loop)  # type: ignore[arg-type]
        return await asyncio.wrap_future(fut)

    async def sentence_vectors(self, pairs: list[tuple[str, str]]) -> dict[tuple[str, str], Any]:
        """The cache's sentence vectors, read on the embed lane's loop (its connection's); none without them."""
        read = getattr(self.inner, "sentence_vectors", None)
        if read is None:
            return {}
        fut = asyncio.run_coroutine_threadsafe(read(list(pairs)), self.lane.loop)
        return await asyncio.wrap_future(fut)

    def embed_ahead(self, texts: list[str], chunk: int, priority: int = SOON) -> asyncio.Task[int] | None:
        """The cache's ``embed_ahead`` run on the embed lane's loop, where its in-flight table and connection
        live (reserved there before any later ``embed`` through this proxy runs); None when it has none."""
        ahead = getattr(self.inner, "embed_ahead", None)
        if ahead is None:
            return None
        return run_on(self.lane.loop, lambda: ahead(texts, chunk, priority))  # type: ignore[arg-type]


class Lanes:
    """Every lane of one API process (see the module docstring)."""

    def __init__(self, settings: Settings, embedder: Any = "settings", clients: Clients | None = None, *,
                 shared: bool = False) -> None:  # fmt: skip
        self.settings = settings
        self.shared = shared  # one of several processes serving this data dir (serve --workers)
        self.leader = not shared  # runs the processor lane (shared: holds the processing lock)
        self._opener: Callable[[], Awaitable[Any]] | None = None
        self._standby: asyncio.Task | None = None
        self._deletions_seen: Any = None
        self.embedder_arg = embedder
        self.injected = clients
        self.readers: list[Lane] = []
        self._next = 0
        self.ingest = Lane("ingest", settings.serve)
        self.processor = Lane("processor")
        self.embed = Lane("embed")
        self.clients: Clients | None = None  # the main bundle (settled settings, the real embedder)
        self.runner: Any = None  # the one EmbeddedRunner (embedded log only), used under work_lock
        self._wake: asyncio.Event | None = None
        self._drain_task: asyncio.Future | None = None
        self.drained = 0  # raw records processed by the background worker since start
        self.gather_s = GATHER_S
        self.last_error: str | None = None

    @property
    def embedded(self) -> bool:
        from streams.log import FileLog

        return isinstance(self.clients.log, FileLog) if self.clients is not None else False

    async def start(self) -> None:
        if self.injected is not None:  # one bundle, inline on the caller's loop (no background worker)
            self.clients = self.injected
            for lane in (self.ingest, self.processor, *self._make_readers(1)):
                lane.clients = self.injected
            await self._init_worker()
            return
        await self.embed.start()
        self.clients = await self.embed.submit(build_clients(self.settings, embedder=self.embedder_arg))
        emb = self.clients.embedder
        if emb is not None:  # load the model now, not on the first user's query or message
            await self.embed.submit(warm_up(emb))
        proxy = EmbedderProxy(emb, self.embed) if emb is not None else None
        settled = self.clients.settings

        def opener():
            return build_clients(settled, embedder=proxy)

        for lane in self._make_readers(settled.serve.readers):
            await lane.start(opener)
        await self._warm_router()
        await self.ingest.start(opener)
        self._opener = opener
        if not self.embedded:
            return
        if not self.shared or try_processing_lock(settled.data_dir, "serve --workers"):
            await self._lead()
        else:
            self.leader = False
            self._standby = asyncio.get_running_loop().create_task(self._stand_by())

    async def _lead(self) -> None:
        """Start the processor lane and its background worker (drains the backlog at once). ``leader`` is set
        last: until the lane is ready, requests here take the path of a process that does not process."""
        await self.processor.start(self._opener)
        await self.processor.submit(self._init_worker())
        self.leader = True
        self._drain_task = asyncio.run_coroutine_threadsafe(self._drain_forever(), self.processor.loop)  # type: ignore[arg-type]

    async def _stand_by(self) -> None:
        while True:
            await asyncio.sleep(TAKEOVER_S)
            if try_processing_lock(self.clients.settings.data_dir, "serve --workers"):  # type: ignore[union-attr]
                log.warning("pid %s took over processing", os.getpid())
                try:
                    await self._lead()
                except Exception:  # holding the lock without processing would stall every process: exit
                    log.exception("taking over processing failed; exiting for a restart (the lock goes too)")
                    os._exit(1)
                return

    async def _warm_router(self) -> None:
        """The router's first question, asked now on a reader lane (an empty chat: nothing is read), not by
        the first user: it loads ~50 modules (~0.1 s). A failure here only costs that user the time."""
        from retrieval.service import warm

        try:
            c = self.readers[0].clients  # not through the lane's queue: start-up is no request's service time
            took = await self.readers[0].submit(warm(c.store, c.embedder, graph=c.graph))
            log.info("router warmed up", extra={"seconds": round(took, 3)})
        except Exception:  # noqa: BLE001 - never stops the server from starting
            log.warning("router warm-up failed", exc_info=True)

    def _make_readers(self, n: int) -> list[Lane]:
        self.readers = [Lane(f"reader-{i}", self.settings.serve) for i in range(max(1, n))]
        return self.readers

    def reader(self) -> Lane:
        """The least busy reader lane."""
        lane = min(self.readers, key=lambda r: r.pending)
        return lane

    # ---- the background worker (runs on the processor lane's loop) --------------------------------

    async def _init_worker(self) -> None:
        from streams.runner import EmbeddedRunner

        clients = self.processor.clients
        self.runner = EmbeddedRunner(clients, clients.settings.pipeline)
        self.work_lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._wake.set()  # drain what a previous process accepted but did not process

    def _across(self) -> Any:
        """One batch or deletion at a time across the processes of ``serve --workers``."""
        return WorkLock(self.settings.data_dir) if self.shared else contextlib.nullcontext()

    async def _refresh_state(self) -> None:
        """Reload the segmenter's state from the log's checkpoint after a deletion (it rewrote the chat's
        pool there; this process's copy in memory would write the deleted messages back)."""
        db = getattr(self.runner.log, "db", None)
        if db is None:
            return
        seen = db.execute("SELECT count(*), max(at) FROM deletion_ledger").fetchone()
        if self._deletions_seen is not None and seen != self._deletions_seen:
            seg = self.runner.segment
            seg.load_state(await self.runner.log.load_state(seg.group))
            clear_text_caches()  # another process deleted: no erased text stays in this one's caches
        self._deletions_seen = seen

    async def _woken(self) -> None:
        """Until there is work: a wake-up from this process (then gather a burst into one batch) or, shared,
        raw records appended by another process (found by polling the backlog)."""
        assert self._wake is not None
        if not self.shared:
            await self._wake.wait()
            await asyncio.sleep(self.gather_s)
            return
        while True:
            try:
                await asyncio.wait_for(self._wake.wait(), POLL_S)
                await asyncio.sleep(self.gather_s)
                return
            except TimeoutError:
                if await _raw_lag(self.processor.clients) > 0:
                    return

    async def _drain_forever(self) -> None:
        while True:
            await self._woken()
            self._wake.clear()  # type: ignore[union-attr]
            try:
                async with self.work_lock, self._across():
                    await self._refresh_state()
                    stats = await self.runner.run_until_idle()
                self.drained += stats.processed.get("segmenter", 0)
                self.last_error = None
            except Exception as exc:  # a backend failure: keep serving, retry on the next wake-up
                log.exception("background processing failed")
                self.last_error = f"{type(exc).__name__}"
                await asyncio.sleep(1.0)
                self._wake.set()  # type: ignore[union-attr]

    async def process_now(self):
        """Process everything pending (call through :meth:`exclusive`, which holds the worker's lock). In a
        process that does not process, :meth:`exclusive` has already waited for the one that does."""
        if not self.leader:
            from streams.runner import RunStats

            return RunStats()
        await self._refresh_state()
        return await self.runner.run_until_idle()

    def wake(self) -> None:
        if self._wake is not None and self.processor.loop is not None:
            self.processor.loop.call_soon_threadsafe(self._wake.set)

    async def exclusive(self, fn: Callable[[Clients], Awaitable[T]]) -> T:
        """Run ``fn`` on the processor lane between batches (deletions)."""
        if self.injected is not None:
            async with self.work_lock:
                return await fn(self.injected)
        if not self.embedded:
            return await self.processor_or_reader(fn)
        if not self.leader:  # another process processes: after it consumed the backlog, between its batches
            await self._caught_up()
            lane = self.reader()

            async def between() -> T:
                async with self._across():
                    return await fn(lane.clients)

            return await lane.submit(between())

        async def locked() -> T:
            async with self.work_lock, self._across():
                return await fn(self.processor.clients)

        return await self.processor.submit(locked())

    async def _caught_up(self) -> None:
        """Wait (at most ``CATCH_UP_S``, then :class:`Busy`) until the processing process has consumed every raw
        record the log holds now."""

        async def ends(c: Clients) -> tuple[int, int]:
            end = await c.log.end_offset(RAW_MESSAGES.name)
            return end, await c.log.committed("segmenter", RAW_MESSAGES.name)

        end, done = await self.ingest.call(ends)
        deadline = time.monotonic() + CATCH_UP_S
        while done < end and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            done = (await self.ingest.call(ends))[1]
        if done < end:  # never claim it was processed when it was not: the client retries
            raise Busy(f"{end - done} earlier messages are still being processed", 5)

    async def processor_or_reader(self, fn: Callable[[Clients], Awaitable[T]]) -> T:
        return await self.reader().call(fn)

    async def append(self, fn: Callable[[Clients], Awaitable[T]]) -> T:
        """``fn`` on the ingest lane, unless more than ``serve.max_backlog`` raw records wait to be processed
        (:class:`Busy`): the check and the append in one turn of the lane, so a write queues there once."""
        limit, embedded = self.settings.serve.max_backlog, self.embedded

        async def checked(c: Clients) -> T:
            if embedded and await _raw_lag(c) > limit:
                raise Busy(f"more than {limit} messages are waiting to be processed", 5)
            return await fn(c)

        return await self.ingest.call(checked)

    async def stop(self) -> None:
        if self.injected is not None:
            return
        if self._standby is not None:
            self._standby.cancel()
        if self._drain_task is not None:
            self._drain_task.cancel()

        async def close(c: Clients) -> None:
            await c.close()

        for lane in (*self.readers, self.ingest, self.processor):
            if lane.loop is not None:
                await lane.stop(close)
        if self.clients is not None:
            await self.embed.submit(self.clients.close())
        await self.embed.stop()
        if self.shared and self.leader:
            release_processing_lock(self.settings.data_dir)


async def _raw_lag(c: Clients) -> int:
    """Raw records not yet consumed by the segmenter."""
    return await c.log.end_offset(RAW_MESSAGES.name) - await c.log.committed("segmenter", RAW_MESSAGES.name)
