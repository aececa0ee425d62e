"""The embedded ``MemoryStore``: SQLite (WAL) + FTS5 BM25 over pre-tokenised text + numpy cosine kNN.

SQLite calls run on the event-loop thread (each is sub-millisecond to a few ms and a write batch is one
transaction), so no statement ever interleaves with another coroutine's transaction. Every statement that
reads or writes chat data is filtered by ``chat_id``; kNN only ever sees the vectors of the queried chat.
Tables in :mod:`backends.sqlite.schema`, writes in :mod:`backends.sqlite.writes`, queries in
:mod:`backends.sqlite.search` (edits, lookups and deletion in ``sqlite_edit/lookup/delete``); the
per-chat vector caches follow other connections' writes through :mod:`backends.sqlite.vectors`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from agents.profile import kept_versions
from backends.sqlite import search as sqlite_search
from backends.sqlite import sources as doc_sources
from backends.sqlite import turn_ids as turn_ids
from backends.sqlite.delete import drop_memory, forget_chat, forget_user
from backends.sqlite.edit import replace_message as _replace_message
from backends.sqlite.lookup import find_memories as _find_memories
from backends.sqlite.lookup import nearest_records
from backends.sqlite.schema import SCHEMA, chat_token, epoch, turn_body
from backends.sqlite.turn_ids import turn_doc_id
from backends.sqlite.util import chunks, marks, open_sqlite
from backends.sqlite.vector_cache import ChatVectors as _ChatVectors
from backends.sqlite.vector_cache import Effects as _Effects
from backends.sqlite.vectors import DEFAULT_MAX_BYTES as _MAX_BYTES
from backends.sqlite.vectors import Caches as _Caches
from backends.sqlite.vectors import bump as _bump
from backends.sqlite.vectors import turn_vectors
from backends.sqlite.writes import close_memory, insert_memory, put_doc
from language.text import parse_json
from retrieval.deletion import Forgotten
from retrieval.protocols import Hit, MemoryFilter, SearchQuery, check_decision
from schemas import ChatMessage, DecisionOp, MemoryDecision, MemoryRecord, TopicSummary


class SQLiteStore:
    """``MemoryStore`` over one SQLite file (or ``":memory:"``). Call :meth:`bootstrap` before use."""

    def __init__(self, path: str | Path, dim: int | None = None, *, vector_cache_bytes: int = _MAX_BYTES) -> None:
        self.path = str(path)
        self.dim = dim
        self._conn: sqlite3.Connection | None = None
        self._vectors = _Caches(vector_cache_bytes)
        self._dim_recorded = False

    @property
    def vector_cache_bytes(self) -> int:
        """How much memory this connection's per-chat vector matrices may take before the chats used least
        recently are dropped (and loaded again on their next search); ``Settings.vector_cache_mb``."""
        return self._vectors.max_bytes

    @vector_cache_bytes.setter
    def vector_cache_bytes(self, value: int) -> None:
        self._vectors.max_bytes = int(value)

    # ---- lifecycle -------------------------------------------------------------------------------

    async def bootstrap(self) -> None:
        if self._conn is not None:
            return
        conn, recorded = open_sqlite(self.path, SCHEMA, self.dim, "store")
        doc_sources.ensure(conn)  # a file written before the sources index: filled once
        turn_ids.ensure(conn)  # a file written with the old turn ids: brought up to date once
        if recorded is not None:
            self.dim, self._dim_recorded = recorded, True
        self._conn = conn

    async def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        self._vectors.clear()

    @property
    def db(self) -> sqlite3.Connection:
        if self._conn is None:
            raise RuntimeError("SQLiteStore used before bootstrap() (or after close())")
        return self._conn

    def until_write(self) -> dict[Any, Any]:  # emptied on the next write by any connection (retrieval.store_memo)
        return sqlite_search.until_write(self.db)

    @contextmanager
    def transaction(self) -> Iterator[tuple[sqlite3.Connection, _Effects]]:
        """One transaction; it bumps the versions of the chats whose vectors it changed (for the caches of
        other connections), and on commit its effects are applied to this connection's caches."""
        db, fx = self.db, _Effects()
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db, fx
            bumped = _bump(db, fx)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        self._vectors.committed(fx, bumped)

    # ---- vectors ---------------------------------------------------------------------------------

    def _check_vectors(self, vectors: np.ndarray | None, n: int, *, stored: bool = True) -> np.ndarray | None:
        """Validate shape/dimension and L2-normalise; the first stored vectors fix the store's dimension."""
        if vectors is None:
            return None
        v = np.asarray(vectors, dtype=np.float32)
        v = v.reshape(1, -1) if v.ndim == 1 else v
        if v.shape[0] != n:
            raise ValueError(f"{v.shape[0]} vectors for {n} items")
        if self.dim is None:
            self.dim = int(v.shape[1])
        if v.shape[1] != self.dim:
            raise ValueError(f"vectors are {v.shape[1]}-d, store is {self.dim}-d")
        if stored and not self._dim_recorded:
            self.db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('dim', ?)", (str(self.dim),))
            self._dim_recorded = True
        norms = np.linalg.norm(v, axis=1, keepdims=True)
        return v / np.where(norms == 0.0, 1.0, norms)

    def _chat_vectors(self, chat_id: str) -> _ChatVectors | None:
        """The chat's vectors as committed, by whichever connection (:mod:`backends.sqlite.vectors`)."""
        if self.dim is None:  # another process may have stored the first vectors since bootstrap
            row = self.db.execute("SELECT value FROM meta WHERE key = 'dim'").fetchone()
            if row is None:
                return None
            self.dim, self._dim_recorded = int(row[0]), True
        return self._vectors.get(self.db, chat_id, self.dim)

    # ---- messages --------------------------------------------------------------------------------

    async def upsert_messages(self, messages: list[ChatMessage], vectors: np.ndarray | None) -> int:
        """Store messages and their turn docs; idempotent by (chat_id, message_id), first write wins.

        ``vectors`` (one row per message) are optional; a turn that has no vector yet gets one, an existing
        vector is kept. Returns how many messages were new.
        """
        if not messages:
            return 0
        vecs = self._check_vectors(vectors, len(messages))
        with self.transaction() as (db, fx):
            before = db.total_changes
            db.executemany(
                "INSERT OR IGNORE INTO messages (chat_id, message_id, sender, ts_epoch, payload) VALUES (?,?,?,?,?)",
                [
                    (m.chat_id, m.message_id, m.sender, m.ts.timestamp(), m.model_dump_json())
                    for m in messages
                ],
            )
            added = db.total_changes - before
            for i, m in enumerate(messages):
                row = (turn_doc_id(m.chat_id, m.message_id), m.chat_id, "turn", m.text, m.display_name, m.sender,
                       m.ts.isoformat(), m.ts.timestamp(), None, None, json.dumps([m.message_id]), "[]", None)  # fmt: skip
                put_doc(db, fx, row, turn_body(m), None if vecs is None else vecs[i])
        return added

    async def replace_message(self, message: ChatMessage, vector: np.ndarray | None) -> bool:
        """An edit: the stored message and its turn doc take the new text (and vector); False if unknown."""
        vec = self._check_vectors(vector, 1) if vector is not None and message.text.strip() else None
        with self.transaction() as (db, fx):
            fx.stale.add(message.chat_id)
            rid = _replace_message(db, message, None if vec is None else vec[0], turn_body(message),
                                   chat_token(message.chat_id))  # fmt: skip
        return rid is not None

    async def get_messages(self, chat_id: str, message_ids: list[str]) -> list[ChatMessage]:
        """The stored messages among ``message_ids``, in the order asked (unknown ids are skipped)."""
        found: dict[str, str] = {}
        for chunk in chunks(list(dict.fromkeys(message_ids))):
            found.update(
                self.db.execute(
                    f"SELECT message_id, payload FROM messages WHERE chat_id = ? AND message_id IN ({marks(chunk)})",
                    (chat_id, *chunk),
                ).fetchall()
            )
        return [parse_json(ChatMessage, found[i]) for i in dict.fromkeys(message_ids) if i in found]

    async def get_messages_in(self, keys: Sequence[tuple[str, str]]) -> list[ChatMessage]:
        """The stored messages among ``(chat_id, message_id)`` keys of any chats, in the order asked."""
        found = {(m.chat_id, m.message_id): m for c, ids in _by_chat(keys).items() for m in await self.get_messages(c, ids)}
        return [found[k] for k in dict.fromkeys(keys) if k in found]

    async def list_messages(
        self, chat_id: str, *, since: datetime | None = None, until: datetime | None = None
    ) -> list[ChatMessage]:
        sql, args = "SELECT payload FROM messages WHERE chat_id = ?", [chat_id]
        if since is not None:
            sql, args = sql + " AND ts_epoch >= ?", [*args, epoch(since)]
        if until is not None:
            sql, args = sql + " AND ts_epoch <= ?", [*args, epoch(until)]
        rows = self.db.execute(sql + " ORDER BY ts_epoch, rowid", args).fetchall()
        return [parse_json(ChatMessage, r[0]) for r in rows]

    # ---- memories --------------------------------------------------------------------------------

    async def apply_decision(self, decision: MemoryDecision, vector: np.ndarray | None) -> bool:
        """Apply one consolidator decision; False (and no change) if this decision id was applied before."""
        check_decision(decision)
        if self._applied(decision):
            return False
        vec = self._check_vectors(vector, 1) if vector is not None and decision.record is not None else None
        with self.transaction() as (db, fx):
            _apply(db, fx, decision, None if vec is None else vec[0])
        return True

    async def apply_decisions(self, decisions: list[MemoryDecision], vectors: list[np.ndarray | None]) -> int:
        """:meth:`apply_decision` for each decision in order, in one transaction; returns how many changed
        the store. An invalid decision raises after the ones before it are committed, as one call each would."""
        applied, error = 0, None
        with self.transaction() as (db, fx):
            for decision, vector in zip(decisions, vectors, strict=True):
                try:
                    check_decision(decision)
                    if self._applied(decision):
                        continue
                    vec = self._check_vectors(vector, 1) if vector is not None and decision.record else None
                except ValueError as exc:
                    error = exc
                    break
                _apply(db, fx, decision, None if vec is None else vec[0])
                applied += 1
        if error is not None:
            raise error
        return applied

    def _applied(self, decision: MemoryDecision) -> bool:
        return self.db.execute(
            "SELECT 1 FROM decisions WHERE decision_id = ? AND chat_id = ?", (decision.decision_id, decision.chat_id)
        ).fetchone() is not None  # fmt: skip

    async def get_memory(self, chat_id: str, memory_id: str) -> MemoryRecord | None:
        row = self.db.execute(
            "SELECT record FROM memories WHERE chat_id = ? AND memory_id = ?", (chat_id, memory_id)
        ).fetchone()
        return MemoryRecord.model_validate_json(row[0]) if row else None

    async def list_memories(self, chat_id: str, *, live_only: bool = True) -> list[MemoryRecord]:
        sql = "SELECT record FROM memories WHERE chat_id = ?" + (" AND valid_to IS NULL" if live_only else "")
        rows = self.db.execute(sql + " ORDER BY valid_from, rowid", (chat_id,)).fetchall()
        return [MemoryRecord.model_validate_json(r[0]) for r in rows]

    async def find_memories(self, chat_id: str, query: MemoryFilter) -> list[MemoryRecord]:
        return _find_memories(self.db, chat_id, query)

    async def turn_vectors(self, chat_id: str, message_ids: list[str]) -> dict[str, np.ndarray]:
        """The stored vectors of these messages' turns (message id -> vector; none for a turn without one)."""
        ids = {turn_doc_id(chat_id, m): m for m in dict.fromkeys(message_ids)}
        cv = self._chat_vectors(chat_id) if ids else None
        return turn_vectors(self.db, chat_id, ids, cv)

    async def turn_vectors_in(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], np.ndarray]:
        """:meth:`turn_vectors` of any chats (in process: a read per chat)."""
        return {(c, m): v for c, ids in _by_chat(keys).items() for m, v in (await self.turn_vectors(c, ids)).items()}

    async def similar_memories(
        self, chat_id: str, vector: np.ndarray, *, k: int = 10, subject: str | None = None
    ) -> list[tuple[MemoryRecord, float]]:
        """Live memory records of the chat (optionally only about ``subject``) by cosine, best first."""
        return self._similar(chat_id, vector, 1, k, subject)[0]

    async def similar_memories_many(
        self, chat_id: str, vectors: np.ndarray, *, k: int = 10
    ) -> list[list[tuple[MemoryRecord, float]]]:
        """:meth:`similar_memories` of each vector, in one pass (:func:`backends.sqlite.lookup.nearest_records`)."""
        return self._similar(chat_id, vectors, len(vectors), k, None)

    def _similar(
        self, chat_id: str, vectors: np.ndarray, n: int, k: int, subject: str | None
    ) -> list[list[tuple[MemoryRecord, float]]]:
        cv = self._chat_vectors(chat_id)
        if cv is None or k <= 0:
            return [[] for _ in range(n)]
        return nearest_records(self.db, chat_id, cv, self._check_vectors(vectors, n, stored=False), k, subject)

    # ---- search ----------------------------------------------------------------------------------

    async def search(self, query: SearchQuery) -> list[Hit]:
        """BM25, cosine kNN or both fused by RRF, always within ``query.chat_id`` (:mod:`backends.sqlite.search`).

        ``scores`` carries ``bm25`` (positive BM25, higher is better) and ``bm25_rank``, ``cosine`` and
        ``knn_rank``, and ``rrf`` for hybrid. Hybrid without a query vector degrades to BM25 candidates.
        """
        return sqlite_search.search(self.db, query, lambda limit: self._knn(query, limit))

    def _knn(self, q: SearchQuery, limit: int) -> list[tuple[int, float]]:
        if q.vector is None:
            return []
        cv = self._chat_vectors(q.chat_id)
        if cv is None:
            return []
        query = self._check_vectors(np.asarray(q.vector, dtype=np.float32), 1, stored=False)[0]
        since = epoch(q.since) if q.since else None
        until = epoch(q.until) if q.until else None
        return cv.top(query, cv.mask(q.kinds, since, until, not q.include_superseded), limit)

    # ---- topics, chats, deletion, export ---------------------------------------------------------

    async def upsert_topic(self, topic: TopicSummary) -> None:
        """Store the topic's latest state and tag its messages' turn docs with its id."""
        await self.upsert_topics([topic])

    async def upsert_topics(self, topics: Sequence[TopicSummary]) -> None:
        """:meth:`upsert_topic` for each of ``topics``, in order, in one transaction."""
        if not topics:
            return
        with self.transaction() as (db, _):
            for topic in topics:
                db.execute(
                    "INSERT OR REPLACE INTO topics (chat_id, topic_id, started_epoch, payload) VALUES (?,?,?,?)",
                    (topic.chat_id, topic.topic_id, topic.started_at.timestamp(), topic.model_dump_json()),
                )
                doc_ids = [turn_doc_id(topic.chat_id, m) for m in topic.message_ids]
                for chunk in chunks(doc_ids):
                    db.execute(
                        f"UPDATE docs SET topic_id = ? WHERE +chat_id = ? AND doc_id IN ({marks(chunk)})",
                        (topic.topic_id, topic.chat_id, *chunk),
                    )

    async def list_topics(self, chat_id: str) -> list[TopicSummary]:
        rows = self.db.execute(
            "SELECT payload FROM topics WHERE chat_id = ? ORDER BY started_epoch, rowid", (chat_id,)
        ).fetchall()
        return [TopicSummary.model_validate_json(r[0]) for r in rows]

    async def chats(self) -> list[str]:
        rows = self.db.execute(
            "SELECT chat_id FROM messages UNION SELECT chat_id FROM docs UNION SELECT chat_id FROM topics"
        ).fetchall()
        return sorted(r[0] for r in rows)

    async def delete_chat(self, chat_id: str) -> int:
        """Remove everything of a chat; returns the number of messages, docs and topics removed."""
        return (await forget_chat(self, chat_id)).removed

    async def delete_user(self, chat_id: str | None, sender: str) -> int:
        """Remove a sender's messages and everything derived from them (:mod:`backends.sqlite.delete`);
        ``chat_id`` None means every chat. Returns the number of messages and docs removed."""
        chats = [chat_id] if chat_id is not None else await self.chats()
        return sum([(await forget_user(self, chat, sender)).removed for chat in chats])

    async def forget_user(self, chat_id: str, sender: str, message_ids: Collection[str] = ()) -> Forgotten:
        """:meth:`delete_user` in one chat, also for ``message_ids`` known from elsewhere; what went."""
        return await forget_user(self, chat_id, sender, message_ids)

    async def forget_chat(self, chat_id: str) -> Forgotten:
        return await forget_chat(self, chat_id)

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


