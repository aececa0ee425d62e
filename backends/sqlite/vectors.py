"""The embedded store's per-chat vector caches (:class:`backends.sqlite.vector_cache.ChatVectors`), kept in step
with the file when other connections (the other processes of ``memstream serve --workers``) write to it.

Every write transaction that changes a chat's vectors bumps that chat's row of ``chat_versions`` (one
UPSERT per chat and transaction, :func:`bump`): ``appends`` when it added rows with vectors, ``closes`` when
it invalidated memory versions, ``rewrites`` when it did anything else to them (deleted rows, replaced or
added a vector of an existing doc, reopened a version). A reader notices another connection's commit by
``PRAGMA data_version`` and then reads only the version row of the chat it searches (:meth:`Caches.get`):

- ``rewrites`` changed: the chat's matrix is loaded again (nothing of a deleted row can survive);
- ``appends`` changed: only the rows above the cached highest rid are read and appended (a new row always
  gets a rid above every existing one: SQLite gives ``max(rid) + 1``, and removing the highest rows is a
  rewrite);
- ``closes`` changed: the ``live`` flags are set again from the chat's invalidated rows (a partial index).

Chats another connection did not write keep their caches. The version is read before the rows, so a commit
in between only makes the next check do again what was already done; never a stale answer.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

import numpy as np

from backends.sqlite.schema import chat_token
from backends.sqlite.util import chunks, marks
from backends.sqlite.vector_cache import ChatVectors, Columns, Effects

__all__ = ["DEFAULT_MAX_BYTES", "Caches", "Version", "bump", "turn_vectors"]

Version = tuple[int, int, int]  # (appends, closes, rewrites) of one chat

_BUMP = (
    "INSERT INTO chat_versions (chat, appends, closes, rewrites) VALUES (?,?,?,?) ON CONFLICT (chat) DO UPDATE"
    " SET appends = appends + excluded.appends, closes = closes + excluded.closes,"
    " rewrites = rewrites + excluded.rewrites RETURNING appends, closes, rewrites"
)
_ROWS = (
    "SELECT d.rid, d.kind, d.ts_epoch, d.valid_to IS NULL, m.subject, v.vec FROM vectors v"
    " JOIN docs d ON d.doc_id = v.doc_id LEFT JOIN memories m ON m.memory_id = d.doc_id"
    " WHERE v.chat_id = ? AND d.chat_id = ? ORDER BY d.rid"
)
_ROWS_AFTER = (  # docs by rowid range first (+chat_id keeps the planner off docs_by_chat): the new rows only
    "SELECT d.rid, d.kind, d.ts_epoch, d.valid_to IS NULL, m.subject, v.vec FROM docs d"
    " CROSS JOIN vectors v ON v.doc_id = d.doc_id LEFT JOIN memories m ON m.memory_id = d.doc_id"
    " WHERE d.rid > ? AND +d.chat_id = ? AND v.chat_id = ? ORDER BY d.rid"
)


def bump(db: sqlite3.Connection, fx: Effects) -> dict[str, tuple[Version, Version]]:
    """Inside the write transaction: bump the version of each chat whose vectors ``fx`` changed; per chat
    its version (before, after) this transaction."""
    closed = {chat for chat, _ in fx.closed}
    out: dict[str, tuple[Version, Version]] = {}
    for chat in sorted({c for c, rows in fx.added.items() if rows} | closed | fx.stale):
        step = (int(bool(fx.added.get(chat))), int(chat in closed), int(chat in fx.stale))
        after = tuple(db.execute(_BUMP, (chat_token(chat), *step)).fetchone())
        out[chat] = (tuple(a - s for a, s in zip(after, step, strict=True)), after)  # type: ignore[assignment]
    return out


def version(db: sqlite3.Connection, chat_id: str) -> Version:
    row = db.execute(
        "SELECT appends, closes, rewrites FROM chat_versions WHERE chat = ?", (chat_token(chat_id),)
    ).fetchone()
    return tuple(row) if row else (0, 0, 0)  # type: ignore[return-value]


def load(db: sqlite3.Connection, chat_id: str, dim: int, after: int | None = None) -> Columns:
    """The chat's rows with a ``dim``-d vector (those above rid ``after`` only, when given), in rid order."""
    sql, args = (_ROWS, (chat_id, chat_id)) if after is None else (_ROWS_AFTER, (after, chat_id, chat_id))
    rows = [r for r in db.execute(sql, args).fetchall() if len(r[5]) == 4 * dim]
    matrix = np.frombuffer(b"".join([r[5] for r in rows]), dtype=np.float32).reshape(len(rows), dim)
    return Columns(
        rids=np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
        matrix=matrix,
        kinds=[r[1] for r in rows],
        ts=np.fromiter((r[2] for r in rows), dtype=np.float64, count=len(rows)),
        live=np.fromiter((r[3] for r in rows), dtype=bool, count=len(rows)),
        subjects=[r[4] for r in rows],
    )


def closed_rids(db: sqlite3.Connection, chat_id: str) -> list[int]:
    """The chat's invalidated docs (the partial index ``docs_closed``)."""
    return [
        r[0]
        for r in db.execute("SELECT rid FROM docs WHERE chat_id = ? AND valid_to IS NOT NULL", (chat_id,))
    ]


@dataclass(eq=False)
class _Entry:
    vectors: ChatVectors
    version: Version  # the chat's version the vectors reflect (at least)
    checked: int  # PRAGMA data_version when that was last checked
    nbytes: int = 0  # ``vectors.nbytes`` when last counted


