"""The production ``MemoryStore``: Elasticsearch 8.x through ``AsyncElasticsearch``.

Same inputs, same answers as :class:`retrieval.sqlite_store.SQLiteStore`: BM25 over the same pre-computed
tokens, exact cosine kNN (float HNSW, filtered), RRF fusion with the same tie-breaks. Five indices behind
aliases (``{prefix}-docs`` -> ``{prefix}-docs-v1``, likewise messages, memories, decisions, topics), so a
blue/green rebuild can switch an alias. Every record's ``_id`` derives from (chat id, event-derived id) and
every request is routed and filtered by chat id. Writes refresh (``wait_for`` by default) so the next
search sees them; gets are real-time. Query shapes live in :mod:`retrieval.es_queries`.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any, Literal

import numpy as np
from elasticsearch import ApiError, AsyncElasticsearch

from retrieval import es_delete
from retrieval import es_queries as Q
from retrieval.deletion import Forgotten
from retrieval.es_lookup import find_memories as _find_memories
from retrieval.protocols import Hit, MemoryFilter, SearchQuery
from schemas import ChatMessage, DecisionOp, MemoryDecision, MemoryRecord, TopicSummary

RRFMode = Literal["server", "client", "auto"]
_BULK_CHUNK = 500  # actions per bulk request
_PAGE = 1000  # hits per listing page / ids per mget
_FILL_VECTOR = "if (ctx._source.vector == null) { ctx._source.vector = params.v } else { ctx.op = 'noop' }"


class BulkError(RuntimeError):
    """Some actions of a bulk request failed (other than the expected create conflicts / update misses)."""


class ServerRRFUnavailable(RuntimeError):
    """The cluster cannot run (or explain) the ``rrf`` retriever: no licence, too old, or not compatible."""


class ESStore:
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
        if refresh not in ("wait_for", "true", "false"):  # "false": searches may miss the latest writes
            raise ValueError(f"refresh must be wait_for, true or false, not {refresh!r}")
        self.hosts = [url_or_hosts] if isinstance(url_or_hosts, str) else list(url_or_hosts)
        self.prefix = index_prefix
        self.dim = dim
        self.rrf_mode: RRFMode = rrf_mode
        self.refresh = refresh
        self.shards = shards
        self.request_timeout = request_timeout
        self._client: AsyncElasticsearch | None = None
        self._server_rrf: bool | None = {"server": True, "client": False}.get(rrf_mode)
        self._seq = 0

    @classmethod
    def from_url(cls, url: str, dim: int | None = None) -> ESStore:
        """From ``es://host:port?prefix=memstream&rrf=auto|server|client`` (see ``parse_store_url``)."""
        hosts, kwargs = Q.parse_store_url(url)
        return cls(hosts, dim=dim, **kwargs)

    # ---- lifecycle -------------------------------------------------------------------------------

    def alias(self, kind: str) -> str:
        return f"{self.prefix}-{kind}"

    async def bootstrap(self) -> None:
        """Put the index templates and create the ``-v1`` indices and their aliases where missing."""
        if self._client is not None:
            return
        es = AsyncElasticsearch(
            self.hosts, request_timeout=self.request_timeout, max_retries=3, retry_on_timeout=True
        )
        try:
            await self._check_dim(es)
            for kind in Q.INDEX_KINDS:
                await es.indices.put_index_template(
                    **Q.index_template(self.prefix, kind, self.dim, self.shards)
                )
                if await es.indices.exists_alias(name=self.alias(kind)):
                    continue
                try:
                    await es.indices.create(
                        index=f"{self.alias(kind)}-v1", aliases={self.alias(kind): {"is_write_index": True}}
                    )
                except ApiError as e:
                    if e.error != "resource_already_exists_exception":
                        raise
        except BaseException:
            await es.close()
            raise
        self._client = es

    async def _check_dim(self, es: AsyncElasticsearch) -> None:
        if not await es.indices.exists_alias(name=self.alias("docs")):
            return
        mappings = (await es.indices.get_mapping(index=self.alias("docs"))).body
        dims = {m["mappings"]["properties"].get("vector", {}).get("dims") for m in mappings.values()} - {None}
        if dims and self.dim is not None and dims != {self.dim}:
            raise ValueError(
                f"index {self.alias('docs')} holds {dims.pop()}-d vectors, embedder gives {self.dim}-d"
            )
        if dims and self.dim is None:
            self.dim = dims.pop()

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

    @property
    def es(self) -> AsyncElasticsearch:
        if self._client is None:
            raise RuntimeError("ESStore used before bootstrap() (or after close())")
        return self._client

    @property
    def fusion(self) -> str:
        """Where hybrid results are fused: ``server``, ``client``, or ``untried`` (``auto`` before a hybrid search)."""
        return {True: "server", False: "client", None: "untried"}[self._server_rrf]

    def _next_seq(self, n: int) -> int:
        """``n`` consecutive insertion sequence numbers (monotonic within this process, time-ordered across)."""
        start = max(time.time_ns(), self._seq + 1)
        self._seq = start + n - 1
        return start

    # ---- low-level I/O ---------------------------------------------------------------------------

    async def _bulk(self, ops: list[tuple[dict[str, Any], dict[str, Any] | None]]) -> list[dict[str, Any]]:
        """Run ``(action, body)`` pairs in chunks; returns each action's result. A ``create`` that finds the
        document (409) or an ``update`` that misses it (404) is an expected outcome; anything else raises."""
        results: list[dict[str, Any]] = []
        failed: list[str] = []
        for i in range(0, len(ops), _BULK_CHUNK):
            lines: list[dict[str, Any]] = []
            for action, body in ops[i : i + _BULK_CHUNK]:
                lines += [action] if body is None else [action, body]
            resp = await self.es.bulk(operations=lines, refresh=self.refresh)
            for item in resp["items"]:
                ((op, result),) = item.items()
                status = result.get("status", 500)
                if status >= 300 and (op, status) not in {("create", 409), ("update", 404), ("delete", 404)}:
                    failed.append(f"{op} {result.get('_index')}/{result.get('_id')}: {result.get('error')}")
                results.append(result)
        if failed:
            raise BulkError(f"{len(failed)} bulk actions failed; first: {failed[0]}")
        return results

    async def _mget(self, kind: str, chat_id: str, local_ids: list[str]) -> dict[str, dict[str, Any]]:
        """Real-time fetch of a chat's records by local id -> ``_source`` (missing ids left out)."""
        out: dict[str, dict[str, Any]] = {}
        unique = list(dict.fromkeys(local_ids))
        for i in range(0, len(unique), _PAGE):
            chunk = unique[i : i + _PAGE]
            docs = [{"_id": Q.es_id(chat_id, x), "routing": chat_id} for x in chunk]
            resp = await self.es.mget(index=self.alias(kind), docs=docs)
            for local_id, d in zip(chunk, resp["docs"], strict=True):
                if d.get("found") and d["_source"].get("chat_id") == chat_id:
                    out[local_id] = d["_source"]
        return out

    async def _scan(
        self, kind: str, query: dict[str, Any], sort: list[str], routing: str | None
    ) -> list[dict[str, Any]]:
        """Every hit of a filter query in ``sort`` order (``search_after`` pages)."""
        out: list[dict[str, Any]] = []
        after = None
        while True:
            resp = await self.es.search(
                index=self.alias(kind), query=query, sort=[{f: "asc"} for f in sort], size=_PAGE,
                search_after=after, routing=routing, track_total_hits=False,
            )  # fmt: skip
            hits = resp["hits"]["hits"]
            out += [h["_source"] for h in hits]
            if len(hits) < _PAGE:
                return out
            after = hits[-1]["sort"]

    async def _delete(self, kind: str, query: dict[str, Any], routing: str | None) -> int:
        resp = await self.es.delete_by_query(
            index=self.alias(kind), query=query, routing=routing, refresh=True, conflicts="proceed"
        )
        return int(resp.get("deleted", 0))

    # ---- vectors ---------------------------------------------------------------------------------

    def _check_vectors(self, vectors: np.ndarray | None, n: int) -> list[list[float] | None] | None:
        if vectors is None:
            return None
        rows, self.dim = Q.unit_vectors(vectors, n, self.dim)
        return rows

    def _put_doc(self, chat_id: str, source: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """Create a doc unless it exists; an existing doc without a vector gets this one (first wins)."""
        meta = {"_index": self.alias("docs"), "_id": Q.es_id(chat_id, source["doc_id"]), "routing": chat_id}
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
        vecs = self._check_vectors(vectors, len(messages))
        seq = self._next_seq(len(messages))
        ops: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
        for i, m in enumerate(messages):
            meta = {
                "_index": self.alias("messages"),
                "_id": Q.es_id(m.chat_id, m.message_id),
                "routing": m.chat_id,
            }
            ops.append(({"create": meta}, Q.message_source(m, seq + i)))
            ops.append(self._put_doc(m.chat_id, Q.turn_source(m, None if vecs is None else vecs[i], seq + i)))
        results = await self._bulk(ops)
        return sum(1 for r in results[::2] if r.get("status") == 201)

    async def replace_message(self, message: ChatMessage, vector: np.ndarray | None) -> bool:
        """An edit: the stored message and its turn doc take the new text (and vector); False if unknown."""
        chat = message.chat_id
        if not await self._mget("messages", chat, [message.message_id]):
            return False
        vecs = self._check_vectors(vector, 1) if vector is not None and message.text.strip() else None
        turn = Q.turn_source(message, None if vecs is None else vecs[0], self._next_seq(1))
        if not message.text.strip():
            turn["tokens"] = ""
        meta = {"_id": Q.es_id(chat, message.message_id), "routing": chat}
        doc_meta = {"_id": Q.es_id(chat, turn["doc_id"]), "routing": chat}
        await self._bulk([
            ({"index": {"_index": self.alias("messages"), **meta}}, Q.message_source(message, turn["seq"])),
            ({"index": {"_index": self.alias("docs"), **doc_meta}}, turn),
        ])  # fmt: skip
        return True

    async def get_messages(self, chat_id: str, message_ids: list[str]) -> list[ChatMessage]:
        """The stored messages among ``message_ids``, in the order asked (unknown ids are skipped)."""
        found = await self._mget("messages", chat_id, message_ids)
        return [
            ChatMessage.model_validate(found[i]["message"]) for i in dict.fromkeys(message_ids) if i in found
        ]

    async def list_messages(
        self, chat_id: str, *, since: datetime | None = None, until: datetime | None = None
    ) -> list[ChatMessage]:
        query = Q.build_chat_query(chat_id, since=since, until=until)
        rows = await self._scan("messages", query, ["ts_epoch", "seq", "message_id"], chat_id)
        return [ChatMessage.model_validate(r["message"]) for r in rows]

    # ---- memories --------------------------------------------------------------------------------

    async def apply_decision(self, decision: MemoryDecision, vector: np.ndarray | None) -> bool:
        """Apply one consolidator decision; False (and no change) if this decision id was applied before."""
        record, chat = decision.record, decision.chat_id
        if decision.op in (DecisionOp.ADD, DecisionOp.UPDATE) and record is None:
            raise ValueError(f"{decision.op} decision {decision.decision_id} carries no record")
        if record is not None and record.chat_id != chat:
            raise ValueError(f"decision {decision.decision_id}: record belongs to another chat")
        decision_key = Q.es_id(chat, decision.decision_id)
        target = decision.target_memory_id if decision.op in (DecisionOp.UPDATE, DecisionOp.DELETE) else None
        applied, live = await self._decision_state(chat, decision_key, target)
        if applied:
            return False
        vec = self._check_vectors(vector, 1) if vector is not None and record is not None else None
        ops: list[tuple[dict[str, Any], dict[str, Any] | None]] = []
        if target and live is not None:
            by = record.memory_id if decision.op == DecisionOp.UPDATE and record else None
            ops += self._close_ops(chat, live, decision.at, by)
        if decision.op in (DecisionOp.ADD, DecisionOp.UPDATE) and record is not None:
            seq = self._next_seq(1)
            meta = {"_index": self.alias("memories"), "_id": Q.es_id(chat, record.memory_id), "routing": chat}
            ops.append(({"create": meta}, Q.memory_source(record, seq)))
            ops.append(self._put_doc(chat, Q.memory_doc_source(record, None if vec is None else vec[0], seq)))
        meta = {"_index": self.alias("decisions"), "_id": decision_key, "routing": chat}
        ops.append(({"create": meta}, Q.decision_source(decision)))
        try:  # one bulk, the decision last: items of one chat (one shard) are applied in order
            results = await self._bulk(ops)
        except BulkError:  # an effect failed: forget the decision so a redelivery applies it again
            await self.es.options(ignore_status=404).delete(
                index=self.alias("decisions"), id=decision_key, routing=chat, refresh=self.refresh
            )
            raise
        return results[-1].get("status") == 201

    async def _decision_state(
        self, chat_id: str, decision_key: str, target: str | None
    ) -> tuple[bool, MemoryRecord | None]:
        """In one real-time read: was the decision applied, and the target memory if it is live."""
        docs = [
            {
                "_index": self.alias("decisions"),
                "_id": decision_key,
                "routing": chat_id,
                "_source": ["chat_id"],
            }
        ]
        if target:
            docs.append(
                {"_index": self.alias("memories"), "_id": Q.es_id(chat_id, target), "routing": chat_id}
            )
        got = [d["_source"] if d.get("found") and d["_source"].get("chat_id") == chat_id else None
               for d in (await self.es.mget(docs=docs))["docs"]]  # fmt: skip
        memory = got[1] if target else None
        live = (
            MemoryRecord.model_validate(memory["record"])
            if memory and memory.get("valid_to") is None
            else None
        )
        return got[0] is not None, live

    def _close_ops(
        self, chat_id: str, live: MemoryRecord, at: datetime, by: str | None
    ) -> list[tuple[dict[str, Any], dict[str, Any] | None]]:
        """Updates closing a live memory version at ``at``: its record and its doc."""
        closed = live.model_copy(update={"valid_to": at, "superseded_by": by})
        key = Q.es_id(chat_id, live.memory_id)
        patch = {"valid_to": at.isoformat(), "superseded_by": by, "record": closed.model_dump(mode="json")}
        return [
            ({"update": {"_index": self.alias("memories"), "_id": key, "routing": chat_id}}, {"doc": patch}),
            ({"update": {"_index": self.alias("docs"), "_id": key, "routing": chat_id}},
             {"doc": {"valid_to": at.isoformat()}}),
        ]  # fmt: skip

    async def get_memory(self, chat_id: str, memory_id: str) -> MemoryRecord | None:
        src = (await self._mget("memories", chat_id, [memory_id])).get(memory_id)
        return MemoryRecord.model_validate(src["record"]) if src else None

    async def list_memories(self, chat_id: str, *, live_only: bool = True) -> list[MemoryRecord]:
        query = Q.build_chat_query(chat_id, live_only=live_only)
        rows = await self._scan("memories", query, ["valid_from_epoch", "seq", "memory_id"], chat_id)
        return [MemoryRecord.model_validate(r["record"]) for r in rows]

    async def find_memories(self, chat_id: str, query: MemoryFilter) -> list[MemoryRecord]:
        return await _find_memories(self, chat_id, query)

    async def similar_memories(
        self, chat_id: str, vector: np.ndarray, *, k: int = 10, subject: str | None = None
    ) -> list[tuple[MemoryRecord, float]]:
        """Live memory records of the chat (optionally only about ``subject``) by cosine, best first."""
        if k <= 0 or self.dim is None:
            return []
        [query] = self._check_vectors(vector, 1) or [None]
        if query is None:
            return []
        resp = await self._search("docs", chat_id, Q.build_similar_knn(chat_id, query, k, subject))
        ranked = [(h["_source"]["doc_id"], Q.cosine_from_score(h["_score"])) for h in resp["hits"]["hits"]]
        records = await self._mget("memories", chat_id, [doc_id for doc_id, _ in ranked])
        return [(MemoryRecord.model_validate(records[d]["record"]), s) for d, s in ranked if d in records]

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
            vec = self._check_vectors(np.asarray(q.vector, dtype=np.float32), 1)[0] if self.dim else None
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

    async def _search(self, kind: str, chat_id: str, body: dict[str, Any], **extra: Any) -> Any:
        return await self.es.search(index=self.alias(kind), routing=chat_id, **Q.search_kwargs(body), **extra)

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
            "_source": {"excludes": Q.DOC_SOURCE_EXCLUDES},
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
        chat = topic.chat_id
        meta = {"_index": self.alias("topics"), "_id": Q.es_id(chat, topic.topic_id), "routing": chat}
        ops: list[tuple[dict[str, Any], dict[str, Any] | None]] = [
            ({"index": meta}, Q.topic_source(topic, self._next_seq(1)))
        ]
        for m in topic.message_ids:
            key = Q.es_id(chat, Q.turn_doc_id(chat, m))
            ops.append(({"update": {"_index": self.alias("docs"), "_id": key, "routing": chat}},
                        {"doc": {"topic_id": topic.topic_id}}))  # fmt: skip
        await self._bulk(ops)

    async def list_topics(self, chat_id: str) -> list[TopicSummary]:
        rows = await self._scan(
            "topics", Q.build_chat_query(chat_id), ["started_epoch", "seq", "topic_id"], chat_id
        )
        return [TopicSummary.model_validate(r["topic"]) for r in rows]

    async def chats(self) -> list[str]:
        index = ",".join(self.alias(k) for k in ("messages", "docs", "topics"))
        found: set[str] = set()
        after: dict[str, Any] | None = None
        while True:
            source = {"sources": [{"chat": {"terms": {"field": "chat_id"}}}], "size": _PAGE}
            aggs = {"c": {"composite": {**source, **({"after": after} if after else {})}}}
            try:
                resp = await self.es.search(index=index, size=0, aggs=aggs)
            except ApiError as e:  # no composite aggregation (some compatible servers): one terms page
                if e.status_code != 400 or after is not None:
                    raise
                resp = await self.es.search(index=index, size=0,
                                            aggs={"c": {"terms": {"field": "chat_id", "size": 65_536}}})  # fmt: skip
                return sorted(b["key"] for b in resp["aggregations"]["c"]["buckets"])
            agg = resp["aggregations"]["c"]
            found.update(b["key"]["chat"] for b in agg["buckets"])
            after = agg.get("after_key")
            if not agg["buckets"] or after is None:
                return sorted(found)

    async def delete_chat(self, chat_id: str) -> int:
        """Remove everything of a chat; returns the number of messages, docs and topics removed."""
        return (await es_delete.forget_chat(self, chat_id)).removed

    async def delete_user(self, chat_id: str | None, sender: str) -> int:
        """Remove a sender's messages and everything derived from them (:mod:`retrieval.es_delete`);
        ``chat_id`` None means every chat. Returns the number of messages and docs removed."""
        chats = [chat_id] if chat_id is not None else await self.chats()
        return sum([(await es_delete.forget_user(self, chat, sender)).removed for chat in chats])

    async def forget_user(self, chat_id: str, sender: str, message_ids: Collection[str] = ()) -> Forgotten:
        """:meth:`delete_user` in one chat, also for ``message_ids`` known from elsewhere; what went."""
        return await es_delete.forget_user(self, chat_id, sender, message_ids)

    async def forget_chat(self, chat_id: str) -> Forgotten:
        return await es_delete.forget_chat(self, chat_id)

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
