"""The worker side of the stages, free of Faust: state around each batch, effects before acks.

At-least-once with idempotent effects: a batch's output is sent and acked by the broker before the batch's
events are acked, so a crash redelivers it. Redelivery changes nothing twice: output ids derive from input
ids and the store de-duplicates, segmenter pools are fenced by offset in working memory, and consolidation
decisions are journalled there so a redelivered result repeats its decisions instead of deciding again.

A batch of distillation results goes through the schedule both runtimes share
(:meth:`streams.stages.Stages.consolidate_results`: the graph stage, then each result decided and applied
before the next); the worker's part is its journal (:class:`WorkingMemoryJournal`), and it sends every
decision it applied, for the index agent of a worker that did not decide them.

All stages of a worker share one model, which embeds a call at a time from its own queue. The worker embeds
ahead: a segmenter batch runs in parts, all its parts' turns queued for the model when the batch starts,
and the consolidator's candidates are embedded as soon as the distiller made the results. These bulk calls
go in chunks after every other call (:mod:`streams.worker_embed`), so the graph stage and the consolidator,
the pipeline's tail, do not wait behind a segmenter batch. Only when and in which calls texts are embedded
changes, and MiniLM int8 embeds one text per forward (``embed_solo``), so a vector, and the memory built on
it, does not depend on that.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from agents.segmenter import ChatPool
from language.text import clear_text_caches
from streams.clients import Clients
from streams.config import PipelineConfig
from streams.log import Produce, Record
from streams.stages import ResultJournal, StageOutput, build_stages
from streams.stages.io import turn_texts
from streams.topics import DISTILL_RESULTS
from streams.worker_embed import PriorityEmbedder, bulk
from streams.working_memory import WorkingMemory

__all__ = ["Pipeline", "Send", "WorkerConfig", "WorkingMemoryJournal"]

log = logging.getLogger("memstream.faust")

Send = Callable[[list[Produce]], Awaitable[None]]


@dataclass(frozen=True)
class WorkerConfig:
    app_id: str = "memstream"  # the consumer group of every agent
    batch: int = 256
    segment_part: int = 64  # a segmenter batch runs in parts; all their turns are queued for the model at once
    within_s: float = 0.5
    distill_batch: int = 16
    consolidate_batch: int = 16
    index_agent: bool = True
    kept_pools: int = 256  # segmenter pools kept parsed between batches (WrittenPools)
    exact_offsets: bool = False  # one record per produce batch (Tansu under-reports end offsets otherwise)
    session_timeout_s: float = 10.0
    commit_interval_s: float = 1.0
    fetch_wait_ms: int = 100  # the longest a broker may hold an empty fetch (Faust's own: 1,500)
    pool_ttl_s: float | None = 30 * 86400.0
    window_ttl_s: float | None = 86400.0
    journal_ttl_s: float | None = 7 * 86400.0
    ledger_refresh_s: float = 2.0
    heartbeat_path: Path | None = None


def _peek_chat(record: Record) -> str | None:
    """The chat a raw record belongs to, for loading its state (validation happens in the stage)."""
    try:
        obj = json.loads(record.value)
    except ValueError:
        return None
    chat = obj.get("chat_id") if isinstance(obj, dict) else None
    return chat if isinstance(chat, str) and chat else None


class WrittenPools:
    """The segmenter pools this worker stored last, each with the JSON it stored. A batch whose chat's stored
    pool is still that JSON takes the pool itself instead of parsing it again (~0.3 ms a pool of ~40 KB, and
    its cached matrices are rebuilt after a parse): the segmenter never mutates a pool it was given, as the
    embedded runner, which keeps its pools, relies on too. A pool stored by anyone else (another worker, an
    erasure) differs from the kept JSON and is parsed as stored. The ``size`` chats stored most recently."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._pools: OrderedDict[str, tuple[str, ChatPool]] = OrderedDict()

    def load(self, chat: str, raw: str) -> ChatPool:
        kept = self._pools.get(chat)
        if kept is not None and kept[0] == raw:
            return kept[1]
        return ChatPool.model_validate_json(raw)

    def wrote(self, chat: str, raw: str, pool: ChatPool) -> None:
        if self.size <= 0:
            return
        self._pools[chat] = (raw, pool)
        self._pools.move_to_end(chat)
        while len(self._pools) > self.size:
            self._pools.popitem(last=False)

    def forget(self, chat: str) -> None:
        self._pools.pop(chat, None)

    def clear(self) -> None:
        self._pools.clear()

    def __len__(self) -> int:
        return len(self._pools)


