"""Kafka deletion and blue/green replay.

- ``delete_data`` records a deletion in the compacted ``memstream.deletion-ledger`` topic, then deletes it and
  everything derived (store, graph memory, working memory, embedding cache; :mod:`memstream.deletion`) and
  tombstones the raw records on a compacted raw topic (:mod:`memstream.kafka_delete`).
- ``replay`` rebuilds memory from offset 0 of the raw topic into a FRESH store with the same stage code
  (the embedded runner over a throw-away local log), honouring the ledger, then hands the segmenter pools to
  working memory, moves the worker group past what it rebuilt, and switches the store (blue/green). Run it
  with the workers stopped (it refuses while the group is active; ``force`` skips that check, needed on
  Tansu, which keeps stopped members in the group); it is idempotent: an interrupted replay is run again.
  Blue/green exists for SQLite stores only; an Elasticsearch store is refused with the way out (there is
  no index-and-alias switch yet).
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol
from urllib.parse import urlparse

from memstream.clients import (
    Clients,
    UnsupportedBackend,
    open_embedder,
    open_graph,
    open_llm,
    open_store,
    open_working_memory,
    sqlite_path,
)
from memstream.kafka_admin import (
    CONSUMED_TOPICS,
    DEFAULT_GROUP,
    end_offsets,
    ensure_group_inactive,
    move_group_offsets,
    read_ledger,
    read_topic,
)
from memstream.settings import Settings
from retrieval.protocols import Embedder, MemoryStore
from streams.kafka_log import brokers_of
from streams.log import FileLog, Produce
from streams.runner import EmbeddedRunner, Progress, RunStats
from streams.topics import RAW_MESSAGES
from streams.worker import WorkerConfig

__all__ = ["BlueGreen", "ReplayReport", "SQLiteBlueGreen", "blue_green_for", "delete_data", "replay"]

log = logging.getLogger("memstream.kafka_tools")

Chosen = Embedder | None | str  # "settings": the settings' embedder


async def delete_data(
    settings: Settings,
    chat_id: str,
    user: str | None = None,
    *,
    embedder: Chosen = "settings",
    on_step: Callable[[str], object] | None = None,
) -> int:
    """Ledger first (so replay and the workers honour it), then everything derived in the store, the graph
    memory, working memory (pool, windows, journal) and the local embedding cache, topics distilled again
    without them (:mod:`memstream.deletion`), then tombstones for their raw records
    (:mod:`memstream.kafka_delete`). Returns the messages and docs removed from the store. A run killed
    midway is finished by running it again: the ledger topic keeps which topics it distils again.
    ``on_step``: as :func:`memstream.deletion.delete_data`'s."""
    from memstream.deletion import delete_data as delete_everywhere
    from memstream.kafka_delete import LedgerLog, raw_tombstones

    brokers = brokers_of(settings.resolved_log_url)
    emb = open_embedder(settings) if isinstance(embedder, str) else embedder
    dim = emb.dim if emb is not None else None
    store = await open_store(settings, dim)
    # the workers' graph memory (graph.db in the data dir) holds the user's statements and evidence too
    clients = Clients(settings=settings, log=LedgerLog(brokers), store=store, embedder=emb,
                      graph=await open_graph(settings, dim), llm=open_llm(settings))  # fmt: skip
    wm = await open_working_memory(settings.working_memory_url)
    try:
        report = await delete_everywhere(clients, chat_id, user, wm=wm, on_step=on_step)
        written = await asyncio.to_thread(raw_tombstones, brokers, chat_id, user)
        log.info("raw tombstones written", extra={"chat_id": chat_id, "records": written})
        return report.removed
    finally:
        await wm.close()
        await clients.close()


# ---- blue/green replay ----------------------------------------------------------------------------------


class BlueGreen(Protocol):
    """A store rebuilt beside the live one, then made live in one step."""

    async def fresh(self, dim: int | None) -> MemoryStore:
        """An empty, bootstrapped store at a new location (the live one is untouched)."""
        ...

    async def switch(self) -> str:
        """Make the fresh store the live one (closing it first); returns where it now lives."""
        ...

    async def abandon(self) -> None: ...


