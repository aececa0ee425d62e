"""Filter-only lookups of memory records on Elasticsearch (the ``find_memories`` of :class:`_Store`)."""

from __future__ import annotations

from typing import Any, Protocol

from backends.es import queries as Q
from retrieval.protocols import MemoryFilter
from schemas import MemoryRecord

__all__ = ["find_memories"]


class _Store(Protocol):
    """What the lookup needs of :class:`backends.es.store.ESStore` (typed here, not imported)."""

    async def mget(self, kind: str, chat_id: str, local_ids: list[str]) -> dict[str, dict[str, Any]]: ...

    async def scan(
        self, kind: str, query: dict[str, Any], sort: list[str], routing: str | None
    ) -> list[dict[str, Any]]: ...


def _state_clause(query: dict[str, Any], state: str) -> dict[str, Any]:
    if state == "invalidated":
        query["bool"].setdefault("filter", []).append({"exists": {"field": "valid_to"}})
    return query


async def find_memories(store: _Store, chat_id: str, q: MemoryFilter) -> list[MemoryRecord]:
    """Memory records of one chat matching ``q``, oldest first."""
    if q.kinds is not None and not q.kinds or q.message_ids is not None and not q.message_ids:
        return []
    live_only = q.state == "live"
    if q.attribute is not None:  # slots live on the memories index
        query = _state_clause(
            Q.build_chat_query(chat_id, live_only=live_only, terms={"attribute": [q.attribute]}), q.state
        )
        rows = await store.scan("memories", query, ["valid_from_epoch", "seq", "memory_id"], chat_id)
        records = [MemoryRecord.model_validate(r["record"]) for r in rows]
    else:
        terms: dict[str, list[str]] = {}
        if q.kinds is not None:
            terms["kind"] = list(q.kinds)
        if q.message_ids is not None:
            terms["source_message_ids"] = list(dict.fromkeys(q.message_ids))
        query = _state_clause(
            Q.build_chat_query(chat_id, live_only=live_only, terms=terms, exclude={"kind": ["turn"]}), q.state
        )
        rows = await store.scan("docs", query, ["ts_epoch", "seq", "doc_id"], chat_id)
        found = await store.mget("memories", chat_id, [r["doc_id"] for r in rows])
        records = [
            MemoryRecord.model_validate(found[r["doc_id"]]["record"]) for r in rows if r["doc_id"] in found
        ]
    if q.kinds is not None:
        records = [r for r in records if r.kind.value in q.kinds]
    if q.message_ids is not None:
        wanted = set(q.message_ids)
        records = [r for r in records if wanted.intersection(r.source_message_ids)]
    return records[: q.limit]