DEFAULT_MAX_BYTES = 1 << 30


class Caches:
    """One connection's vector caches, by chat, least recently used first. Past ``max_bytes`` the chats used
    least recently are dropped (never the one just used): a chat dropped is loaded again on its next search,
    so a process serving many chats keeps a bounded memory instead of every vector it ever wrote."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self._chats: dict[str, _Entry] = {}
        self.max_bytes = max_bytes
        self.nbytes = 0  # the cached chats' vectors, as last counted
        self.loads = 0  # full loads of a chat's matrix (a rewrite, or the first use)
        self.catch_ups = 0  # incremental loads of rows another connection appended
        self.evictions = 0  # chats dropped to stay under max_bytes

    def clear(self) -> None:
        self._chats.clear()
        self.nbytes = 0

    def get(self, db: sqlite3.Connection, chat_id: str, dim: int) -> ChatVectors:
        """The chat's vectors as committed now (inside a transaction: as this transaction sees them, not cached)."""
        if db.in_transaction:  # what it wrote may still be rolled back
            return ChatVectors.empty(dim).extend(load(db, chat_id, dim))
        seen = db.execute("PRAGMA data_version").fetchone()[0]  # before the version: see the module docstring
        entry = self._chats.pop(chat_id, None)  # put back last: the most recently used
        if entry is not None and entry.checked == seen:
            self._chats[chat_id] = entry
            return self._counted(chat_id, entry).vectors  # no other connection committed since the last check
        now = version(db, chat_id)
        if entry is None or entry.version[2] != now[2]:
            self.loads += 1
            if entry is not None:
                self.nbytes -= entry.nbytes
            entry = _Entry(ChatVectors.empty(dim).extend(load(db, chat_id, dim)), now, seen)
            self._chats[chat_id] = entry
            return self._counted(chat_id, entry).vectors
        self._chats[chat_id] = entry
        if entry.version[0] != now[0]:
            self.catch_ups += 1
            entry.vectors.extend(load(db, chat_id, dim, after=entry.vectors.last_rid))
        if entry.version[1] != now[1]:
            entry.vectors.set_closed(closed_rids(db, chat_id))
        entry.version, entry.checked = now, seen
        return self._counted(chat_id, entry).vectors

    def _counted(self, chat_id: str, entry: _Entry) -> _Entry:
        """Count ``entry``'s bytes again (its rows or its int8 copy may have grown), then drop the least
        recently used other chats while the total is over the limit."""
        size = entry.vectors.nbytes
        self.nbytes += size - entry.nbytes
        entry.nbytes = size
        while self.nbytes > self.max_bytes and len(self._chats) > 1:
            oldest = next(iter(self._chats))
            if oldest == chat_id:
                break
            self.nbytes -= self._chats.pop(oldest).nbytes
            self.evictions += 1
        return entry

    def committed(self, fx: Effects, bumped: dict[str, tuple[Version, Version]]) -> None:
        """After this connection's commit: apply its effects to the caches they are exact for."""
        for chat, (before, after) in bumped.items():
            entry = self._chats.get(chat)
            if entry is None:
                continue
            if chat in fx.stale:
                self.nbytes -= self._chats.pop(chat).nbytes
            elif entry.version != before:  # another connection wrote this chat since: catch up on next use
                entry.checked = -1
            else:
                if rows := fx.added.get(chat):
                    entry.vectors.extend(rows)
                if closed := [rid for c, rid in fx.closed if c == chat]:
                    entry.vectors.set_closed(closed, reset=False)
                entry.version = after
                self._counted(chat, entry)


def turn_vectors(
    db: sqlite3.Connection, chat_id: str, ids: dict[str, str], cv: ChatVectors | None
) -> dict[str, np.ndarray]:
    """The stored vectors of turns (``ids``: turn doc id -> message id) as message id -> vector, none for a
    turn without one. From the chat's cached matrix ``cv`` when there is one (rows in rid order: the docs'
    rids are looked up, no vector is read from the file: a set question's profile reads hundreds, ~1.7 ms
    from the file), else from the ``vectors`` table. The same float32 values either way."""
    out: dict[str, np.ndarray] = {}
    for chunk in chunks(list(ids)):
        if cv is None:  # a doc id is not unique across chats: the chat is part of every lookup
            sql = f"SELECT doc_id, vec FROM vectors WHERE chat_id = ? AND doc_id IN ({marks(chunk)})"
            out.update((ids[d], np.frombuffer(blob, dtype=np.float32)) for d, blob in db.execute(sql, (chat_id, *chunk)))
            continue
        sql = f"SELECT rid, doc_id FROM docs WHERE +chat_id = ? AND doc_id IN ({marks(chunk)})"
        rows = db.execute(sql, (chat_id, *chunk)).fetchall()
        if not rows or not len(cv.rids):
            continue
        rids = np.fromiter((r for r, _ in rows), dtype=np.int64, count=len(rows))
        at = np.minimum(np.searchsorted(cv.rids, rids), len(cv.rids) - 1)
        found = cv.rids[at] == rids
        vecs = cv.matrix[at[found]]  # a copy, read-only as the file's were: the cache's rows stay untouched
        vecs.flags.writeable = False
        docs = [d for (_, d), ok in zip(rows, found.tolist(), strict=True) if ok]
        out.update((ids[d], vecs[j]) for j, d in enumerate(docs))
    return out
