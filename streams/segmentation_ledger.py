"""The segmentation versions ledger: every version of every chat's segmentation, and what happened to it.

Kept in its own SQLite file next to the log (``<data_dir>/segmentation.db``) so it works whatever log and
store backends are configured. Rows are never deleted: a version's status moves from ``active`` to
``rolled_back`` (or ``discarded`` when a replay rebuilt the chat from raw), and every change is also appended
to an action history.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol, runtime_checkable

from schemas.segmentation import SegmentationVersion
from streams.log import DurableSQLite

_SCHEMA = """
CREATE TABLE IF NOT EXISTS segmentation_versions (
  chat_id TEXT NOT NULL, version INTEGER NOT NULL, status TEXT NOT NULL, payload TEXT NOT NULL,
  PRIMARY KEY (chat_id, version));
CREATE TABLE IF NOT EXISTS segmentation_actions (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, chat_id TEXT NOT NULL, version INTEGER NOT NULL,
  action TEXT NOT NULL, at TEXT NOT NULL, detail TEXT NOT NULL);
"""


@runtime_checkable
class VersionLedger(Protocol):
    """Per-chat segmentation versions (SQLite here; any durable keyed store would do)."""

    async def versions(self, chat_id: str) -> list[SegmentationVersion]: ...

    async def save(self, entry: SegmentationVersion, action: str, detail: str = "") -> None: ...

    async def actions(self, chat_id: str) -> list[tuple[int, str, str, str]]: ...

    async def close(self) -> None: ...


class SQLiteVersionLedger(DurableSQLite):
    """:class:`VersionLedger` in one SQLite file (WAL, synchronous=FULL, like the log)."""

    schema = _SCHEMA

    async def versions(self, chat_id: str) -> list[SegmentationVersion]:
        rows = self.db.execute(
            "SELECT payload FROM segmentation_versions WHERE chat_id = ? ORDER BY version", (chat_id,)
        ).fetchall()
        return [SegmentationVersion.model_validate_json(r[0]) for r in rows]

    async def save(self, entry: SegmentationVersion, action: str, detail: str = "") -> None:
        """Insert or update ``entry`` and append ``action`` to the history, in one transaction."""
        db = self.db
        db.execute("BEGIN IMMEDIATE")
        try:
            db.execute(
                "INSERT INTO segmentation_versions (chat_id, version, status, payload) VALUES (?,?,?,?) "
                "ON CONFLICT(chat_id, version) DO UPDATE SET status=excluded.status, payload=excluded.payload",
                (entry.chat_id, entry.version, entry.status, entry.model_dump_json()),
            )
            db.execute(
                "INSERT INTO segmentation_actions (chat_id, version, action, at, detail) VALUES (?,?,?,?,?)",
                (entry.chat_id, entry.version, action, datetime.now(UTC).isoformat(), detail),
            )
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    async def actions(self, chat_id: str) -> list[tuple[int, str, str, str]]:
        """The chat's history: ``(version, action, at, detail)`` oldest first."""
        rows = self.db.execute(
            "SELECT version, action, at, detail FROM segmentation_actions WHERE chat_id = ? ORDER BY seq",
            (chat_id,),
        ).fetchall()
        return [(int(v), a, at, d) for v, a, at, d in rows]


async def open_ledger(data_dir: Path) -> SQLiteVersionLedger:
    return await SQLiteVersionLedger(Path(data_dir) / "segmentation.db").open()