class Pipeline:
    """The worker side of the stages: state around each batch, effects before acks. Free of Faust."""

    def __init__(
        self, clients: Clients, wm: WorkingMemory, cfg: WorkerConfig, pipeline: PipelineConfig
    ) -> None:
        self.clients = clients
        self.wm = wm
        self.cfg = cfg
        self.pipeline_cfg = pipeline
        if clients.embedder is not None:  # the stages near the pipeline's end embed first (worker_embed)
            clients = replace(clients, embedder=PriorityEmbedder(clients.embedder))
        self.stages = build_stages(clients, pipeline)
        self.segment = self.stages.segment
        self.distill = self.stages.distill
        self.consolidate = self.stages.consolidate
        self.index = self.stages.index
        self.graph = self.stages.graph
        self._ahead: set[asyncio.Task] = set()  # texts being embedded ahead of the stage that needs them
        self._deleted: set[tuple[str, str]] | None = None  # the deletion ledger as last read
        self._written = WrittenPools(cfg.kept_pools)  # the pools this worker stored last, kept parsed

    async def deletions(self) -> set[tuple[str, str]]:
        """The deletion ledger; when it grew, the text caches are emptied (no erased text stays in memory),
        and the vectors of a deletion's texts leave this worker's embedding cache (the deleting process
        sends their cache keys: it knows the texts, this worker may have embedded them)."""
        deleted = await self.clients.log.deletions()
        take = getattr(self.clients.log, "take_forgotten", None)
        keys = take() if take is not None else []
        if keys and hasattr(self.clients.embedder, "forget_keys"):
            gone = self.clients.embedder.forget_keys(keys)  # on the loop: the cache's connection is used here
            log.info("deleted texts' vectors forgotten", extra={"keys": len(keys), "vectors": gone})
        if deleted != self._deleted:
            if self._deleted is not None:
                clear_text_caches()
                self._written.clear()
            self._deleted = set(deleted)
        return deleted

    async def segment_batch(self, records: list[Record], send: Send) -> StageOutput:
        """Load the batch's chats' pools, run the segmenter, send, then save the pools (fenced by offset)."""
        await self.deletions()  # the ledger, for what is embedded ahead of the segmenter too
        last: dict[str, int] = {}
        for r in records:
            for chat in {r.key, _peek_chat(r)} - {None, "-"}:
                last[chat] = max(last.get(chat, -1), r.offset)
        pools = {}
        for chat in last:
            raw = await self.wm.get_pool(chat)
            if raw:
                pools[chat] = self._written.load(chat, raw)
        self.segment.use_pools(pools)
        try:
            out = await self._segment(records)
            await send(out.produced)
        except BaseException:  # retried from the stored pools: none kept parsed (whatever the failure left)
            self._written.clear()
            raise
        for chat, raw in self.segment.dump_state().items():  # only the pools this batch changed
            version = last.get(chat)
            if raw is None:
                continue
            if await self.wm.put_pool(chat, raw, self.cfg.pool_ttl_s, version=version):
                self._written.wrote(chat, raw, self.segment.pool(chat))
            else:
                # a redelivered batch (or a worker that lost the partition): the stored pool is newer
                self._written.forget(chat)
                log.info("newer segmenter pool kept", extra={"chat_id": chat, "version": version})
        for chat, active in self.segment.active_topics().items():
            await self._save_windows(chat, active)
        return out

    def _parts(self, records: list[Record]) -> list[list[Record]]:
        with_model = self.stages.segment.clients.embedder is not None  # else nothing to embed ahead
        size = max(1, self.cfg.segment_part if with_model else len(records))
        return [records[i : i + size] for i in range(0, len(records), size)]

    def embed_ahead(self, records: list[Record]) -> None:
        """Queue the turns of a raw batch that waits behind the current one for the model, part by part as
        :meth:`segment_batch` will ask for them (the same calls: the same vectors), screened as it will
        screen them; it then finds them embedded or being embedded."""
        if self.clients.embedder is None:
            return
        parts = self._parts(records)
        if len(parts) > 1:  # one part: the segmenter's own call embeds it
            for part in parts:
                self._embed_turns(part)

    async def _segment(self, records: list[Record]) -> StageOutput:
        """The segmenter over the batch in parts (the same output: its pools carry over). Every part's turns
        are queued for the model at once, in order, as bulk work (:mod:`streams.worker_embed`): the model goes
        through them while the parts before run their Python and the later stages' calls go first."""
        parts = self._parts(records)
        out = StageOutput()
        ahead = [self._embed_turns(part) for part in parts] if len(parts) > 1 else []
        try:
            for k, part in enumerate(parts):
                if ahead and ahead[k] is not None:  # failed: the segmenter embeds what is missing itself
                    await asyncio.gather(ahead[k], return_exceptions=True)
                sub = await bulk(lambda part=part: self.segment.process(part))
                out.produced += sub.produced
                out.dead += sub.dead
                out.processed += sub.processed
                for name, value in sub.metrics.items():
                    out.metrics[name] = out.metrics.get(name, 0.0) + value
        finally:
            for task in ahead:
                if task is not None and not task.done():
                    task.cancel()
        return out

    def _embed_turns(self, records: list[Record]) -> asyncio.Task | None:
        """The turns of ``records`` embedded in the background (bulk: after every other stage's call)."""
        embedder = self.stages.segment.clients.embedder
        if embedder is None:
            return None
        texts = turn_texts(records, self._deleted or set(), self.segment.sensitive)  # the ledger as last read
        return self._background(bulk(lambda: embedder.embed(texts)))

    def _background(self, work: Coroutine[Any, Any, Any]) -> asyncio.Task:
        """A task that only fills the embedder's cache: cancelled at shutdown, a failure only logged."""
        task = asyncio.create_task(work)
        self._ahead.add(task)
        task.add_done_callback(self._done_ahead)
        return task

    async def _save_windows(self, chat: str, active: dict[str, list[str]]) -> None:
        for topic_id in set(await self.wm.topic_windows(chat)) - set(active):
            await self.wm.drop_topic_window(chat, topic_id)
        for topic_id, ids in active.items():
            await self.wm.put_topic_window(chat, topic_id, ids, self.cfg.window_ttl_s)

    async def distill_batch(self, records: list[Record], send: Send) -> StageOutput:
        await self.deletions()  # a new deletion empties the caches first (the stage reads the ledger itself)
        out = await self.distill.process(records)
        await send(out.produced)
        self._prefetch_ahead([p for p in out.produced if p.topic == DISTILL_RESULTS.name])
        return out

    def _prefetch_ahead(self, results: list[Produce]) -> None:
        """Embed the consolidator's candidates of these results in the background as soon as the distiller
        made them: the consolidator then finds them embedded or being embedded instead of waiting for the
        model between its batches (when this worker also consumes their partition of the results topic;
        elsewhere the vectors are only cached). Only the cache is filled."""
        if not results or self.clients.embedder is None:
            return
        ahead = [Record(p.topic, -1, p.key, p.record_id, p.value) for p in results]
        self._background(bulk(lambda: self.consolidate.prefetch(ahead, self.stages.graph_texts(ahead))))

    async def stop_ahead(self) -> None:
        """Cancel the background embedding (before the clients close)."""
        for task in list(self._ahead):
            task.cancel()
        await asyncio.gather(*self._ahead, return_exceptions=True)

    def _done_ahead(self, task: asyncio.Task) -> None:
        self._ahead.discard(task)
        if not task.cancelled() and task.exception() is not None:  # the stage embeds them itself
            log.warning("embedding ahead failed", exc_info=task.exception())

    async def consolidate_batch(self, records: list[Record], send: Send) -> StageOutput:
        """The shared schedule over a batch of results with this worker's journal; then everything it
        emitted, the decisions it applied included, is sent."""
        await self.deletions()  # a new deletion empties the caches first (the schedule reads the ledger itself)
        done = await self.stages.consolidate_results(records, WorkingMemoryJournal(self))
        total = StageOutput(produced=done.consolidate.produced + done.index.produced,
                            dead=done.graph.dead + done.consolidate.dead,
                            processed=done.consolidate.processed)  # fmt: skip
        await send(total.produced)
        return total

    async def index_batch(self, records: list[Record], send: Send) -> StageOutput:
        """Decisions from the topic; the ones this worker's consolidator applied itself are skipped."""
        await self.deletions()  # a new deletion empties the caches first (the stage reads the ledger itself)
        out = await self.stages.index_decisions(records)
        await send(out.produced)
        return out


class WorkingMemoryJournal(ResultJournal):
    """The worker's way through a batch of results: a result's decisions are journalled in working memory
    before they are applied, and a redelivered result repeats them (deciding it again would meet a store
    that already holds them); the batch's texts are embedded in one call before the graph stage reads them.
    Every result is graphed again on redelivery (the graph stage is idempotent by result id)."""

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline

    async def embed_ahead(self, records: list[Record]) -> None:
        p = self.pipeline
        await p.consolidate.prefetch(records, p.stages.graph_texts(records))

    async def recall(self, record: Record) -> list[Produce] | None:
        journalled = await self.pipeline.wm.get_journal(record.key, f"consolidate:{record.record_id}")
        return None if journalled is None else [Produce(**p) for p in json.loads(journalled)]

    async def keep(self, record: Record, out: StageOutput) -> None:
        payload = json.dumps([asdict(p) for p in out.produced])
        entry = f"consolidate:{record.record_id}"
        await self.pipeline.wm.put_journal(record.key, entry, payload, self.pipeline.cfg.journal_ttl_s)
