"""The embedded store's tables (DDL) and the row helpers shared by its writes and queries.

Tables: ``messages`` (the raw chat), ``docs`` (everything searchable: turns and memory records, one row
each, with ``docs_fts`` the FTS5 index over pre-tokenised text and ``vectors`` their L2-normalised
embeddings; ``docs_closed`` indexes the invalidated versions, which the router asks for on every
question), ``memories`` (every version of every memory record), ``decisions`` (applied consolidator
decisions, for idempotence) and ``topics``. Every row carries ``chat_id``; ``chat_versions`` (keyed by
:func:`chat_token`) counts each chat's vector changes for other connections' caches
(:mod:`backends.sqlite.vectors`). ``CREATE ... IF NOT EXISTS`` adds a new table to an existing file.
"""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime

from language.text import tokenize
from retrieval.protocols import Doc
from schemas import ChatMessage

__all__ = ["DOC_COLS", "INSERT_DOC", "SCHEMA", "chat_token", "epoch", "iso", "row_to_doc", "turn_body"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS messages (
    chat_id TEXT NOT NULL, message_id TEXT NOT NULL, sender TEXT NOT NULL, ts_epoch REAL NOT NULL,
    payload TEXT NOT NULL, PRIMARY KEY (chat_id, message_id));
CREATE INDEX IF NOT EXISTS messages_by_ts ON messages (chat_id, ts_epoch);
CREATE INDEX IF NOT EXISTS messages_by_sender ON messages (chat_id, sender);
CREATE TABLE IF NOT EXISTS docs (
    rid INTEGER PRIMARY KEY, doc_id TEXT NOT NULL UNIQUE, chat_id TEXT NOT NULL, kind TEXT NOT NULL,
    text TEXT NOT NULL, speaker TEXT, sender TEXT, ts TEXT NOT NULL, ts_epoch REAL NOT NULL, valid_to TEXT,
    topic_id TEXT, source_message_ids TEXT NOT NULL, entities TEXT NOT NULL, memory TEXT);
CREATE INDEX IF NOT EXISTS docs_by_chat ON docs (chat_id, kind, ts_epoch);
CREATE INDEX IF NOT EXISTS docs_closed ON docs (chat_id, kind, ts_epoch) WHERE valid_to IS NOT NULL;
CREATE VIRTUAL TABLE IF NOT EXISTS docs_fts USING fts5 (body, chat, tokenize = 'unicode61 remove_diacritics 0');
CREATE TABLE IF NOT EXISTS vectors (doc_id TEXT PRIMARY KEY, chat_id TEXT NOT NULL, vec BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS vectors_by_chat ON vectors (chat_id);
CREATE TABLE IF NOT EXISTS memories (
    memory_id TEXT PRIMARY KEY, chat_id TEXT NOT NULL, subject TEXT, attribute TEXT, speaker TEXT,
    valid_from TEXT NOT NULL, valid_to TEXT, superseded_by TEXT, version INTEGER NOT NULL,
    record TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS memories_by_chat ON memories (chat_id, subject);
CREATE INDEX IF NOT EXISTS memories_by_attribute ON memories (chat_id, attribute);
CREATE TABLE IF NOT EXISTS decisions (
    decision_id TEXT PRIMARY KEY, chat_id TEXT NOT NULL, op TEXT NOT NULL, memory_id TEXT,
    applied TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS decisions_by_chat ON decisions (chat_id);
CREATE INDEX IF NOT EXISTS docs_live_profiles ON docs (chat_id, ts_epoch) WHERE kind = 'profile' AND valid_to IS NULL;
CREATE TABLE IF NOT EXISTS doc_sources (
    chat_id TEXT NOT NULL, message_id TEXT NOT NULL, rid INTEGER NOT NULL,
    PRIMARY KEY (chat_id, message_id, rid)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS doc_sources_by_rid ON doc_sources (rid);
CREATE TABLE IF NOT EXISTS topics (
    chat_id TEXT NOT NULL, topic_id TEXT NOT NULL, started_epoch REAL NOT NULL, payload TEXT NOT NULL,
    PRIMARY KEY (chat_id, topic_id));
CREATE TABLE IF NOT EXISTS chat_versions (
    chat TEXT PRIMARY KEY, appends INTEGER NOT NULL DEFAULT 0, closes INTEGER NOT NULL DEFAULT 0,
    rewrites INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID;
"""
# A memory doc's record is read from its ``memories`` row: ``docs.memory`` is NULL in what this code writes (it
# held a second copy of every record's JSON, a large part of a long chat's file; files written before keep
# theirs, unread, until the version is closed). Joined after ``docs d``, keyed by the doc's id within its chat.
RECORD = "CROSS JOIN memories m ON m.memory_id = d.doc_id AND m.chat_id = d.chat_id"
DOC_COLS = "rid, doc_id, chat_id, kind, text, speaker, ts, valid_to, topic_id, source_message_ids, entities"
INSERT_DOC = (
    "INSERT OR IGNORE INTO docs (doc_id, chat_id, kind, text, speaker, sender, ts, ts_epoch, valid_to,"
    " topic_id, source_message_ids, entities, memory) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)"
)


def epoch(value: datetime) -> float:
    """Seconds since the epoch; naive datetimes (only possible in queries) are taken as UTC."""
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def chat_token(chat_id: str) -> str:
    """An FTS token naming the chat: MATCH is restricted to it, so BM25 work scales with the chat, not the corpus."""
    return "c" + hashlib.blake2b(chat_id.encode(), digest_size=8).hexdigest()


def turn_body(msg: ChatMessage) -> str:
    """FTS text of a turn: speaker and date prefixed to the text (helps BM25 on chat memory)."""
    return " ".join(tokenize(f"{msg.display_name} {msg.ts:%Y-%m-%d} {msg.text}"))


def row_to_doc(row: tuple) -> Doc:
    """A ``SELECT {DOC_COLS}`` row as a :class:`Doc`."""
    _, doc_id, chat_id, kind, text, speaker, ts, valid_to, topic_id, sources, entities = row
    return Doc(
        doc_id=doc_id,
        chat_id=chat_id,
        kind=kind,
        text=text,
        speaker=speaker,
        ts=datetime.fromisoformat(ts),
        valid_to=datetime.fromisoformat(valid_to) if valid_to else None,
        topic_id=topic_id,
        source_message_ids=json.loads(sources),
        entities=json.loads(entities),
    )
