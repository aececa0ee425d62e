"""Edits of stored messages in the embedded store: the message and its turn doc take the new text."""

from __future__ import annotations

import json
import sqlite3

import numpy as np

from backends.sqlite.turn_ids import turn_doc_id
from schemas import ChatMessage

__all__ = ["replace_message"]


def replace_message(
    db: sqlite3.Connection, msg: ChatMessage, vec: np.ndarray | None, body: str, chat_token: str
) -> int | None:
    """Rewrite one stored message (payload, turn text, FTS row, vector) inside the caller's transaction.

    Returns the turn doc's rowid, or None when the message is not stored. An empty text (a retraction)
    leaves the turn with no FTS body and no vector, so no search finds it.
    """
    cur = db.execute(
        "UPDATE messages SET payload = ? WHERE chat_id = ? AND message_id = ?",
        (msg.model_dump_json(), msg.chat_id, msg.message_id),
    )
    if cur.rowcount == 0:
        return None
    doc_id = turn_doc_id(msg.chat_id, msg.message_id)
    row = db.execute(
        "SELECT rid FROM docs WHERE chat_id = ? AND doc_id = ?", (msg.chat_id, doc_id)
    ).fetchone()
    if row is None:
        return None
    rid = row[0]
    db.execute(
        "UPDATE docs SET text = ?, speaker = ?, source_message_ids = ? WHERE rid = ?",
        (msg.text, msg.display_name, json.dumps([msg.message_id]), rid),
    )
    db.execute("DELETE FROM docs_fts WHERE rowid = ?", (rid,))
    db.execute("DELETE FROM vectors WHERE chat_id = ? AND doc_id = ?", (msg.chat_id, doc_id))
    if msg.text.strip():
        db.execute("INSERT INTO docs_fts (rowid, body, chat) VALUES (?,?,?)", (rid, body, chat_token))
        if vec is not None:
            db.execute(
                "INSERT INTO vectors (doc_id, chat_id, vec) VALUES (?,?,?)",
                (doc_id, msg.chat_id, vec.tobytes()),
            )
    return rid
