"""Physical erasure in the embedded SQLite files, after a deletion.

Every file is opened with ``PRAGMA secure_delete=ON``, so a deleted or rewritten row's bytes are overwritten
with zeros in the page (and freed pages are zeroed) instead of lingering in free space. Pages changed since
the last checkpoint also live in the ``-wal`` file: :func:`erase_freed` checkpoints it back into the
database and truncates it to zero bytes. A file written before secure_delete was on may still hold old
bytes in its free space; the first erasure in such a file runs ``VACUUM`` once (rewriting it whole) and
records that in the file's ``meta``-style table, so later deletions never pay for it again (a file
created with secure_delete on is marked at creation: :func:`mark_scrubbed`).
"""

from __future__ import annotations

import sqlite3
import time

__all__ = ["SECURE_DELETE", "erase_freed", "mark_scrubbed", "secure"]

SECURE_DELETE = "PRAGMA secure_delete=ON"
_MARKER = "secure_delete_vacuumed"


def secure(db: sqlite3.Connection) -> sqlite3.Connection:
    """Turn secure_delete on for this connection (it is a per-connection setting)."""
    db.execute(SECURE_DELETE)
    return db


def mark_scrubbed(db: sqlite3.Connection, meta_table: str) -> None:
    """Record that this file needs no ``VACUUM`` before its first erasure (a new file, secure from the start)."""
    db.execute(f"INSERT OR IGNORE INTO {meta_table} (key, value) VALUES (?, '1')", (_MARKER,))


def erase_freed(db: sqlite3.Connection, meta_table: str | None = None, *, attempts: int = 20) -> bool:
    """Zero what deletions freed and empty the WAL: ``VACUUM`` once per file (when ``meta_table``, a
    ``key``/``value`` table, does not record it yet), then ``wal_checkpoint(TRUNCATE)``. Returns whether
    the WAL could be truncated (a reader in another process holding an old snapshot blocks it; retried)."""
    secure(db)
    if meta_table is not None and not db.in_transaction:
        done = db.execute(f"SELECT 1 FROM {meta_table} WHERE key = ?", (_MARKER,)).fetchone()
        if done is None:
            db.execute("VACUUM")
            db.execute(f"INSERT OR REPLACE INTO {meta_table} (key, value) VALUES (?, '1')", (_MARKER,))
    for i in range(attempts):
        row = db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        if row is None or row[0] == 0:
            return True
        time.sleep(min(0.05 * (i + 1), 0.5))
    return False