# the superseded versions of one (attribute, subject) past the ``keep`` superseded last (by when, whatever the
# offset; not by version: a profile emptied and begun again counts from 1) (memories_by_attribute)
_BEYOND_KEPT = (
    "SELECT memory_id FROM memories WHERE chat_id = ? AND attribute = ? AND subject IS ? AND valid_to IS NOT NULL"
    " ORDER BY julianday(valid_to) DESC, memory_id DESC LIMIT -1 OFFSET ?"
)


def _apply(db: sqlite3.Connection, fx: _Effects, decision: MemoryDecision, vec: np.ndarray | None) -> None:
    """The writes of one decision not applied before, inside the caller's transaction."""
    record = decision.record
    if decision.op in (DecisionOp.UPDATE, DecisionOp.DELETE) and decision.target_memory_id:
        new_id = record.memory_id if decision.op == DecisionOp.UPDATE and record else None
        close_memory(db, fx, decision.chat_id, decision.target_memory_id, decision.at, new_id)
    if decision.op in (DecisionOp.ADD, DecisionOp.UPDATE) and record is not None:
        insert_memory(db, fx, record, vec)
        keep = kept_versions(record) if decision.op == DecisionOp.UPDATE else None
        if keep is not None:
            for (memory_id,) in db.execute(_BEYOND_KEPT, (record.chat_id, record.attribute, record.subject, keep)).fetchall():
                drop_memory(db, record.chat_id, memory_id)
    db.execute(
        "INSERT INTO decisions (decision_id, chat_id, op, memory_id, applied) VALUES (?,?,?,?,?)",
        (decision.decision_id, decision.chat_id, decision.op.value,
         record.memory_id if record else decision.target_memory_id, decision.at.isoformat()),
    )  # fmt: skip


def _by_chat(keys: Sequence[tuple[str, str]]) -> dict[str, list[str]]:
    """``(chat_id, id)`` keys -> the ids asked of each chat, in order (reads across chats, one per chat)."""
    out: dict[str, list[str]] = {}
    for chat_id, local_id in keys:
        out.setdefault(chat_id, []).append(local_id)
    return out
