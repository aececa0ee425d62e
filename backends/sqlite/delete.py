"""Deletion in the embedded store (:class:`backends.sqlite.store._Store`): a user's or a chat's data
and everything derived from it, in one transaction, then physically (see :mod:`retrieval.deletion` for what
goes and :mod:`backends.sqlite.scrub` for the bytes).

The FTS5 index keeps a deleted row's terms in its segments until they are merged, so every deletion ends
with an FTS ``optimize`` (merging the segments drops them), the file's free pages are zeroed
(secure_delete) and its WAL is checkpointed and truncated.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

import numpy as np

from backends.sqlite import sources as doc_sources
from backends.sqlite.scrub import erase_freed
from backends.sqlite.turn_ids import turn_prefix
from backends.sqlite.util import chunks as _chunks
from backends.sqlite.util import marks as _marks
from backends.sqlite.vector_cache import Effects
from backends.sqlite.writes import insert_memory
from retrieval.deletion import (
    Forgotten,
    affected_topics,
    doomed_memories,
    restored,
    trim_topic,
)
from schemas import ChatMessage, MemoryRecord, TopicSummary

__all__ = ["drop_memory", "forget_chat", "forget_user"]


class _Store(Protocol):
    """What the deletion needs of :class:`backends.sqlite.store.SQLiteStore` (typed here, not imported)."""

    @property
    def db(self) -> sqlite3.Connection: ...

    def transaction(self) -> AbstractContextManager[tuple[sqlite3.Connection, Effects]]: ...


def delete_docs(
    db: sqlite3.Connection, chat_id: str, where: str, args: Sequence[Any], *, keyed: bool = False
) -> int:
    """Remove matching docs of one chat with their FTS rows and vectors; returns how many. ``keyed``: ``where``
    names the docs by id, and the chat's filter is written ``+chat_id`` (:func:`backends.sqlite.util.marks`)."""
    rows = db.execute(
        f"SELECT rid, doc_id FROM docs WHERE {'+' if keyed else ''}chat_id = ? AND ({where})", (chat_id, *args)
    ).fetchall()
    for chunk in _chunks(rows):
        rids, doc_ids = [r[0] for r in chunk], [r[1] for r in chunk]
        db.execute(f"DELETE FROM docs_fts WHERE rowid IN ({_marks(rids)})", rids)
        db.execute(
            f"DELETE FROM vectors WHERE +chat_id = ? AND doc_id IN ({_marks(doc_ids)})", (chat_id, *doc_ids)
        )
        doc_sources.remove(db, rids)
        db.execute(f"DELETE FROM docs WHERE +chat_id = ? AND rid IN ({_marks(rids)})", (chat_id, *rids))
    return len(rows)


def drop_memory(db: sqlite3.Connection, chat_id: str, memory_id: str) -> None:
    """Remove one memory version for good, its row and its doc (an old superseded version of a profile, whose
    every line its successors carry on: :func:`agents.profile.kept_versions`), inside the caller's transaction;
    the retrieval caches notice the write like any other."""
    delete_docs(db, chat_id, "doc_id = ?", (memory_id,), keyed=True)
    db.execute("DELETE FROM memories WHERE memory_id = ? AND chat_id = ?", (memory_id, chat_id))


def _in(db: sqlite3.Connection, sql: str, chat_id: str, ids: Collection[str]) -> int:
    """Run ``sql`` (with ``{marks}`` for the ids) over ``ids`` in chunks; returns rows changed."""
    return sum(db.execute(sql.format(marks=_marks(c)), (chat_id, *c)).rowcount for c in _chunks(sorted(ids)))


def _scrub(db: sqlite3.Connection) -> None:
    """Merge the FTS segments (dropping deleted rows' terms), zero freed pages, empty the WAL."""
    db.execute("INSERT INTO docs_fts(docs_fts) VALUES ('optimize')")
    erase_freed(db, "meta")


async def forget_chat(store: _Store, chat_id: str) -> Forgotten:
    """Remove everything of a chat; ``removed`` counts its messages, docs and topics."""
    db = store.db
    out = Forgotten()
    for mid, payload in db.execute("SELECT message_id, payload FROM messages WHERE chat_id = ?", (chat_id,)):
        out.message_ids.add(mid)
        out.texts[mid] = ChatMessage.model_validate_json(payload).text
    out.record_texts = [r[0] for r in db.execute("SELECT text FROM docs WHERE chat_id = ? AND kind != 'turn'",
                                                 (chat_id,))]  # fmt: skip
    with store.transaction() as (db, fx):
        fx.stale.add(chat_id)
        out.removed = delete_docs(db, chat_id, "1", ())
        for table in ("messages", "topics"):
            out.removed += db.execute(f"DELETE FROM {table} WHERE chat_id = ?", (chat_id,)).rowcount
        out.memories = db.execute("DELETE FROM memories WHERE chat_id = ?", (chat_id,)).rowcount
        for table in ("decisions", "vectors"):
            db.execute(f"DELETE FROM {table} WHERE chat_id = ?", (chat_id,))
    _scrub(db)
    return out


