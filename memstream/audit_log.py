"""The access audit log: who (key id) did what (read, write, export, delete, admin) to which chat, when.

One SQLite file, ``<data dir>/access-log.db``. The API records every authorised or refused call through
:class:`AuditWriter` (buffered, flushed off the event loop every ``interval`` seconds and at once for
deletions and exports); ``memstream keys audit`` and ``GET /v1/audit`` query it. Entries never hold
message text, queries or keys: only ids, the endpoint, the outcome and small counts.
"""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from typing import Literal

from pydantic import BaseModel, Field

from streams.log import DurableSQLite

Action = Literal["read", "write", "export", "delete", "admin"]


class AuditEntry(BaseModel):
    at: datetime = Field(default_factory=lambda: datetime.now(UTC))
    key_id: str
    action: Action
    chat_id: str | None = None
    endpoint: str
    outcome: Literal["allowed", "denied"] = "allowed"
    detail: dict[str, int | str] = Field(default_factory=dict)


class AuditQuery(BaseModel):
    chat_id: str | None = None
    key_id: str | None = None
    action: Action | None = None
    outcome: Literal["allowed", "denied"] | None = None
    since: datetime | None = None
    limit: int = Field(default=100, ge=1, le=10_000)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS access_log (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, at TEXT NOT NULL, key_id TEXT NOT NULL, action TEXT NOT NULL,
  chat_id TEXT, endpoint TEXT NOT NULL, outcome TEXT NOT NULL, detail TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS access_by_chat ON access_log (chat_id, seq);
CREATE INDEX IF NOT EXISTS access_by_key ON access_log (key_id, seq);
"""


def _utf8(text: str | None) -> str | None:
    """``text`` as valid UTF-8 (a lone surrogate from a percent-encoded path is replaced): one such id must not
    fail the insert of a whole batch of entries (and the request that flushes it)."""
    return None if text is None else text.encode("utf-8", "replace").decode("utf-8")


class AuditLog(DurableSQLite):
    schema = _SCHEMA

    def write(self, entries: list[AuditEntry]) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        try:
            self.db.executemany(
                "INSERT INTO access_log (at, key_id, action, chat_id, endpoint, outcome, detail) "
                "VALUES (?,?,?,?,?,?,?)",
                [(e.at.astimezone(UTC).isoformat(), _utf8(e.key_id), e.action, _utf8(e.chat_id), _utf8(e.endpoint),
                  e.outcome, json.dumps(e.detail)) for e in entries],
            )
        except BaseException:
            self.db.execute("ROLLBACK")
            raise
        self.db.execute("COMMIT")

    def query(self, q: AuditQuery) -> list[AuditEntry]:
        """Newest first."""
        where, args = [], []
        for col in ("chat_id", "key_id", "action", "outcome"):
            if getattr(q, col) is not None:
                where.append(f"{col} = ?")
                args.append(getattr(q, col))
        if q.since is not None:
            where.append("at >= ?")
            args.append(q.since.astimezone(UTC).isoformat())
        sql = ("SELECT at, key_id, action, chat_id, endpoint, outcome, detail FROM access_log"
               + (f" WHERE {' AND '.join(where)}" if where else "") + " ORDER BY seq DESC LIMIT ?")
        rows = self.db.execute(sql, (*args, q.limit)).fetchall()
        return [AuditEntry(at=datetime.fromisoformat(at), key_id=k, action=a, chat_id=c, endpoint=ep,
                           outcome=o, detail=json.loads(d)) for at, k, a, c, ep, o, d in rows]


class AuditWriter:
    """Buffers entries in memory and writes them in batches in a worker thread (never on the event loop)."""

    def __init__(self, log: AuditLog, interval: float = 0.5) -> None:
        self.log = log
        self.interval = interval
        self.pending: list[AuditEntry] = []
        self._lock = asyncio.Lock()
        self._task: asyncio.Task | None = None
        self._stopping: asyncio.Event | None = None

    def record(self, entry: AuditEntry) -> None:
        self.pending.append(entry)

    async def flush(self) -> None:
        async with self._lock:  # one writer at a time; the connection is used by one thread at a time
            batch, self.pending = self.pending, []
            if batch:
                await asyncio.to_thread(self.log.write, batch)

    async def query(self, q: AuditQuery) -> list[AuditEntry]:
        await self.flush()
        async with self._lock:
            return await asyncio.to_thread(self.log.query, q)

    async def _loop(self) -> None:
        assert self._stopping is not None
        while not self._stopping.is_set():
            try:
                await asyncio.wait_for(self._stopping.wait(), self.interval)
            except TimeoutError:
                pass
            await self.flush()

    def start(self) -> None:
        self._stopping = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        """Let the loop finish its write (a cancelled ``to_thread`` write would go on in its thread while the
        connection is closed under it), then write what is left."""
        if self._task is not None and self._stopping is not None:
            self._stopping.set()
            await asyncio.gather(self._task, return_exceptions=True)
        await self.flush()
