"""Writes of the embedded store inside the caller's transaction: docs (+ FTS row and vector) and memory
versions. Each records what the vector caches must learn in :class:`backends.sqlite.vector_cache.Effects`."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime

import numpy as np

from backends.sqlite import sources as doc_sources
from backends.sqlite.schema import INSERT_DOC, chat_token, iso
from backends.sqlite.vector_cache import Effects
from language.text import tokenize_lines
from schemas import MemoryRecord

__all__ = ["close_memory", "insert_memory", "put_doc"]


def put_doc(
    db: sqlite3.Connection,
    fx: Effects,
    row: tuple,
    body: str,
    vec: np.ndarray | None,
    subject: str | None = None,
    sources: Sequence[str] = (),
) -> None:
    """Insert a doc unless it exists (FTS-indexing only new ones, and indexing their ``sources``,
    :mod:`backends.sqlite.sources`) and its vector unless it has one."""
    doc_id, chat_id, kind, ts_epoch = row[0], row[1], row[2], row[7]
    cur = db.execute(INSERT_DOC, row)
    rid = cur.lastrowid if cur.rowcount == 1 else None
    if rid is not None:
        db.execute(
            "INSERT INTO docs_fts (rowid, body, chat) VALUES (?,?,?)", (rid, body, chat_token(chat_id))
        )
        doc_sources.add(db, rid, chat_id, kind, sources)
    if vec is None:
        return
    cur = db.execute(
        "INSERT OR IGNORE INTO vectors (doc_id, chat_id, vec) VALUES (?,?,?)",
        (doc_id, chat_id, vec.tobytes()),
    )
    if cur.rowcount == 1 and rid is not None:
        fx.added.setdefault(chat_id, []).append((rid, kind, ts_epoch, True, subject, vec))
    elif cur.rowcount == 1:
        fx.stale.add(chat_id)  # an existing doc got its first vector: rebuild that chat's matrix


def insert_memory(db: sqlite3.Connection, fx: Effects, r: MemoryRecord, vec: np.ndarray | None) -> None:
    """A new memory version: its row and its searchable doc."""
    payload = r.model_dump_json()
    db.execute(
        "INSERT OR IGNORE INTO memories (memory_id, chat_id, subject, attribute, speaker, valid_from,"
        " valid_to, superseded_by, version, record) VALUES (?,?,?,?,?,?,?,?,?,?)",
        (r.memory_id, r.chat_id, r.subject, r.attribute, r.speaker, r.valid_from.isoformat(),
         iso(r.valid_to), r.superseded_by, r.version, payload),
    )  # fmt: skip
    row = (r.memory_id, r.chat_id, r.kind.value, r.text, r.speaker, r.speaker, r.valid_from.isoformat(),
           r.valid_from.timestamp(), iso(r.valid_to), r.topic_id, json.dumps(r.source_message_ids),
           json.dumps(r.entities), None)  # fmt: skip  # docs.memory: the record is read from memories (RECORD)
    body = " ".join(tokenize_lines(f"{r.text}\n{r.speaker or ''}"))
    put_doc(db, fx, row, body, vec, r.subject, r.source_message_ids)


def close_memory(
    db: sqlite3.Connection, fx: Effects, chat_id: str, memory_id: str, at: datetime, by: str | None
) -> None:
    """Close a live memory version at ``at`` (row, record JSON and doc); a closed version is left as is."""
    row = db.execute(
        "SELECT record FROM memories WHERE chat_id = ? AND memory_id = ? AND valid_to IS NULL",
        (chat_id, memory_id),
    ).fetchone()
    if row is None:
        return
    closed = MemoryRecord.model_validate_json(row[0]).model_copy(update={"valid_to": at, "superseded_by": by})
    payload = closed.model_dump_json()
    db.execute(
        "UPDATE memories SET valid_to = ?, superseded_by = ?, record = ? WHERE chat_id = ? AND memory_id = ?",
        (at.isoformat(), by, payload, chat_id, memory_id),
    )
    rids = db.execute(
        "UPDATE docs SET valid_to = ?, memory = NULL WHERE chat_id = ? AND doc_id = ? RETURNING rid",
        (at.isoformat(), chat_id, memory_id),
    ).fetchall()
    fx.closed.extend((chat_id, rid) for (rid,) in rids)
