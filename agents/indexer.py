"""The indexer: applies memory-update decisions to the store. Idempotent by decision id."""

from __future__ import annotations

from memstream.clients import Clients
from schemas import MemoryDecision


async def apply_decisions(clients: Clients, decisions: list[MemoryDecision]) -> int:
    """Apply ``decisions`` in order; returns how many changed the store (re-applied ones do not)."""
    with_record = [d for d in decisions if d.record is not None]
    vectors = None
    if clients.embedder is not None and with_record:
        vectors = await clients.embedder.embed([d.record.text for d in with_record])
    vec_by_id = {d.decision_id: vectors[i] for i, d in enumerate(with_record)} if vectors is not None else {}
    applied = 0
    for decision in decisions:
        if await clients.store.apply_decision(decision, vec_by_id.get(decision.decision_id)):
            applied += 1
    return applied
