"""Opening the embedded SQLite files of the stores (shared by the hybrid store and the graph store)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from streams.scrub import mark_scrubbed


def open_sqlite(path: str, schema: str, dim: int | None, label: str) -> tuple[sqlite3.Connection, int | None]:
    """Open ``path`` (WAL), apply ``schema`` and check the recorded vector size against ``dim``.

    Returns the connection and the vector size recorded in the file's ``meta`` table (None if none yet).
    """
    if path != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    fresh = conn.execute("PRAGMA page_count").fetchone()[0] == 0  # never held data written without secure_delete
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA temp_store=MEMORY")
    conn.execute("PRAGMA secure_delete=ON")  # deleted rows' bytes are zeroed (see streams.scrub)
    conn.executescript(schema)
    if fresh:
        mark_scrubbed(conn, "meta")
    row = conn.execute("SELECT value FROM meta WHERE key = 'dim'").fetchone()
    if row is not None and dim is not None and int(row[0]) != dim:
        conn.close()
        raise ValueError(f"{label} {path} holds {row[0]}-d vectors, embedder gives {dim}-d")
    return conn, (int(row[0]) if row is not None else None)
