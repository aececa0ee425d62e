"""What the router may keep from one read of the store to the next, for a store that says when it was written.

The embedded SQLite store knows whether anything was written since a read (by any connection: ``PRAGMA
data_version`` and the connection's own changes: its ``until_write``). It keeps the
BM25 legs' rankings until then (so one run ahead, while a question is embedded, is not run twice), and a dict
for what a caller derives from its reads (emptied on the next write). Other stores keep nothing: every read is
made again.
"""

from __future__ import annotations

import sqlite3
from typing import Any


def _db(store: object) -> sqlite3.Connection | None:
    db = getattr(store, "db", None)
    return db if isinstance(db, sqlite3.Connection) else None


def memoises_bm25(store: object) -> bool:
    """Whether ``store`` keeps its BM25 legs' rankings until its next write (the embedded SQLite store,
    :func:`backends.sqlite.search.bm25`), so that a BM25 search run while the question is being embedded
    saves the hybrid search after it its BM25 leg (a store without the memo would only search twice)."""
    return _db(store) is not None


def until_write(store: object) -> dict[Any, Any] | None:
    """A dict the store empties on its next write (any connection's), for values derived from its reads
    alone; None for a store that cannot tell (derive again every time). Keys name what was read (``("topic
    participants", chat_id)``); values must not be changed by whoever reads them."""
    written = getattr(store, "until_write", None)
    return None if written is None or _db(store) is None else written()