class SQLiteBlueGreen:
    """Build into ``PATH.next``, then ``os.replace`` it over ``PATH`` (atomic on one file system).

    Processes holding the old file keep reading it until they reopen: run with workers and API stopped.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.next_path = self.path.with_name(self.path.name + ".next")
        self.store: MemoryStore | None = None

    def _unlink(self, base: Path) -> None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{base}{suffix}").unlink(missing_ok=True)

    async def fresh(self, dim: int | None) -> MemoryStore:
        from backends.sqlite.store import SQLiteStore

        self._unlink(self.next_path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.store = SQLiteStore(self.next_path, dim)
        await self.store.bootstrap()
        return self.store

    async def switch(self) -> str:
        if self.store is not None:
            await self.store.close()  # checkpoints and removes the new file's WAL
            self.store = None
        for suffix in ("-wal", "-shm", "-journal"):  # the old file's side files must not outlive it
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        os.replace(self.next_path, self.path)
        return str(self.path)

    async def abandon(self) -> None:
        if self.store is not None:
            await self.store.close()
            self.store = None
        self._unlink(self.next_path)


def blue_green_for(settings: Settings) -> BlueGreen:
    url = settings.resolved_store_url
    scheme = urlparse(url).scheme
    if scheme == "sqlite":
        return SQLiteBlueGreen(sqlite_path(url))
    # Elasticsearch has no blue/green switch yet (a new index and an alias move): say so, with the way out
    raise UnsupportedBackend(
        f"no blue/green replay for store scheme {scheme!r} (only sqlite): replay into a sqlite store "
        "(MEMSTREAM_STORE_URL=sqlite:///PATH), or delete and re-ingest the chats"
    )


@dataclass
class ReplayReport:
    raw_records: int = 0
    chats: int = 0
    deletions: set[tuple[str, str]] = field(default_factory=set)
    stats: RunStats | None = None
    store: str = ""
    offsets_moved: int = 0
    seconds: float = 0.0


async def replay(
    settings: Settings,
    *,
    group: str = DEFAULT_GROUP,
    embedder: Chosen = "settings",
    blue_green: BlueGreen | None = None,
    force: bool = False,
    inactive_wait_s: float = 15.0,
    pool_ttl_s: float | None = WorkerConfig.pool_ttl_s,
    progress: Progress | None = None,
) -> ReplayReport:
    """Rebuild memory from offset 0 of the raw topic into a fresh store, honouring the deletion ledger."""
    start = time.perf_counter()
    brokers = brokers_of(settings.resolved_log_url)
    if not force:
        await asyncio.to_thread(ensure_group_inactive, brokers, group, inactive_wait_s)
    raw_ends = await asyncio.to_thread(end_offsets, brokers, [RAW_MESSAGES.name])
    deleted = await asyncio.to_thread(read_ledger, brokers)
    raw = await asyncio.to_thread(read_topic, brokers, RAW_MESSAGES.name, raw_ends)
    report = ReplayReport(raw_records=len(raw), deletions=deleted)

    emb = open_embedder(settings) if isinstance(embedder, str) else embedder
    bg = blue_green or blue_green_for(settings)
    store = await bg.fresh(emb.dim if emb is not None else None)
    try:
        with tempfile.TemporaryDirectory(prefix="memstream-replay-") as tmp:
            local_log = await FileLog(Path(tmp) / "log.db").open()
            try:
                clients = Clients(
                    settings=settings, log=local_log, store=store, embedder=emb, llm=open_llm(settings)
                )
                for chat_id, sender in sorted(deleted):
                    await local_log.record_deletion(chat_id, sender, "replay")
                runner = EmbeddedRunner(clients, clients.settings.pipeline)
                await runner.produce(Produce(r.topic, r.key, r.record_id, r.value) for r in raw)
                report.stats = await runner.run_until_idle(progress)
                pools = dict(runner.segment.pools)
            finally:
                await local_log.close()
    except BaseException:
        await bg.abandon()
        raise

    wm = await open_working_memory(settings.working_memory_url)
    try:  # the replayed pools become the live ones (unversioned writes: replay is authoritative)
        chats = {r.key for r in raw} | set(pools) | {c for c, _ in deleted}
        report.chats = len(pools)
        for chat in sorted(chats - {"-"}):
            await wm.forget_chat(chat)
        for chat, pool in pools.items():
            if (chat, "*") not in deleted:
                await wm.put_pool(chat, pool.model_dump_json(), pool_ttl_s)
    finally:
        await wm.close()
    derived_ends = await asyncio.to_thread(end_offsets, brokers, CONSUMED_TOPICS[1:])
    try:  # the workers resume after what was rebuilt (nothing to move if they had drained)
        report.offsets_moved = await asyncio.to_thread(
            move_group_offsets, brokers, group, {**raw_ends, **derived_ends}
        )
    except RuntimeError:
        if not force:
            await bg.abandon()
            raise
        log.warning("consumer group offsets not moved: the workers will re-read their backlog (idempotent)")
    report.store = await bg.switch()
    report.seconds = time.perf_counter() - start
    return report
