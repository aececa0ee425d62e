"""Turn doc ids of the embedded store: one per (chat, message), never shared by two chats.

A turn's doc id was ``turn:{chat}:{message}``, which reads the same for chat ``A:x`` message ``m1`` and chat
``A`` message ``x:m1``. ``docs.doc_id`` and ``vectors.doc_id`` are unique across the file, so the second of
two such turns was not stored (``INSERT OR IGNORE``): no search found it and its vector was lost. Now the
chat part has its ``%`` and ``:`` percent-encoded, so the first ``:`` after ``turn:`` ends the chat id: a chat
id without either keeps the id it had (``turn:A:x:m1`` is still chat ``A``'s), and a file written before is
brought up to date once, when it is opened (:func:`ensure`). Elasticsearch keys its documents by (chat, doc
id) (:func:`backends.es.mapping.es_id`) and keeps ``turn:{chat}:{message}``.
"""

from __future__ import annotations

import json
import logging
import sqlite3

from backends.sqlite.schema import INSERT_DOC, chat_token, turn_body
from backends.sqlite.vector_cache import Effects
from backends.sqlite.vectors import bump
from schemas import ChatMessage, TopicSummary

__all__ = ["ensure", "turn_doc_id", "turn_prefix"]

log = logging.getLogger(__name__)

_FLAG = "turn_ids_v2"


def turn_prefix(chat_id: str) -> str:
    """``turn:{chat}:``, with ``%`` and ``:`` of the chat id percent-encoded (most chat ids have neither)."""
    if ":" in chat_id or "%" in chat_id:
        chat_id = chat_id.replace("%", "%25").replace(":", "%3A")
    return f"turn:{chat_id}:"


def turn_doc_id(chat_id: str, message_id: str) -> str:
    return turn_prefix(chat_id) + message_id


def ensure(db: sqlite3.Connection) -> None:
    """Bring a file written with the old turn ids up to date, once (the flag in ``meta`` says it is done;
    several processes opening the file at once do it once, in one transaction): the turns of chats whose id
    has ``:`` or ``%`` take their new ids (and their vectors with them), and a turn lost to a clash is
    stored again from its message (without a vector: ``memstream replay`` embeds it)."""
    if db.execute("SELECT 1 FROM meta WHERE key = ?", (_FLAG,)).fetchone():
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        if not db.execute("SELECT 1 FROM meta WHERE key = ?", (_FLAG,)).fetchone():
            odd, suspects = _chats(db)
            _rename(db, odd)
            restored = _restore(db, suspects)
            if restored:
                log.warning("restored %d turn(s) that a clash of doc ids had left out of the search index; "
                            "they have no vector until `memstream replay`", restored)  # fmt: skip
            db.execute("INSERT INTO meta (key, value) VALUES (?, '1')", (_FLAG,))
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _chats(db: sqlite3.Connection) -> tuple[list[str], list[str]]:
    """The chats whose turn ids change (a ``:`` or ``%`` in the id), and the chats a clash could have
    touched: two old ids read the same only if one chat id is the other plus ``:`` and more, so those and
    their prefixes up to a ``:``. Most files have none: nothing else is read."""
    chats = {c for (c,) in db.execute("SELECT DISTINCT chat_id FROM messages")}
    odd = sorted(c for c in chats if ":" in c or "%" in c)
    parts = [c.split(":") for c in odd]
    prefixes = {":".join(p[:k]) for p in parts for k in range(1, len(p))}
    return odd, sorted({c for c in odd if ":" in c} | (prefixes & chats))


def _rename(db: sqlite3.Connection, chats: list[str]) -> None:
    """New ids for the turns of ``chats`` (with ``:`` or ``%``): first to a placeholder each (an old id may
    equal another row's new one until that row is renamed too), then to the new id."""
    moves = []
    for chat in chats:
        rows = db.execute("SELECT rid, doc_id, source_message_ids FROM docs WHERE chat_id = ? AND kind = 'turn'",
                          (chat,)).fetchall()  # fmt: skip
        moves += [(rid, old, chat, turn_doc_id(chat, ids[0])) for rid, old, src in rows
                  if (ids := json.loads(src or "[]"))]  # fmt: skip - a turn cites its own message
    moves = [m for m in moves if m[1] != m[3]]
    for rid, old, chat, _ in moves:
        db.execute("UPDATE docs SET doc_id = ? WHERE rid = ?", (f"\x1f{rid}", rid))
        db.execute(
            "UPDATE vectors SET doc_id = ? WHERE doc_id = ? AND chat_id = ?", (f"\x1f{rid}", old, chat)
        )
    for rid, _, chat, new in moves:
        db.execute("UPDATE docs SET doc_id = ? WHERE rid = ?", (new, rid))
        db.execute(
            "UPDATE vectors SET doc_id = ? WHERE doc_id = ? AND chat_id = ?", (new, f"\x1f{rid}", chat)
        )


def _restore(db: sqlite3.Connection, chats: list[str]) -> int:
    """Store again the turn doc of each message of ``chats`` that has none (only a clash left one out): its
    text, speaker, time and topic, FTS-indexed, no vector."""
    rows = [r for c in chats for r in db.execute(
        "SELECT chat_id, message_id, payload FROM messages WHERE chat_id = ?", (c,)).fetchall()]  # fmt: skip
    lost = [msg for chat, m, p in rows
            if db.execute("SELECT 1 FROM docs WHERE doc_id = ?", (turn_doc_id(chat, m),)).fetchone() is None
            and (msg := _message(p)) is not None]  # fmt: skip
    topics: dict[str, dict[str, str]] = {}  # chat -> message id -> topic id
    for m in lost:
        if m.chat_id not in topics:
            topics[m.chat_id] = {mid: t.topic_id for (p,) in db.execute(
                "SELECT payload FROM topics WHERE chat_id = ? ORDER BY started_epoch", (m.chat_id,))
                for t in [TopicSummary.model_validate_json(p)] for mid in t.message_ids}  # fmt: skip
        row = (turn_doc_id(m.chat_id, m.message_id), m.chat_id, "turn", m.text, m.display_name, m.sender,
               m.ts.isoformat(), m.ts.timestamp(), None, topics[m.chat_id].get(m.message_id),
               json.dumps([m.message_id]), "[]", None)  # fmt: skip
        rid = db.execute(INSERT_DOC, row).lastrowid
        if m.text.strip():
            db.execute("INSERT INTO docs_fts (rowid, body, chat) VALUES (?,?,?)",
                       (rid, turn_body(m), chat_token(m.chat_id)))  # fmt: skip
        # its vector, when the clash kept it (the other chat's turn had none): still under the old id
        db.execute("UPDATE vectors SET doc_id = ? WHERE doc_id = ? AND chat_id = ?",
                   (row[0], f"turn:{m.chat_id}:{m.message_id}", m.chat_id))  # fmt: skip
    bump(db, Effects(stale={m.chat_id for m in lost}))  # other connections' vector caches of these chats: reload
    return len(lost)


def _message(payload: str) -> ChatMessage | None:
    try:
        return ChatMessage.model_validate_json(payload)
    except ValueError:  # a row this code cannot read: left as it is (the file still opens)
        log.warning("a stored message could not be read while restoring turn docs; skipped")
        return None