async def forget_user(
    store: _Store, chat_id: str, sender: str, message_ids: Collection[str] = ()
) -> Forgotten:
    """Remove a sender's messages in one chat (theirs in the store, plus ``message_ids`` known from the log)
    and everything derived from them; reopen what only deleted versions had superseded; write other people's
    profiles back without the deleted lines; trim topics."""
    db = store.db
    out = Forgotten()
    rows = db.execute(
        "SELECT message_id, payload FROM messages WHERE chat_id = ? AND sender = ?", (chat_id, sender)
    ).fetchall()
    msgs = [ChatMessage.model_validate_json(p) for _, p in rows]
    out.message_ids = {m.message_id for m in msgs} | set(message_ids)
    out.texts = {m.message_id: m.text for m in msgs}
    names = db.execute(  # the display names this sender used (turn docs' speaker)
        "SELECT DISTINCT speaker FROM docs WHERE chat_id = ? AND kind = 'turn' AND sender = ?",
        (chat_id, sender),
    ).fetchall()
    out.names = {sender, *(m.display_name for m in msgs), *(n for (n,) in names if n)}
    out.vectors = _turn_vectors(store, chat_id, out.message_ids)
    records = [MemoryRecord.model_validate_json(r[0])
               for r in db.execute("SELECT record FROM memories WHERE chat_id = ?", (chat_id,))]  # fmt: skip
    topics = [TopicSummary.model_validate_json(r[0])
              for r in db.execute("SELECT payload FROM topics WHERE chat_id = ?", (chat_id,))]  # fmt: skip
    touched = affected_topics(records, topics, out.message_ids)
    doomed = doomed_memories(records, out.message_ids, out.names, touched)
    out.memory_ids, out.topic_ids = set(doomed), touched
    back, kept = restored(records, doomed, out.message_ids, out.names)
    out.record_texts = [r.text for r in doomed.values()]
    ids = sorted(out.message_ids)
    with store.transaction() as (db, fx):
        fx.stale.add(chat_id)
        out.removed += delete_docs(db, chat_id, "kind = 'turn' AND sender = ?", (sender,))
        out.removed += sum(
            delete_docs(db, chat_id, f"doc_id IN ({_marks(c)})", c, keyed=True) for c in _chunks(sorted(doomed))
        )
        out.removed += sum(
            delete_docs(db, chat_id, "EXISTS (SELECT 1 FROM json_each(docs.source_message_ids) j"
                                     f" WHERE j.value IN ({_marks(c)}))", c)
            for c in _chunks(ids)
        )  # fmt: skip
        out.memories = _in(
            db, "DELETE FROM memories WHERE +chat_id = ? AND memory_id IN ({marks})", chat_id, doomed
        )
        _in(db, "DELETE FROM decisions WHERE chat_id = ? AND memory_id IN ({marks})", chat_id, doomed)
        for r in kept:
            insert_memory(db, fx, r, None)  # another person's profile, without the deleted lines
        for r in back:
            payload = r.model_dump_json()
            db.execute("UPDATE memories SET valid_to = NULL, superseded_by = NULL, record = ?"
                       " WHERE chat_id = ? AND memory_id = ?", (payload, chat_id, r.memory_id))  # fmt: skip
            db.execute("UPDATE docs SET valid_to = NULL, memory = NULL WHERE chat_id = ? AND doc_id = ?",
                       (chat_id, r.memory_id))  # fmt: skip
        out.reopened = len(back)
        _trim_topics(db, chat_id, out)
        out.removed += _in(
            db, "DELETE FROM messages WHERE chat_id = ? AND message_id IN ({marks})", chat_id, ids
        )
        out.removed += db.execute(
            "DELETE FROM messages WHERE chat_id = ? AND sender = ?", (chat_id, sender)
        ).rowcount
        _untie_replies(db, chat_id, ids)
    _scrub(db)
    return out


def _untie_replies(db: sqlite3.Connection, chat_id: str, ids: Sequence[str]) -> None:
    """Others' messages that answer a deleted one name :data:`schemas.messages.DELETED_REPLY` instead."""
    for chunk in _chunks(list(ids)):
        rows = db.execute(
            "SELECT message_id, payload FROM messages WHERE chat_id = ? AND (json_extract(payload, '$.reply_to')"
            f" IN ({_marks(chunk)}) OR json_extract(payload, '$.metadata.inferred_reply_to') IN ({_marks(chunk)}))",
            (chat_id, *chunk, *chunk),
        ).fetchall()
        for mid, payload in rows:
            untied = ChatMessage.model_validate_json(payload).untied_from(set(chunk))
            if untied is not None:
                db.execute("UPDATE messages SET payload = ? WHERE chat_id = ? AND message_id = ?",
                           (untied.model_dump_json(), chat_id, mid))  # fmt: skip


def _trim_topics(db: sqlite3.Connection, chat_id: str, out: Forgotten) -> None:
    rows = db.execute("SELECT topic_id, payload FROM topics WHERE chat_id = ?", (chat_id,)).fetchall()
    for topic_id, payload in rows:
        topic = TopicSummary.model_validate_json(payload)
        trimmed = trim_topic(topic, out.message_ids, out.names)
        if trimmed is topic:
            continue
        if trimmed is None:
            db.execute("DELETE FROM topics WHERE chat_id = ? AND topic_id = ?", (chat_id, topic_id))
            out.topics_dropped += 1
            continue
        db.execute("UPDATE topics SET payload = ? WHERE chat_id = ? AND topic_id = ?",
                   (trimmed.model_dump_json(), chat_id, topic_id))  # fmt: skip
        out.topics_trimmed += 1


def _turn_vectors(store: _Store, chat_id: str, message_ids: Collection[str]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    prefix = turn_prefix(chat_id)
    for chunk in _chunks([prefix + m for m in sorted(message_ids)]):
        rows = store.db.execute(
            f"SELECT doc_id, vec FROM vectors WHERE +chat_id = ? AND doc_id IN ({_marks(chunk)})",
            (chat_id, *chunk),
        ).fetchall()
        out.update((d[len(prefix) :], np.frombuffer(v, dtype=np.float32).tolist()) for d, v in rows)
    return out
