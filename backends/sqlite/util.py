"""Opening the embedded SQLite files of the stores and chunked IN lists (shared by the hybrid and graph stores)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator, Sequence, Sized
from pathlib import Path
from typing import Any

from backends.sqlite.scrub import mark_scrubbed


def to_wal(db: sqlite3.Connection, timeout_s: float = 30.0) -> None:
    """Switch to WAL, waiting for the lock it needs. Processes opening one new file at once (``serve
    --workers``) race for it, and SQLite answers 'database is locked' at once instead of calling the busy
    handler when a connection would have to upgrade a lock another one shares (about 1 open in 20 here)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            db.execute("PRAGMA journal_mode=WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def open_sqlite(path: str, schema: str, dim: int | None, label: str) -> tuple[sqlite3.Connection, int | None]:
    """Open ``path`` (WAL), apply ``schema`` and check the recorded vector size against ``dim``.

    Returns the connection and the vector size recorded in the file's ``meta`` table (None if none yet).
    """
    if path != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    fresh = conn.execute("PRAGMA page_count").fetchone()[0] == 0  # never held data written without secure_delete
    to_wal(conn)
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA temp_store=MEMORY")
    conn.execute("PRAGMA secure_delete=ON")  # deleted rows' bytes are zeroed (see backends.sqlite.scrub)
    conn.executescript(schema)
    if fresh:
        mark_scrubbed(conn, "meta")
    row = conn.execute("SELECT value FROM meta WHERE key = 'dim'").fetchone()
    if row is not None and dim is not None and int(row[0]) != dim:
        conn.close()
        raise ValueError(f"{label} {path} holds {row[0]}-d vectors, embedder gives {dim}-d")
    return conn, (int(row[0]) if row is not None else None)


CHUNK = 500  # SQL variables per IN (...) list (SQLite's default limit is 999)


def chunks(items: Sequence[Any], size: int = CHUNK) -> Iterator[Sequence[Any]]:
    """``items`` in slices of at most ``size`` (one IN list each)."""
    for i in range(0, len(items), size):
        yield items[i : i + size]


def marks(items: Sized) -> str:
    """``?,?,…`` — one placeholder per item.

    A query that names rows by key (``doc_id IN (…)``, ``rid IN (…)``) writes its chat filter ``+chat_id = ?``:
    the files keep no table statistics, and from about ten keys on SQLite then prefers the chat's index and
    reads every row of the chat (a topic's ``UPDATE docs`` took 7 ms at 9,000 docs in the chat, 0.2 ms keyed).
    The filter still holds, on each row found."""
    return ",".join("?" * len(items))
