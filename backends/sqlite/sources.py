"""Which memory docs cite which messages, as an index (``doc_sources``): "the records derived from these
messages" (a stale statement's summaries and Q&A, an edit's records) is a keyed lookup, not a scan of every
memory doc of the chat through ``json_each`` (33 ms at 8,000 messages in one chat, and growing with it).

Rows are kept for every doc but turns (a turn cites only itself) and profiles (hundreds of sources a version,
rewritten as the person's statements accumulate: the index would grow with every version; the chat's few live
profiles are read through the ``docs_live_profiles`` partial index instead). A doc's rows are written with it
(:func:`add`) and removed with it (:func:`remove`); a file written before the index existed is filled once when
it is opened (:func:`ensure`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from backends.sqlite.util import chunks, marks

__all__ = ["UNINDEXED_KINDS", "add", "ensure", "remove", "rids_citing"]

UNINDEXED_KINDS = ("turn", "profile")
_FLAG = "doc_sources"


def add(db: sqlite3.Connection, rid: int, chat_id: str, kind: str, sources: Sequence[str]) -> None:
    """Index a new doc's sources (nothing for a turn or a profile)."""
    if kind not in UNINDEXED_KINDS and sources:
        db.executemany(
            "INSERT OR IGNORE INTO doc_sources (chat_id, message_id, rid) VALUES (?,?,?)",
            [(chat_id, m, rid) for m in dict.fromkeys(sources)],
        )


def remove(db: sqlite3.Connection, rids: Sequence[int]) -> None:
    """Forget the sources of docs being deleted."""
    for chunk in chunks(list(rids)):
        db.execute(f"DELETE FROM doc_sources WHERE rid IN ({marks(chunk)})", chunk)


def rids_citing(db: sqlite3.Connection, chat_id: str, message_ids: Sequence[str]) -> set[int]:
    """The indexed docs of ``chat_id`` that cite any of ``message_ids``."""
    out: set[int] = set()
    for chunk in chunks(list(dict.fromkeys(message_ids))):
        sql = f"SELECT rid FROM doc_sources WHERE chat_id = ? AND message_id IN ({marks(chunk)})"
        out.update(r[0] for r in db.execute(sql, (chat_id, *chunk)))
    return out


def ensure(db: sqlite3.Connection) -> None:
    """Fill the index of a file written before it existed, once (the flag in ``meta`` says it is complete);
    several processes opening the file at once fill it once, in one transaction."""
    if db.execute("SELECT 1 FROM meta WHERE key = ?", (_FLAG,)).fetchone():
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        if not db.execute("SELECT 1 FROM meta WHERE key = ?", (_FLAG,)).fetchone():
            db.execute(
                "INSERT OR IGNORE INTO doc_sources (chat_id, message_id, rid) SELECT d.chat_id, j.value, d.rid"
                f" FROM docs d, json_each(d.source_message_ids) j WHERE d.kind NOT IN ({marks(UNINDEXED_KINDS)})",
                UNINDEXED_KINDS,
            )
            db.execute("INSERT INTO meta (key, value) VALUES (?, '1')", (_FLAG,))
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")
