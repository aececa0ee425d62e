"""The embedded runner: drives the stages in-process over the durable local log.

Each stage consumes its topic from its committed offset in batches; a batch's produced records, the new
offset and the stage's state are committed in one transaction (see :mod:`streams.log`). Store effects are
idempotent (ids derive from event ids), so a batch that is re-run after a crash changes nothing twice.
Distillation results go through the schedule both runtimes share
(:meth:`streams.stages.Stages.consolidate_results`); the runner's part is :class:`LogJournal`, which
commits each stage's offset with its output.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field

from backends.embed.base import AHEAD, embedding_priority
from streams.clients import Clients
from streams.config import PipelineConfig
from streams.log import EventLog, Produce, Record
from streams.stages import ResultJournal, StageOutput, Stages, build_stages
from streams.stages.io import turn_texts
from streams.topics import DEAD_LETTERS, DERIVED_TOPICS, RAW_MESSAGES

log = logging.getLogger("memstream.runner")

Progress = Callable[[str, int, int], None]
Counted = Callable[[object, StageOutput, int], Awaitable[None]]  # (stage, its output, records it took)


@dataclass
class RunStats:
    processed: dict[str, int] = field(default_factory=dict)
    dead_letters: int = 0
    llm_calls: int = 0
    seconds: float = 0.0
    dead: dict[str, int] = field(default_factory=dict)  # dead letters per stage

    def add(self, stage: str, out: StageOutput) -> None:
        self.processed[stage] = self.processed.get(stage, 0) + out.processed
        self.dead_letters += out.dead
        if out.dead:
            self.dead[stage] = self.dead.get(stage, 0) + out.dead


class EmbeddedRunner:
    PREFETCH_CHUNK = 64  # texts per call when the consolidator's candidates are embedded ahead
    AHEAD_BATCHES = 2  # batches of raw messages queued for the model at once, ahead of the segmenter
    RESULTS_BATCH = 16  # results taken through the graph stage, the consolidator and the indexer at once
    VECTOR_WINDOW = 256  # the same without a graph stage (their items' turn vectors are read and held at once)

    def __init__(self, clients: Clients, cfg: PipelineConfig, *, batch: int = 256) -> None:
        if not isinstance(clients.log, EventLog):
            raise TypeError(f"the embedded runner consumes a local log, not {type(clients.log).__name__}")
        self.clients = clients
        self.log: EventLog = clients.log
        self.batch = batch
        self.stages = build_stages(clients, cfg)
        self.segment = self.stages.segment
        self.distill = self.stages.distill
        self.consolidate = self.stages.consolidate
        self.index = self.stages.index
        self.graph = self.stages.graph
        self.keep_derived = cfg.log_keep_derived
        self._loaded = False
        self._prefetching: set[asyncio.Task] = set()  # the consolidator's texts being embedded ahead
        self._prefetched_to = 0  # in a run: the consolidator's records below this offset were prefetched
        self.totals = RunStats()  # every run of this runner (the server's /metrics)

    async def produce(self, items: Iterable[Produce], counted: Callable[[Produce], bool] | None = None) -> int:
        """Append to the log (idempotent by record id); returns how many records were new (of those
        ``counted`` accepts, when given: the new messages among flush controls and dead letters, say)."""
        chunk: list[Produce] = []
        added = 0

        async def append() -> int:
            if counted is None:
                return await self.log.append(chunk)
            return sum(new and counted(p) for new, p in zip(await self.log.append_each(chunk), chunk, strict=True))

        for item in items:
            chunk.append(item)
            if len(chunk) >= 1000:
                added += await append()
                chunk = []
        if chunk:
            added += await append()
        return added

    async def _load(self) -> None:
        if not self._loaded:
            self.segment.load_state(await self.log.load_state(self.segment.group))
            self._loaded = True

    async def _run_stage(
        self, stage, *, batch: int, limit: int | None, stats: RunStats, progress, then: Callable | None = None,
        process: Callable | None = None,
    ) -> int:
        """Consume up to ``limit`` batches of ``stage`` (by ``process``, else the stage's own), awaiting
        ``then()`` after each; returns records consumed."""
        topic = stage.source.name
        consumed = 0
        rounds = 0
        while limit is None or rounds < limit:
            offset = await self.log.committed(stage.group, topic)
            records = await self.log.read(topic, offset, batch)
            if not records:
                break
            out = await (process or stage.process)(records)
            state = stage.dump_state() if hasattr(stage, "dump_state") else None
            await self.log.commit(stage.group, {topic: records[-1].offset + 1}, out.produced, state)
            await self._counted(stage, stats, progress, out, len(records))
            consumed += len(records)
            rounds += 1
            if then is not None:
                await then()
            await asyncio.sleep(0)  # let the embed-ahead task hand the model its next texts
        return consumed

    async def _counted(self, stage, stats: RunStats, progress: Progress | None, out: StageOutput, n: int) -> None:
        """``stage`` took ``n`` records and gave ``out``: the run's stats, the runner's and the progress (none
        when ``n`` is 0)."""
        stats.add(stage.group, out)
        self.totals.add(stage.group, out)
        if progress is not None and n:
            progress(stage.group, n, await self._lag(stage))

    async def _embed_ahead(self) -> None:
        """In the background of a run: embed raw messages ahead of the segmenter, so the model (in its
        threads) works while the stages' Python runs. :attr:`AHEAD_BATCHES` batches are queued at once: with
        one, the next batch went to the model only when this loop came back to this task, after the
        segmenter's Python that had waited for the batch before, and the two took turns. Only the embedder's cache is filled; a stage asking for a text being embedded
        here waits for it (:class:`backends.embed.embedder.CachedEmbedder`). The
        consolidator's candidates are not embedded here but by its own prefetch, right after the distiller
        in each round (:meth:`_prefetch`): taken here as they came, which texts shared a forward would vary
        from run to run, and with them batched int8 vectors (``embed_solo`` off)."""
        emb = self.clients.embedder
        raw = 0
        queued: list[asyncio.Future] = []  # batches handed to the model, oldest first
        try:
            with embedding_priority(AHEAD):  # the stages' own calls go first (between this work's forwards)
                while True:
                    while len(queued) >= self.AHEAD_BATCHES or (queued and queued[0].done()):
                        await queued.pop(0)
                    raw = max(raw, await self.log.committed(self.segment.group, RAW_MESSAGES.name))
                    records = await self.log.read(RAW_MESSAGES.name, raw, self.batch)
                    if records:
                        raw = records[-1].offset + 1
                        texts = turn_texts(records, await self.clients.log.deletions(), self.segment.sensitive)
                        queued.append(asyncio.ensure_future(emb.embed(texts)))
                        await asyncio.sleep(0)  # the call reserves its texts and queues its forwards now
                        continue
                    await asyncio.sleep(0.02)  # nothing new yet
        finally:
            for call in queued:
                call.cancel()

    async def _prefetch(self, stage, window: int = 256) -> None:
        """Let ``stage`` prefetch its records not prefetched yet (up to ``window``): their texts embedded in
        the background in calls of :attr:`PREFETCH_CHUNK`, all reserved at once (the stage waits for the call
        holding a text; which texts share a call does not depend on timing), or in one awaited call when
        the embedder cannot."""
        if self.clients.embedder is None:
            return
        topic = stage.source.name
        offset = max(self._prefetched_to, await self.log.committed(stage.group, topic))
        records = await self.log.read(topic, offset, window)
        if not records:
            return
        self._prefetched_to = records[-1].offset + 1
        task = stage.prefetch_ahead(records, self.PREFETCH_CHUNK, self.stages.graph_texts(records))
        if task is None:
            await stage.prefetch(records)
            return
        self._prefetching.add(task)
        task.add_done_callback(self._prefetched)

    def _prefetched(self, task: asyncio.Task) -> None:
        self._prefetching.discard(task)
        if not task.cancelled() and task.exception() is not None:  # the stage embeds its texts itself
            log.warning("embedding ahead failed", exc_info=task.exception())

    async def _stop_prefetching(self, *others: asyncio.Task | None) -> None:
        """Cancel the prefetching (and ``others``), all before awaiting any; then await their end."""
        tasks = [*self._prefetching, *(t for t in others if t is not None)]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        self._prefetched_to = 0  # every run ends here: the next asks again from the offsets (a replay's too)

    async def _lag(self, stage) -> int:
        topic = stage.source.name
        return await self.log.end_offset(topic) - await self.log.committed(stage.group, topic)

    async def lag(self) -> dict[str, int]:
        return {s.group: await self._lag(s) for s in self.stages.all()}

    async def run_until_idle(self, progress: Progress | None = None) -> RunStats:
        """Process every topic until no stage has anything left to consume."""
        await self._load()
        stats = RunStats()
        start = time.perf_counter()
        ahead = asyncio.create_task(self._embed_ahead()) if self.clients.embedder is not None else None
        try:
            await self._run_all(stats, progress)
            await self.prune_consumed()
        finally:
            await self._stop_prefetching(ahead)
        stats.seconds = time.perf_counter() - start
        stats.llm_calls = self.distill.llm_calls + self.consolidate.llm_calls
        return stats

    async def _run_all(self, stats: RunStats, progress: Progress | None) -> None:
        """Round after round: the indexer, one batch of messages through the segmenter, then everything
        its closed topics produce through the later stages. A backlog flows down in waves of one batch, so the
        model (in its own threads) embeds the next batches ahead while the distiller, consolidator and indexer
        run, and their calls (the facts) go first (run stage by stage over the whole backlog, their Python
        would run after the model was done, the model idle meanwhile)."""
        while True:
            moved = await self._run_stage(self.index, batch=self.batch, limit=None, stats=stats, progress=progress,
                                          process=self.stages.index_decisions)  # fmt: skip
            moved += await self._run_stage(  # one batch, then its topics down the pipeline (below)
                self.segment, batch=self.batch, limit=1, stats=stats, progress=progress
            )
            # each distiller batch's results go to the model at once, in the background (_prefetch): the
            # distiller's next batch, the graph stage and each decision run while it embeds their texts
            moved += await self._run_stage(self.distill, batch=16, limit=None, stats=stats, progress=progress,
                                           then=lambda: self._prefetch(self.consolidate))  # fmt: skip
            moved += await self._consolidate(stats, progress)
            if not moved:
                break

    async def _consolidate(self, stats: RunStats, progress: Progress | None) -> int:
        """The distiller's results through the shared schedule, :attr:`RESULTS_BATCH` at a time, each batch's
        decisions then read off their topic by the indexer (which skips those the schedule applied). A
        batch at a time, not the graph stage over the whole round first: the consolidator's Python then runs
        while the model embeds the next batch's texts, instead of after the model was done."""
        moved = 0
        size = self.RESULTS_BATCH if self.graph is not None else self.VECTOR_WINDOW

        async def counted(stage, out: StageOutput, n: int) -> None:
            await self._counted(stage, stats, progress, out, n)

        while True:
            journal = LogJournal(self.log, self.stages, lambda: self._prefetch(self.consolidate), counted)
            records = await self.log.read(self.consolidate.source.name, await journal.read_offsets(), size)
            if not records:
                return moved
            done = await self.stages.consolidate_results(records, journal)
            await journal.finish(records[-1].offset + 1)
            await self._counted(self.index, stats, progress, done.index, 0)  # its records: counted as read below
            moved += len(records)
            moved += await self._run_stage(self.index, batch=self.batch, limit=None, stats=stats, progress=progress,
                                           process=self.stages.index_decisions)  # fmt: skip

    async def prune_consumed(self) -> int:
        """Of each derived topic, drop the records every stage reading it has committed past, all but the
        newest ``log_keep_derived`` (a topic no stage reads here, the topic events for outside readers, counts
        as read). Replay makes them again from the raw messages; kept for ever they were most of a long
        chat's log (a decision carries its whole record)."""
        dropped = 0
        for spec in DERIVED_TOPICS:
            end = await self.log.end_offset(spec.name)
            groups = [s.group for s in self.stages.all() if s.source.name == spec.name]
            read = min([await self.log.committed(g, spec.name) for g in groups], default=end)
            dropped += await self.log.prune(spec.name, min(read, end - self.keep_derived))
        return dropped

    async def reset_for_replay(self) -> None:
        """Forget every derived record, offset and state (raw messages and dead letters stay)."""
        await self.log.reset_derived([t.name for t in DERIVED_TOPICS])
        self.segment.load_state(None)
        self.stages.applied.clear()
        self._loaded = True

    async def dead_letters(self, limit: int = 100) -> list[str]:
        return [r.value for r in await self.log.read(DEAD_LETTERS.name, 0, limit)]

    async def raw_count(self) -> int:
        return await self.log.end_offset(RAW_MESSAGES.name)


class LogJournal(ResultJournal):
    """The embedded runner's way through a batch of results: the graph stage's and the consolidator's
    offsets, each committed in the local log with that stage's output, so a result's decisions are in the
    log before they are applied (the indexer applies any a failed run left unapplied). A stage behind the
    other reads on from its own offset: no result is graphed twice, nor decided twice."""

    def __init__(self, log: EventLog, stages: Stages, ahead: Callable[[], Awaitable[None]], counted: Counted) -> None:
        self.log = log
        self.stages = stages
        self.ahead = ahead  # the runner's embedding ahead, from the log
        self.counted = counted  # a stage's output and records taken, for the run's stats and progress
        self.topic = stages.consolidate.source.name
        self.graph_from = self.decided_to = 0

    async def read_offsets(self) -> int:
        """Where the batch starts: the first result either stage has still to take."""
        self.decided_to = await self.log.committed(self.stages.consolidate.group, self.topic)
        graph = self.stages.graph
        self.graph_from = await self.log.committed(graph.group, self.topic) if graph is not None else self.decided_to
        return min(self.graph_from, self.decided_to)

    async def embed_ahead(self, records: list[Record]) -> None:
        await self.ahead()

    def to_graph(self, records: list[Record]) -> list[Record]:
        return [r for r in records if r.offset >= self.graph_from]

    async def graphed(self, records: list[Record], out: StageOutput) -> None:
        await self._commit(self.stages.graph, records[-1].offset + 1, out, len(records))

    async def recall(self, record: Record) -> list[Produce] | None:
        return [] if record.offset < self.decided_to else None  # its decisions are in the log already

    async def keep(self, record: Record, out: StageOutput) -> None:
        await self._commit(self.stages.consolidate, record.offset + 1, out, 1)

    async def finish(self, end: int) -> None:
        """Both stages past the batch (its last results may be a deleted chat's, which neither took)."""
        for stage in (self.stages.graph, self.stages.consolidate):
            if stage is not None and await self.log.committed(stage.group, self.topic) < end:
                await self.log.commit(stage.group, {self.topic: end}, [])

    async def _commit(self, stage, offset: int, out: StageOutput, n: int) -> None:
        await self.log.commit(stage.group, {self.topic: offset}, out.produced)
        await self.counted(stage, out, n)
