"""The pipeline: its stages, built in one place, and the one schedule both runtimes take results through.

:func:`build_stages` is the only place stages are built, so a stage added there runs in both runtimes (the
embedded runner and the Faust worker). :meth:`Stages.consolidate_results` is the only definition of how a
batch of distillation results goes through the graph stage, the consolidator and the indexer:

1. the results of a chat in the deletion ledger are dropped (nothing to embed or read for them);
2. the runtime embeds ahead what the graph stage and the consolidator will ask for;
3. the graph stage reads the results it has not read (one read again after a crash changes nothing: the
   stage is idempotent by result id);
4. one result at a time: its decisions are made, or recalled from the runtime's journal when it was decided
   before (a deletion since then still applies), and kept by the runtime; then they are applied to the store
   before the next result is decided, so every decision sees the ones before it.

What a runtime does its own way is a :class:`ResultJournal`: how it embeds ahead, where it keeps its progress
(the embedded runner: each stage's offset committed in the local log with the stage's output; the Kafka
worker: decisions journalled in working memory, the batch acked after its output was sent), and what it
emits.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from schemas import DistillResult, MemoryDecision
from streams.clients import Clients
from streams.codec import DecodeError, decode
from streams.config import PipelineConfig
from streams.log import Produce, Record
from streams.stages.consolidate import ConsolidateStage
from streams.stages.distill import DistillStage
from streams.stages.graph import GraphStage
from streams.stages.index import IndexStage
from streams.stages.io import StageOutput, is_deleted, kept_decisions
from streams.stages.segment import SegmentStage
from streams.stages.vectors import shared_turn_vectors
from streams.topics import DISTILL_RESULTS, MEMORY_DECISIONS

__all__ = ["Consolidated", "ResultJournal", "Stages", "build_stages"]

APPLIED_KEPT = 100_000  # how many of the decisions the schedule applied are remembered for the indexer to skip


class ResultJournal:
    """What a runtime does its own way as :meth:`Stages.consolidate_results` takes a batch of results
    through. The defaults embed nothing ahead and keep nothing: every result is read and decided."""

    async def embed_ahead(self, records: list[Record]) -> None:
        """Before the graph stage reads ``records``: have what it and the consolidator will embed for them
        embedded, or being embedded."""

    def to_graph(self, records: list[Record]) -> list[Record]:
        """Of ``records``, those the graph stage has not read."""
        return records

    async def graphed(self, records: list[Record], out: StageOutput) -> None:
        """The graph stage read ``records`` (not called when it read none)."""

    async def recall(self, record: Record) -> list[Produce] | None:
        """The output kept when ``record`` was decided before; None: it is decided now."""
        return None

    async def keep(self, record: Record, out: StageOutput) -> None:
        """``record`` was decided: keep its output, before its decisions are applied."""


@dataclass
class Consolidated:
    """What a batch of results gave, stage by stage."""

    graph: StageOutput = field(default_factory=StageOutput)
    consolidate: StageOutput = field(default_factory=StageOutput)  # each result's output, decided or recalled
    index: StageOutput = field(default_factory=StageOutput)  # applying its decisions


@dataclass
class Stages:
    segment: SegmentStage
    distill: DistillStage
    consolidate: ConsolidateStage
    index: IndexStage
    graph: GraphStage | None  # when the clients have a graph store
    applied: dict[str, None] = field(default_factory=dict, repr=False)  # decision ids the schedule applied

    def all(self) -> list[SegmentStage | DistillStage | ConsolidateStage | IndexStage | GraphStage]:
        """Every stage, in pipeline order."""
        return [
            self.segment,
            self.distill,
            *([self.graph] if self.graph else []),
            self.consolidate,
            self.index,
        ]

    def graph_texts(self, records: list[Record]) -> list[str]:
        """What the graph stage will embed for these results (it reads them before the consolidator)."""
        return self.graph.prefetch_texts(records) if self.graph is not None else []

    async def consolidate_results(self, records: list[Record], journal: ResultJournal) -> Consolidated:
        """A batch of distillation results through the graph stage, the consolidator and the indexer (the
        schedule of the module docstring)."""
        done = Consolidated()
        deleted = await self.consolidate.clients.log.deletions()
        records = [r for r in records if not is_deleted(deleted, r.key)]
        if not records:
            return done
        await journal.embed_ahead(records)
        if self.graph is not None and (unread := journal.to_graph(records)):
            done.graph = await self.graph.process(unread)
            await journal.graphed(unread, done.graph)
        with shared_turn_vectors():  # the consolidator and the indexer compose the same items' vectors
            await self.consolidate.read_turn_vectors(records)  # the turns they are made of: one read
            for record in records:
                await self._consolidate_one(record, deleted, journal, done)
        return done

    async def _consolidate_one(
        self, record: Record, deleted: set[tuple[str, str]], journal: ResultJournal, done: Consolidated
    ) -> None:
        """One result: its decisions made (and kept) or recalled, then applied to the store."""
        produced = await journal.recall(record)
        if produced is not None:
            decisions = _kept(produced, deleted, _senders(record) if deleted else None)
        else:
            out = await self.consolidate.process([record])
            await journal.keep(record, out)
            produced = out.produced
            decisions = [p for p in produced if p.topic == MEMORY_DECISIONS.name]  # the stage checked them
            done.consolidate.dead += out.dead
            done.consolidate.processed += out.processed
        done.consolidate.produced += [p for p in produced if p.topic != MEMORY_DECISIONS.name] + decisions
        if not decisions:
            return
        once: dict[str, Produce] = {}  # a decision twice in one result's output is applied once, as the log keeps it
        for p in decisions:
            once.setdefault(p.record_id, p)
        applied = await self.index.process([Record(p.topic, -1, p.key, p.record_id, p.value) for p in once.values()])
        self.applied.update(dict.fromkeys(once))
        while len(self.applied) > APPLIED_KEPT:
            del self.applied[next(iter(self.applied))]
        done.index.produced += applied.produced
        done.index.dead += applied.dead
        done.index.processed += applied.processed

    async def index_decisions(self, records: list[Record]) -> StageOutput:
        """The indexer over decisions read from their topic: those :meth:`consolidate_results` applied are
        skipped unread (applying them again changes nothing, but decoding and checking them is not free)."""
        fresh = [r for r in records if r.record_id not in self.applied]
        return await self.index.process(fresh) if fresh else StageOutput()


def _senders(result: Record) -> dict[str, list[str]]:
    """A distill result's display name -> sender ids (none when it does not decode: the stage dead-letters it)."""
    try:
        r = decode(DISTILL_RESULTS, result.value)
    except DecodeError:
        return {}
    return r.senders if isinstance(r, DistillResult) else {}


