"""Deletion in the Elasticsearch store (:class:`backends.es.store._Store`): a user's or a chat's data and
everything derived from it (what goes is decided by :mod:`retrieval.deletion`, as for the embedded store).

Memory records are stored whole but not indexed by their sources, so the chat's versions are read and the
doomed ones deleted by id (memories, their docs, their decisions); docs are also deleted by
``source_message_ids`` terms (turns and any record doc carrying a deleted message). Every request is
routed and filtered by the chat. Deleted Lucene documents stay in their segments until a merge: a deletion
ends with a best-effort ``forcemerge(only_expunge_deletes)`` of the indices it touched.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any, Protocol

from backends.es import mapping as M
from backends.es import queries as Q
from retrieval.deletion import (
    Forgotten,
    affected_topics,
    doomed_memories,
    restored,
    trim_topic,
)
from schemas import ChatMessage, MemoryRecord, TopicSummary

if TYPE_CHECKING:  # a third-party type only
    from elasticsearch import AsyncElasticsearch

__all__ = ["forget_chat", "forget_user"]


class _Store(Protocol):
    """What the deletion needs of :class:`backends.es.store.ESStore` (typed here, not imported)."""

    @property
    def es(self) -> AsyncElasticsearch: ...

    def alias(self, kind: str) -> str: ...

    async def _bulk(
        self, ops: list[tuple[dict[str, Any], dict[str, Any] | None]]
    ) -> list[dict[str, Any]]: ...

    async def _mget(self, kind: str, chat_id: str, local_ids: list[str]) -> dict[str, dict[str, Any]]: ...

    async def _scan(
        self, kind: str, query: dict[str, Any], sort: list[str], routing: str | None
    ) -> list[dict[str, Any]]: ...

    async def _delete(self, kind: str, query: dict[str, Any], routing: str | None) -> int: ...

    def _memory_ops(self, record: MemoryRecord, vector: Any) -> list[tuple[dict[str, Any], dict[str, Any] | None]]: ...

    async def list_messages(self, chat_id: str, **kwargs: Any) -> list[ChatMessage]: ...

    async def list_memories(self, chat_id: str, **kwargs: Any) -> list[MemoryRecord]: ...

    async def list_topics(self, chat_id: str) -> list[TopicSummary]: ...


_TERMS = 1000  # values per terms query


def _chunks(values: Collection[str]) -> list[list[str]]:
    items = sorted(values)
    return [items[i : i + _TERMS] for i in range(0, len(items), _TERMS)]


async def _delete_terms(store: _Store, kind: str, chat: str, field: str, values: Collection[str]) -> int:
    return sum(
        [await store._delete(kind, Q.build_chat_query(chat, terms={field: c}), chat) for c in _chunks(values)]
    )


async def _expunge(store: _Store, kinds: Collection[str]) -> None:
    """Merge away deleted documents (best effort: a cluster or API server may not support it)."""
    try:
        index = ",".join(store.alias(k) for k in kinds)
        await store.es.options(ignore_status=(400, 404, 405, 501)).indices.forcemerge(
            index=index, only_expunge_deletes=True, wait_for_completion=True
        )
    except Exception:  # noqa: BLE001 - erasure of the index files is best effort, the data is gone from reads
        return


async def forget_chat(store: _Store, chat_id: str) -> Forgotten:
    """Remove everything of a chat; ``removed`` counts its messages, docs and topics."""
    out = Forgotten()
    for m in await store.list_messages(chat_id):
        out.message_ids.add(m.message_id)
        out.texts[m.message_id] = m.text
    out.record_texts = [r.text for r in await store.list_memories(chat_id, live_only=False)]
    query = Q.build_chat_query(chat_id)
    for kind in ("docs", "messages", "topics"):
        out.removed += await store._delete(kind, query, chat_id)
    out.memories = await store._delete("memories", query, chat_id)
    await store._delete("decisions", query, chat_id)
    await _expunge(store, M.INDEX_KINDS)
    return out


async def forget_user(
    store: _Store, chat_id: str, sender: str, message_ids: Collection[str] = ()
) -> Forgotten:
    """Remove a sender's messages in one chat (and ``message_ids``) and everything derived from them."""
    chat, out = chat_id, Forgotten()
    rows = await store._scan("messages", Q.build_chat_query(chat, terms={"sender": [sender]}), ["seq"], chat)
    msgs = [ChatMessage.model_validate(r["message"]) for r in rows]
    out.message_ids = {m.message_id for m in msgs} | set(message_ids)
    out.texts = {m.message_id: m.text for m in msgs}
    turns = Q.build_chat_query(chat, terms={"kind": ["turn"], "sender": [sender]})
    resp = await store.es.search(index=store.alias("docs"), routing=chat, size=0, query=turns,
                                 aggs={"names": {"terms": {"field": "speaker", "size": 10_000}}})  # fmt: skip
    out.names = {
        sender,
        *(m.display_name for m in msgs),
        *(b["key"] for b in resp["aggregations"]["names"]["buckets"]),
    }
    by_doc = {M.turn_doc_id(chat, m): m for m in out.message_ids}
    for doc_id, src in (await store._mget("docs", chat, list(by_doc))).items():
        if src.get("vector"):
            out.vectors[by_doc[doc_id]] = src["vector"]
    records = await store.list_memories(chat, live_only=False)
    topics = await store.list_topics(chat)
    out.topic_ids = affected_topics(records, topics, out.message_ids)
    doomed = doomed_memories(records, out.message_ids, out.names, out.topic_ids)
    out.memory_ids = set(doomed)
    back, kept = restored(records, doomed, out.message_ids, out.names)
    out.record_texts = [r.text for r in doomed.values()]

    out.removed += await store._delete("docs", turns, chat)
    out.removed += await _delete_terms(store, "docs", chat, "doc_id", doomed)
    out.removed += await _delete_terms(store, "docs", chat, "source_message_ids", out.message_ids)
    out.memories = await _delete_terms(store, "memories", chat, "memory_id", doomed)
    await _delete_terms(store, "decisions", chat, "memory_id", doomed)
    if back or kept:  # kept: other people's profiles, without the deleted lines
        await store._bulk([op for r in back for op in _reopen_ops(store, chat, r)]
                          + [op for r in kept for op in store._memory_ops(r, None)])  # fmt: skip
    out.reopened = len(back)
    for topic in topics:
        trimmed = trim_topic(topic, out.message_ids, out.names)
        if trimmed is topic:
            continue
        if trimmed is None:
            await store.es.options(ignore_status=404).delete(
                index=store.alias("topics"), id=M.es_id(chat, topic.topic_id), routing=chat, refresh=True
            )
            out.topics_dropped += 1
            continue
        await store.upsert_topic(trimmed)
        out.topics_trimmed += 1
        if trimmed.state == "closed" and set(topic.message_ids) & out.message_ids:
            out.redistil.append(trimmed)
    out.removed += await _delete_terms(store, "messages", chat, "message_id", out.message_ids)
    out.removed += await store._delete("messages", Q.build_chat_query(chat, terms={"sender": [sender]}), chat)
    await _untie_replies(store, chat, out.message_ids)
    await _expunge(store, M.INDEX_KINDS)
    return out


async def _untie_replies(store: _Store, chat: str, ids: Collection[str]) -> None:
    """Others' messages that answer a deleted one name :data:`schemas.messages.DELETED_REPLY` instead (the
    reply fields are stored, not indexed: the chat's messages are read)."""
    ops = []
    for row in await store._scan("messages", Q.build_chat_query(chat), ["seq"], chat):
        untied = ChatMessage.model_validate(row["message"]).untied_from(ids)
        if untied is not None:
            meta = {"_index": store.alias("messages"), "_id": M.es_id(chat, untied.message_id), "routing": chat}
            ops.append(({"update": meta}, {"doc": {"message": untied.model_dump(mode="json")}}))
    if ops:
        await store._bulk(ops)


def _reopen_ops(
    store: _Store, chat: str, r: MemoryRecord
) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
    key = M.es_id(chat, r.memory_id)
    patch = {"valid_to": None, "superseded_by": None, "record": r.model_dump(mode="json")}
    return [
        ({"update": {"_index": store.alias("memories"), "_id": key, "routing": chat}}, {"doc": patch}),
        (
            {"update": {"_index": store.alias("docs"), "_id": key, "routing": chat}},
            {"doc": {"valid_to": None}},
        ),
    ]
