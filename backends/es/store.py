"""The production ``MemoryStore``: Elasticsearch 8.x through ``AsyncElasticsearch``.

Same inputs, same answers as :class:`backends.sqlite.store.SQLiteStore`: BM25 over the same pre-computed
tokens, exact cosine kNN (float HNSW, filtered), RRF fusion with the same tie-breaks. Five indices behind
aliases (``{prefix}-docs`` -> ``{prefix}-docs-v1``, likewise messages, memories, decisions, topics), so a
blue/green rebuild can switch an alias. Every record's ``_id`` derives from (chat id, event-derived id) and
every request is routed and filtered by chat id. Writes refresh (``wait_for`` by default) so the next
search sees them; gets are real-time. Indices and low-level I/O: :mod:`backends.es.indices`; ids, mappings
and sources: :mod:`backends.es.mapping`; query shapes: :mod:`backends.es.queries`. Deletion is the store's
own (what goes is decided by :mod:`retrieval.deletion`, as for the embedded store).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any, Literal

import numpy as np
from elasticsearch import ApiError

from backends.es import decisions as es_decisions
from backends.es import mapping as M
from backends.es import queries as Q
from backends.es.indices import ESIndices
from backends.es.lookup import find_memories as _find_memories
from retrieval.deletion import Forgotten, affected_topics, doomed_memories, restored, trim_topic
from retrieval.protocols import Hit, MemoryFilter, SearchQuery
from schemas import ChatMessage, MemoryDecision, MemoryRecord, TopicSummary

_TERMS = 1000  # values per terms query


def _chunks(values: Collection[str]) -> list[list[str]]:
    items = sorted(values)
    return [items[i : i + _TERMS] for i in range(0, len(items), _TERMS)]


RRFMode = Literal["server", "client", "auto"]
_FILL_VECTOR = "if (ctx._source.vector == null) { ctx._source.vector = params.v } else { ctx.op = 'noop' }"


class ServerRRFUnavailable(RuntimeError):
    """The cluster cannot run (or explain) the ``rrf`` retriever: no licence, too old, or not compatible."""


class ESStore(ESIndices):
    """``MemoryStore`` over Elasticsearch. The constructor does no I/O; call :meth:`bootstrap` first.

    ``rrf_mode``: ``server`` fuses hybrid search with the ``rrf`` retriever (needs a licence on
    self-managed Elasticsearch), ``client`` runs BM25 and kNN in one ``msearch`` and fuses locally, ``auto``
    tries the server once and falls back to client-side fusion for good on a licence/unsupported error.
    """

    def __init__(
        self,
        url_or_hosts: str | Sequence[str],
        *,
        index_prefix: str = "memstream",
        dim: int | None = None,
        rrf_mode: RRFMode = "auto",
        refresh: Literal["wait_for", "true", "false"] = "wait_for",
        shards: int = 1,
        request_timeout: float = 30.0,
    ) -> None:
        if rrf_mode not in ("server", "client", "auto"):
            raise ValueError(f"rrf_mode must be server, client or auto, not {rrf_mode!r}")
        super().__init__(url_or_hosts, index_prefix=index_prefix, dim=dim, refresh=refresh, shards=shards,
                         request_timeout=request_timeout)  # fmt: skip
        self.rrf_mode: RRFMode = rrf_mode
        self._server_rrf: bool | None = {"server": True, "client": False}.get(rrf_mode)

    @classmethod
    def from_url(cls, url: str, dim: int | None = None) -> ESStore:
        """From ``es://host:port?prefix=memstream&rrf=auto|server|client`` (see ``parse_store_url``)."""
        hosts, kwargs = M.parse_store_url(url)
        return cls(hosts, dim=dim, **kwargs)

    @property
    def fusion(self) -> str:
        """Where hybrid results are fused: ``server``, ``client``, or ``untried`` (``auto`` before a hybrid search)."""
        return {True: "server", False: "client", None: "untried"}[self._server_rrf]

    # ---- vectors ---------------------------------------------------------------------------------

    def check_vectors(self, vectors: np.ndarray | None, n: int) -> list[list[float] | None] | None:
        if vectors is None:
            return None
        rows, self.dim = M.unit_vectors(vectors, n, self.dim)
        return rows

    def _put_doc(self, chat_id: str, source: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Create a doc unless it exists; an existing doc without a vector gets this one (first wins)."""
        meta = {"_index": self.alias("docs"), "_id": M.es_id(chat_id, source["doc_id"]), "routing": chat_id}
        if "vector" not in source:
            return {"create": meta}, source
        script = {"source": _FILL_VECTOR, "params": {"v": source["vector"]}}
        return {"update": meta}, {"script": script, "upsert": source}

    # ---- messages --------------------------------------------------------------------------------

    async def upsert_messages(self, messages: list[ChatMessage], vectors: np.ndarray | None) -> int:
        """Store messages and their turn docs; idempotent by (chat_id, message_id), first write wins.
        Returns how many messages were new."""
        if not messages:
            return 0
        vecs = self.check_vectors(vectors, len(messages))
        seq = self._next_seq(len(messages))
        ops: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
        for i, m in enumerate(messages):
            meta = {
                "_index": self.alias("messages"),
                "_id": M.es_id(m.chat_id, m.message_id),
                "routing": m.chat_id,
            }
            ops.append(({"create": meta}, M.message_source(m, seq + i)))
            ops.append(self._put_doc(m.chat_id, M.turn_source(m, None if vecs is None else vecs[i], seq + i)))
        results = await self.bulk(ops)
        return sum(1 for r in results[::2] if r.get("status") == 201)

    async def replace_message(self, message: ChatMessage, vector: np.ndarray | None) -> bool:
        """An edit: the stored message and its turn doc take the new text (and vector); False if unknown."""
        chat = message.chat_id
        if not await self.mget("messages", chat, [message.message_id]):
            return False
        vecs = self.check_vectors(vector, 1) if vector is not None and message.text.strip() else None
        turn = M.turn_source(message, None if vecs is None else vecs[0], self._next_seq(1))
        if not message.text.strip():
            turn["tokens"] = ""
        meta = {"_id": M.es_id(chat, message.message_id), "routing": chat}
        doc_meta = {"_id": M.es_id(chat, turn["doc_id"]), "routing": chat}
        await self.bulk([
            ({"index": {"_index": self.alias("messages"), **meta}}, M.message_source(message, turn["seq"])),
            ({"index": {"_index": self.alias("docs"), **doc_meta}}, turn),
        ])  # fmt: skip
        return True

    async def get_messages(self, chat_id: str, message_ids: list[str]) -> list[ChatMessage]:
        """The stored messages among ``message_ids``, in the order asked (unknown ids are skipped)."""
        found = await self.mget("messages", chat_id, message_ids)
        return [
            ChatMessage.model_validate(found[i]["message"]) for i in dict.fromkeys(message_ids) if i in found
        ]

    async def get_messages_in(self, keys: Sequence[tuple[str, str]]) -> list[ChatMessage]:
        """The stored messages among ``(chat_id, message_id)`` keys of any chats, in the order asked: one
        real-time read across the chats (each id routed to its chat; a hit of another chat is not taken)."""
        found = await self.mget_keys("messages", list(dict.fromkeys(keys)))
        return [ChatMessage.model_validate(found[k]["message"]) for k in dict.fromkeys(keys) if k in found]

    async def list_messages(
        self, chat_id: str, *, since: datetime | None = None, until: datetime | None = None
    ) -> list[ChatMessage]:
        query = Q.build_chat_query(chat_id, since=since, until=until)
        rows = await self.scan("messages", query, ["ts_epoch", "seq", "message_id"], chat_id)
        return [ChatMessage.model_validate(r["message"]) for r in rows]

    # ---- memories --------------------------------------------------------------------------------

    async def apply_decision(self, decision: MemoryDecision, vector: np.ndarray | None) -> bool:
        """Apply one consolidator decision; False (and no change) if this decision id was applied before."""
        return await es_decisions.apply_decisions(self, [decision], [vector]) == 1

    async def apply_decisions(self, decisions: list[MemoryDecision], vectors: list[np.ndarray | None]) -> int:
        """:meth:`apply_decision` for each decision in order, in one read and one bulk request
        (:mod:`backends.es.decisions`); returns how many changed the store. An invalid decision raises after
        the ones before it are applied, as one call each would."""
        return await es_decisions.apply_decisions(self, decisions, vectors)

    def memory_ops(self, record: MemoryRecord, vector: Any) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
        """Writes of a new memory version: its record and its searchable doc."""
        seq, chat = self._next_seq(1), record.chat_id
        meta = {"_index": self.alias("memories"), "_id": M.es_id(chat, record.memory_id), "routing": chat}
        return [({"create": meta}, M.memory_source(record, seq)),
                self._put_doc(chat, M.memory_doc_source(record, vector, seq))]  # fmt: skip

    def drop_ops(self, chat_id: str, memory_id: str) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
        """Deletes of a memory version, record and doc (a profile's old superseded version)."""
        key = M.es_id(chat_id, memory_id)
        return [({"delete": {"_index": self.alias(kind), "_id": key, "routing": chat_id}}, None)
                for kind in ("memories", "docs")]  # fmt: skip

    def close_ops(
        self, chat_id: str, live: MemoryRecord, at: datetime, by: str | None
    ) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
        """Updates closing a live memory version at ``at``: its record and its doc."""
        closed = live.model_copy(update={"valid_to": at, "superseded_by": by})
        key = M.es_id(chat_id, live.memory_id)
        patch = {"valid_to": at.isoformat(), "superseded_by": by, "record": closed.model_dump(mode="json")}
        return [
            ({"update": {"_index": self.alias("memories"), "_id": key, "routing": chat_id}}, {"doc": patch}),
            ({"update": {"_index": self.alias("docs"), "_id": key, "routing": chat_id}},
             {"doc": {"valid_to": at.isoformat()}}),
        ]  # fmt: skip

    async def get_memory(self, chat_id: str, memory_id: str) -> MemoryRecord | None:
        src = (await self.mget("memories", chat_id, [memory_id])).get(memory_id)
        return MemoryRecord.model_validate(src["record"]) if src else None

    async def list_memories(self, chat_id: str, *, live_only: bool = True) -> list[MemoryRecord]:
        query = Q.build_chat_query(chat_id, live_only=live_only)
        rows = await self.scan("memories", query, ["valid_from_epoch", "seq", "memory_id"], chat_id)
        return [MemoryRecord.model_validate(r["record"]) for r in rows]

    async def find_memories(self, chat_id: str, query: MemoryFilter) -> list[MemoryRecord]:
        return await _find_memories(self, chat_id, query)

    async def turn_vectors(self, chat_id: str, message_ids: list[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these messages' turns (message id -> vector; none for a turn without one)."""
        return {m: v for (_, m), v in (await self.turn_vectors_in([(chat_id, m) for m in message_ids])).items()}

    async def turn_vectors_in(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], np.ndarray]:
        """:meth:`turn_vectors` of any chats in one real-time read (each id routed to its chat)."""
        ids = {(c, M.turn_doc_id(c, m)): (c, m) for c, m in dict.fromkeys(keys)}
        found = await self.mget_keys("docs", list(ids))
        return {ids[k]: np.asarray(src["vector"], dtype=np.float32) for k, src in found.items() if src.get("vector")}

    async def similar_memories(
        self, chat_id: str, vector: np.ndarray, *, k: int = 10, subject: str | None = None
    ) -> list[tuple[MemoryRecord, float]]:
        """Live memory records of the chat (optionally only about ``subject``) by cosine, best first."""
        if k <= 0 or self.dim is None:
            return []
        [query] = self.check_vectors(vector, 1) or [None]
        if query is None:
            return []
        resp = await self._search("docs", chat_id, Q.build_similar_knn(chat_id, query, k, subject))
        ranked = [(h["_source"]["doc_id"], Q.cosine_from_score(h["_score"])) for h in resp["hits"]["hits"]]
        records = await self.mget("memories", chat_id, [doc_id for doc_id, _ in ranked])
        return [(MemoryRecord.model_validate(records[d]["record"]), s) for d, s in ranked if d in records]

    async def similar_memories_many(
        self, chat_id: str, vectors: np.ndarray, *, k: int = 10
    ) -> list[list[tuple[MemoryRecord, float]]]:
        """:meth:`similar_memories` of each row in one ``msearch`` and one ``mget`` of the records found."""
        rows = [None if k <= 0 or self.dim is None else (self.check_vectors(v, 1) or [None])[0] for v in vectors]
        header = {"index": self.alias("docs"), "routing": chat_id}
        asked = [i for i, q in enumerate(rows) if q is not None]
        ranked: list[list[tuple[str, float]]] = [[] for _ in rows]
        if asked:
            searches = [line for i in asked for line in (header, Q.build_similar_knn(chat_id, rows[i], k, None))]
            resp = await self.es.msearch(searches=searches)
            for i, r in zip(asked, resp["responses"], strict=True):
                if "error" in r:
                    raise RuntimeError(f"similar memories search failed: {r['error']}")
                ranked[i] = [(h["_source"]["doc_id"], Q.cosine_from_score(h["_score"])) for h in r["hits"]["hits"]]
        records = await self.mget("memories", chat_id, list(dict.fromkeys(d for row in ranked for d, _ in row)))
        return [[(MemoryRecord.model_validate(records[d]["record"]), s) for d, s in row if d in records]
                for row in ranked]  # fmt: skip

    # ---- search ----------------------------------------------------------------------------------

    async def search(self, query: SearchQuery) -> list[Hit]:
        """BM25, cosine kNN or both fused by RRF, always within ``query.chat_id``.

        ``scores`` carries ``bm25`` (Lucene BM25) and ``bm25_rank``, ``cosine`` and ``knn_rank``, and
        ``rrf`` for hybrid. Hybrid without a query vector degrades to BM25 candidates.
        """
        q = query
        if q.k <= 0 or (q.kinds is not None and not q.kinds):
            return []
        if q.vector is not None:
            vec = self.check_vectors(np.asarray(q.vector, dtype=np.float32), 1)[0] if self.dim else None
            q = q.model_copy(update={"vector": vec})
        if q.mode in ("bm25", "knn"):
            body = Q.build_bm25_search(q, q.k) if q.mode == "bm25" else Q.build_knn_search(q, q.k)
            hits = [] if body is None else (await self._search("docs", q.chat_id, body))["hits"]["hits"]
            return Q.leg_hits(hits, q.mode)
        if self._server_rrf is not False and (retriever := Q.build_rrf_retriever(q)) is not None:
            try:
                hits = await self._hybrid_server(q, retriever)
                self._server_rrf = True
                return hits
            except ServerRRFUnavailable:
                if self.rrf_mode == "server":
                    raise
                self._server_rrf = False
        return await self._hybrid_client(q)

    async def _hybrid_client(self, q: SearchQuery) -> list[Hit]:
        """BM25 and kNN legs in one ``msearch``, fused here with :func:`retrieval.fusion.rrf`."""
        n = max(q.candidates, q.k)
        bodies = {"bm25": Q.build_bm25_search(q, n), "knn": Q.build_knn_search(q, n)}
        wanted = [name for name, body in bodies.items() if body is not None]
        legs: dict[str, list[dict[str, Any]]] = {"bm25": [], "knn": []}
        if wanted:
            header = {"index": self.alias("docs"), "routing": q.chat_id}
            resp = await self.es.msearch(searches=[line for w in wanted for line in (header, bodies[w])])
            for name, r in zip(wanted, resp["responses"], strict=True):
                if "error" in r:
                    raise RuntimeError(f"{name} leg failed: {r['error']}")
                legs[name] = r["hits"]["hits"]
        return Q.fused_hits(legs["bm25"], legs["knn"], q.k, q.rrf_k)

    async def _hybrid_server(self, q: SearchQuery, retriever: dict[str, Any]) -> list[Hit]:
        """The ``rrf`` retriever; per-leg ranks and scores are read from the hits' explanations."""
        body = {
            "retriever": retriever,
            "size": q.k,
            "explain": True,
            "_source": {"excludes": M.DOC_SOURCE_EXCLUDES},
        }
        try:
            resp = await self._search("docs", q.chat_id, body)
            return Q.rrf_hits(resp["hits"]["hits"], q.rrf_k)
        except ApiError as e:
            if Q.rrf_unsupported(e.status_code, str(e)):
                raise ServerRRFUnavailable(str(e)[:500]) from e
            raise
        except ValueError as e:
            raise ServerRRFUnavailable(f"rrf retriever without usable explanations: {e}") from e

    # ---- topics, chats, deletion, export ---------------------------------------------------------

    async def upsert_topic(self, topic: TopicSummary) -> None:
        """Store the topic's latest state and tag its messages' turn docs with its id."""
        await self.upsert_topics([topic])

    async def upsert_topics(self, topics: Sequence[TopicSummary]) -> None:
        """:meth:`upsert_topic` for each of ``topics``, in order, in one bulk request (a segmenter batch
        touches hundreds of topics: one request each was most of an ingest's round trips)."""
        ops: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
        for topic in topics:
            chat = topic.chat_id
            meta = {"_index": self.alias("topics"), "_id": M.es_id(chat, topic.topic_id), "routing": chat}
            ops.append(({"index": meta}, M.topic_source(topic, self._next_seq(1))))
            for m in topic.message_ids:
                key = M.es_id(chat, M.turn_doc_id(chat, m))
                ops.append(({"update": {"_index": self.alias("docs"), "_id": key, "routing": chat}},
                            {"doc": {"topic_id": topic.topic_id}}))  # fmt: skip
        if ops:
            await self.bulk(ops)

    async def list_topics(self, chat_id: str) -> list[TopicSummary]:
        rows = await self.scan(
            "topics", Q.build_chat_query(chat_id), ["started_epoch", "seq", "topic_id"], chat_id
        )
        return [TopicSummary.model_validate(r["topic"]) for r in rows]

    # ---- deletion: a user's or a chat's data and everything derived from it (what goes is decided by
    # retrieval.deletion, as for the embedded store). Memory records are stored whole but not indexed by their
    # sources, so the chat's versions are read and the doomed ones deleted by id (memories, their docs, their
    # decisions); docs are also deleted by ``source_message_ids`` terms (turns and any record doc carrying a
    # deleted message). Every request is routed and filtered by the chat. Deleted Lucene documents stay in
    # their segments until a merge: a deletion ends with a best-effort forcemerge(only_expunge_deletes).

    async def delete_chat(self, chat_id: str) -> int:
        """Remove everything of a chat; returns the number of messages, docs and topics removed."""
        return (await self.forget_chat(chat_id)).removed

    async def delete_user(self, chat_id: str | None, sender: str) -> int:
        """Remove a sender's messages and everything derived from them; ``chat_id`` None means every chat.
        Returns the number of messages and docs removed."""
        chats = [chat_id] if chat_id is not None else await self.chats()
        return sum([(await self.forget_user(chat, sender)).removed for chat in chats])

    async def _delete_terms(self, kind: str, chat: str, field: str, values: Collection[str]) -> int:
        return sum(
            [await self.delete_where(kind, Q.build_chat_query(chat, terms={field: c}), chat) for c in _chunks(values)]
        )

    async def _expunge(self, kinds: Collection[str]) -> None:
        """Merge away deleted documents (best effort: a cluster or API server may not support it)."""
        try:
            index = ",".join(self.alias(k) for k in kinds)
            await self.es.options(ignore_status=(400, 404, 405, 501)).indices.forcemerge(
                index=index, only_expunge_deletes=True, wait_for_completion=True
            )
        except Exception:  # noqa: BLE001 - erasure of the index files is best effort, the data is gone from reads
            return

    async def forget_chat(self, chat_id: str) -> Forgotten:
        """Remove everything of a chat; ``removed`` counts its messages, docs and topics."""
        out = Forgotten()
        for m in await self.list_messages(chat_id):
            out.message_ids.add(m.message_id)
            out.texts[m.message_id] = m.text
        out.record_texts = [r.text for r in await self.list_memories(chat_id, live_only=False)]
        query = Q.build_chat_query(chat_id)
        for kind in ("docs", "messages", "topics"):
            out.removed += await self.delete_where(kind, query, chat_id)
        out.memories = await self.delete_where("memories", query, chat_id)
        await self.delete_where("decisions", query, chat_id)
        await self._expunge(M.INDEX_KINDS)
        return out

    async def forget_user(self, chat_id: str, sender: str, message_ids: Collection[str] = ()) -> Forgotten:
        """Remove a sender's messages in one chat (and ``message_ids``) and everything derived from them."""
        chat, out = chat_id, Forgotten()
        rows = await self.scan("messages", Q.build_chat_query(chat, terms={"sender": [sender]}), ["seq"], chat)
        msgs = [ChatMessage.model_validate(r["message"]) for r in rows]
        out.message_ids = {m.message_id for m in msgs} | set(message_ids)
        out.texts = {m.message_id: m.text for m in msgs}
        turns = Q.build_chat_query(chat, terms={"kind": ["turn"], "sender": [sender]})
        resp = await self.es.search(index=self.alias("docs"), routing=chat, size=0, query=turns,
                                    aggs={"names": {"terms": {"field": "speaker", "size": 10_000}}})  # fmt: skip
        out.names = {
            sender,
            *(m.display_name for m in msgs),
            *(b["key"] for b in resp["aggregations"]["names"]["buckets"]),
        }
        by_doc = {M.turn_doc_id(chat, m): m for m in out.message_ids}
        for doc_id, src in (await self.mget("docs", chat, list(by_doc))).items():
            if src.get("vector"):
                out.vectors[by_doc[doc_id]] = src["vector"]
        records = await self.list_memories(chat, live_only=False)
        topics = await self.list_topics(chat)
        out.topic_ids = affected_topics(records, topics, out.message_ids)
        doomed = doomed_memories(records, out.message_ids, out.names, out.topic_ids)
        out.memory_ids = set(doomed)
        back, kept = restored(records, doomed, out.message_ids, out.names)
        out.record_texts = [r.text for r in doomed.values()]

        out.removed += await self.delete_where("docs", turns, chat)
        out.removed += await self._delete_terms("docs", chat, "doc_id", doomed)
        out.removed += await self._delete_terms("docs", chat, "source_message_ids", out.message_ids)
        out.memories = await self._delete_terms("memories", chat, "memory_id", doomed)
        await self._delete_terms("decisions", chat, "memory_id", doomed)
        if back or kept:  # kept: other people's profiles, without the deleted lines
            await self.bulk([op for r in back for op in self._reopen_ops(chat, r)]
                             + [op for r in kept for op in self.memory_ops(r, None)])  # fmt: skip
        out.reopened = len(back)
        for topic in topics:
            trimmed = trim_topic(topic, out.message_ids, out.names)
            if trimmed is topic:
                continue
            if trimmed is None:
                await self.es.options(ignore_status=404).delete(
                    index=self.alias("topics"), id=M.es_id(chat, topic.topic_id), routing=chat, refresh=True
                )
                out.topics_dropped += 1
                continue
            await self.upsert_topic(trimmed)
            out.topics_trimmed += 1
        out.removed += await self._delete_terms("messages", chat, "message_id", out.message_ids)
        out.removed += await self.delete_where("messages", Q.build_chat_query(chat, terms={"sender": [sender]}), chat)
        await self._untie_replies(chat, out.message_ids)
        await self._expunge(M.INDEX_KINDS)
        return out

    async def _untie_replies(self, chat: str, ids: Collection[str]) -> None:
        """Others' messages that answer a deleted one name :data:`schemas.messages.DELETED_REPLY` instead (the
        reply fields are stored, not indexed: the chat's messages are read)."""
        ops = []
        for row in await self.scan("messages", Q.build_chat_query(chat), ["seq"], chat):
            untied = ChatMessage.model_validate(row["message"]).untied_from(ids)
            if untied is not None:
                meta = {"_index": self.alias("messages"), "_id": M.es_id(chat, untied.message_id), "routing": chat}
                ops.append(({"update": meta}, {"doc": {"message": untied.model_dump(mode="json")}}))
        if ops:
            await self.bulk(ops)

    def _reopen_ops(self, chat: str, r: MemoryRecord) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
        key = M.es_id(chat, r.memory_id)
        patch = {"valid_to": None, "superseded_by": None, "record": r.model_dump(mode="json")}
        return [
            ({"update": {"_index": self.alias("memories"), "_id": key, "routing": chat}}, {"doc": patch}),
            (
                {"update": {"_index": self.alias("docs"), "_id": key, "routing": chat}},
                {"doc": {"valid_to": None}},
            ),
        ]

    async def export_chat(self, chat_id: str) -> dict[str, Any]:
        """Everything stored for a chat as JSON-ready data: messages, all memory versions, topics."""
        return {
            "chat_id": chat_id,
            "messages": [m.model_dump(mode="json") for m in await self.list_messages(chat_id)],
            "memories": [
                r.model_dump(mode="json") for r in await self.list_memories(chat_id, live_only=False)
            ],
            "topics": [t.model_dump(mode="json") for t in await self.list_topics(chat_id)],
        }