def _kept(produced: list[Produce], deleted: set[tuple[str, str]],
          senders: dict[str, list[str]] | None) -> list[Produce]:  # fmt: skip
    """The recalled decisions whose chat or speaker was not deleted since they were decided, by the
    consolidator's own check (:func:`streams.stages.io.kept_decisions`; ``senders``: the result's display
    name -> sender ids, the ledger names ids)."""
    kept = []
    for p in produced:
        if p.topic != MEMORY_DECISIONS.name:
            continue
        try:
            d = decode(MEMORY_DECISIONS, p.value)
        except DecodeError:
            continue
        if isinstance(d, MemoryDecision) and kept_decisions([d], deleted, senders):
            kept.append(p)
    return kept


def build_stages(clients: Clients, cfg: PipelineConfig) -> Stages:
    """The pipeline's stages over ``clients``, configured by ``cfg``."""
    return Stages(
        segment=SegmentStage(clients, cfg.segmenter, cfg.audit, cfg.sensitive),
        distill=DistillStage(clients, cfg.distiller),
        consolidate=ConsolidateStage(clients, cfg.consolidator, cfg.derived_vectors),
        index=IndexStage(clients, cfg.derived_vectors),
        graph=GraphStage(clients, clients.graph, cfg.graph)
        if clients.graph is not None
        else None,
    )
