"""The indexer: applies memory-update decisions to the store. Idempotent by decision id."""

from __future__ import annotations

from schemas import MemoryDecision, MemoryKind
from streams.clients import Clients
from streams.log import Record
from streams.stages.io import StageOutput, decode_all, is_deleted
from streams.stages.vectors import DerivedVectors, item_vectors
from streams.topics import MEMORY_DECISIONS


async def apply_decisions(
    clients: Clients, decisions: list[MemoryDecision], derived_vectors: DerivedVectors = "sources"
) -> int:
    """Apply ``decisions`` in order; returns how many changed the store (re-applied ones do not)."""
    # a profile (agents/profile.py) is read by its attribute, never by vector: none is computed for it
    with_record = [d for d in decisions if d.record is not None and d.record.kind != MemoryKind.PROFILE]
    vectors = await item_vectors(clients, [d.record for d in with_record], derived_vectors)  # type: ignore[misc]
    vec_by_id = {d.decision_id: vectors[i] for i, d in enumerate(with_record)} if vectors is not None else {}
    # one write for the lot: a SQLite transaction, one Elasticsearch read and bulk (backends.es.decisions)
    return await clients.store.apply_decisions(decisions, [vec_by_id.get(d.decision_id) for d in decisions])


class IndexStage:
    """Memory-update decisions -> the store (idempotent by decision id)."""

    group = "indexer"
    source = MEMORY_DECISIONS

    def __init__(self, clients: Clients, derived_vectors: DerivedVectors = "sources") -> None:
        self.clients = clients
        self.derived_vectors = derived_vectors
        self.applied = 0

    async def process(self, records: list[Record]) -> StageOutput:
        out = StageOutput()
        deleted = await self.clients.log.deletions()  # a chat deleted while its decisions were in flight
        decisions = [d for d in decode_all(self.source, "index", records, out) if not is_deleted(deleted, d.chat_id)]
        self.applied += await apply_decisions(self.clients, decisions, self.derived_vectors)
        out.processed = len(decisions)
        return out
