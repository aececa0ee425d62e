"""The durable local log: the embedded stand-in for Kafka.

One SQLite file holds every topic as an append-only sequence of records with per-topic offsets, the
committed offset of every consumer group, and each group's state checkpoint. A consumer commits its new
offsets, the records it produced and its state in ONE transaction, so a crash at any point either keeps
all of a batch's effects or none of them; a restart resumes from the last commit. State is kept in parts
(the segmenter: one per chat) and a commit writes only the parts its batch changed, so the cost of a
commit follows the batch, not the number of chats ever seen. (A checkpoint from before parts existed
is read as the single part ``""``.) Producers are
idempotent: a record whose ``record_id`` is already in its topic is skipped (Kafka's equivalent is the
deterministic event id that consumers de-duplicate on). Appended messages, the deletion ledger and an
erasure's rewrites are synced to disk at their commit; a consumer's commit is not (synchronous=NORMAL):
a power cut can take back the last ones, whole and in order, and their batches run again.
"""

from __future__ import annotations

import contextlib
import hashlib
import sqlite3
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, Self, runtime_checkable

from backends.sqlite.scrub import erase_freed, mark_scrubbed, secure
from backends.sqlite.util import to_wal

_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
  topic TEXT NOT NULL, offset INTEGER NOT NULL, key TEXT NOT NULL, record_id TEXT NOT NULL,
  value TEXT NOT NULL, PRIMARY KEY (topic, offset));
CREATE UNIQUE INDEX IF NOT EXISTS records_id ON records(topic, record_id);
CREATE TABLE IF NOT EXISTS consumer_offsets (
  grp TEXT NOT NULL, topic TEXT NOT NULL, offset INTEGER NOT NULL, PRIMARY KEY (grp, topic));
CREATE TABLE IF NOT EXISTS consumer_state_parts (
  grp TEXT NOT NULL, part TEXT NOT NULL, state TEXT NOT NULL, PRIMARY KEY (grp, part));
CREATE TABLE IF NOT EXISTS consumer_state (grp TEXT PRIMARY KEY, state TEXT NOT NULL);
INSERT OR IGNORE INTO consumer_state_parts(grp, part, state) SELECT grp, '', state FROM consumer_state;
DELETE FROM consumer_state;
CREATE TABLE IF NOT EXISTS deletion_ledger (
  chat_id TEXT NOT NULL, sender TEXT NOT NULL, at TEXT NOT NULL, PRIMARY KEY (chat_id, sender));
CREATE TABLE IF NOT EXISTS deletion_done (
  chat_id TEXT NOT NULL, sender TEXT NOT NULL, at TEXT NOT NULL, done_at TEXT NOT NULL, PRIMARY KEY (chat_id, sender));
CREATE TABLE IF NOT EXISTS deletion_ledger_ids (
  chat_id TEXT NOT NULL, sender TEXT NOT NULL, id_hash TEXT NOT NULL, PRIMARY KEY (chat_id, sender, id_hash));
CREATE TABLE IF NOT EXISTS deletion_redistil (
  chat_id TEXT NOT NULL, sender TEXT NOT NULL, topic_id TEXT NOT NULL, PRIMARY KEY (chat_id, sender, topic_id));
CREATE TABLE IF NOT EXISTS log_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
"""


StateParts = Mapping[str, str | None]  # part -> serialized state (None: drop the part)


@dataclass(frozen=True)
class Record:
    topic: str
    offset: int
    key: str
    record_id: str
    value: str


@dataclass(frozen=True)
class Produce:
    topic: str
    key: str
    record_id: str
    value: str


@runtime_checkable
class EventLog(Protocol):
    """What the embedded runner needs from a log it consumes (file-backed; the Faust worker reads Kafka)."""

    async def append(self, items: list[Produce]) -> int: ...

    async def read(self, topic: str, offset: int, limit: int) -> list[Record]: ...

    async def end_offset(self, topic: str) -> int: ...

    async def committed(self, group: str, topic: str) -> int: ...

    async def commit(
        self, group: str, offsets: dict[str, int], produced: list[Produce], state: StateParts | None = None
    ) -> int: ...

    async def load_state(self, group: str) -> dict[str, str]: ...

    async def reset_derived(self, derived_topics: list[str]) -> None: ...

    async def prune(self, topic: str, below: int) -> int: ...

    async def deletions(self) -> set[tuple[str, str]]: ...

    async def close(self) -> None: ...


def open_durable_sqlite(path: Path, schema: str) -> sqlite3.Connection:
    """An autocommit SQLite connection in WAL mode with synchronous=FULL (a commit survives a kill) and
    secure_delete on (deleted or rewritten bytes are zeroed, see :mod:`backends.sqlite.scrub`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    db = secure(sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30))
    to_wal(db, 30.0)
    db.execute("PRAGMA synchronous=FULL")
    db.executescript(schema)
    return db


class DurableSQLite:
    """One SQLite file opened by :func:`open_durable_sqlite` with the subclass's ``schema``."""

    schema: str = ""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._db: sqlite3.Connection | None = None

    async def open(self) -> Self:
        self._db = open_durable_sqlite(self.path, self.schema)
        return self

    async def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            raise RuntimeError(f"{type(self).__name__} is not open; call await .open() first")
        return self._db


class FileLog(DurableSQLite):
    """SQLite-file implementation of :class:`EventLog` (WAL, synchronous=FULL: a commit survives a kill)."""

    schema = _SCHEMA

    async def open(self) -> Self:
        fresh = not self.path.exists() or self.path.stat().st_size == 0  # secure_delete from its first byte
        await super().open()
        if fresh:
            mark_scrubbed(self.db, "log_meta")
        return self

    def _append(self, items: list[Produce]) -> int:
        return sum(self._append_each(items))

    def _append_each(self, items: list[Produce]) -> list[bool]:
        added: list[bool] = []
        ends: dict[str, int] = {}
        for item in items:
            if item.topic not in ends:
                ends[item.topic] = self._end(item.topic)
            cur = self.db.execute(
                "INSERT OR IGNORE INTO records(topic, offset, key, record_id, value) VALUES (?,?,?,?,?)",
                (item.topic, ends[item.topic], item.key, item.record_id, item.value),
            )
            added.append(bool(cur.rowcount))
            if cur.rowcount:
                ends[item.topic] += 1
        return added

    def _end(self, topic: str) -> int:
        row = self.db.execute("SELECT MAX(offset) FROM records WHERE topic=?", (topic,)).fetchone()
        return 0 if row[0] is None else int(row[0]) + 1

    async def append(self, items: list[Produce]) -> int:
        """Append records, skipping ids already present; returns how many were new."""
        with self._txn():
            return self._append(items)

    async def append_each(self, items: list[Produce]) -> list[bool]:
        """:meth:`append`, saying for each record whether it was new (False: its id was already there)."""
        with self._txn():
            return self._append_each(items)

    async def read(self, topic: str, offset: int, limit: int) -> list[Record]:
        rows = self.db.execute(
            "SELECT offset, key, record_id, value FROM records WHERE topic=? AND offset>=? "
            "ORDER BY offset LIMIT ?",
            (topic, offset, limit),
        ).fetchall()
        return [Record(topic, o, k, rid, v) for o, k, rid, v in rows]

    async def end_offset(self, topic: str) -> int:
        return self._end(topic)

    async def committed(self, group: str, topic: str) -> int:
        row = self.db.execute(
            "SELECT offset FROM consumer_offsets WHERE grp=? AND topic=?", (group, topic)
        ).fetchone()
        return int(row[0]) if row else 0

    async def commit(
        self,
        group: str,
        offsets: dict[str, int],
        produced: list[Produce],
        state: StateParts | None = None,
        *,
        synced: bool = False,
    ) -> int:
        """Atomically: append ``produced``, move ``group``'s offsets, save the state parts given (a part
        set to None is dropped; parts not given are kept). Not synced to disk unless ``synced`` (an erasure's
        rewrite of a checkpoint): a power cut can take back the last commits whole and in order, and their
        batches run again (idempotent effects); messages appended by producers are synced."""
        with self._txn(relaxed=not synced):
            added = self._append(produced)
            for topic, offset in offsets.items():
                self.db.execute(
                    "INSERT INTO consumer_offsets(grp, topic, offset) VALUES (?,?,?) "
                    "ON CONFLICT(grp, topic) DO UPDATE SET offset=excluded.offset",
                    (group, topic, offset),
                )
            for part, value in (state or {}).items():
                if value is None:
                    self.db.execute("DELETE FROM consumer_state_parts WHERE grp=? AND part=?", (group, part))
                else:
                    self.db.execute(
                        "INSERT INTO consumer_state_parts(grp, part, state) VALUES (?,?,?) "
                        "ON CONFLICT(grp, part) DO UPDATE SET state=excluded.state",
                        (group, part, value),
                    )
        return added

    async def load_state(self, group: str) -> dict[str, str]:
        rows = self.db.execute("SELECT part, state FROM consumer_state_parts WHERE grp=?", (group,))
        return dict(rows.fetchall())

    async def reset_derived(self, derived_topics: list[str]) -> None:
        """For replay: drop derived topics, every consumer offset and state (source topics are kept)."""
        with self._txn():
            for topic in derived_topics:
                self.db.execute("DELETE FROM records WHERE topic=?", (topic,))
            self.db.execute("DELETE FROM consumer_offsets")
            self.db.execute("DELETE FROM consumer_state_parts")

    async def prune(self, topic: str, below: int) -> int:
        """Drop ``topic``'s records below offset ``below`` (what its readers have all committed past), always
        keeping its last record: the next offset is counted from it. Returns how many went."""
        with self._txn():
            below = min(below, self._end(topic) - 1)
            if below <= 0:
                return 0
            return self.db.execute("DELETE FROM records WHERE topic=? AND offset<?", (topic, below)).rowcount

    async def record_deletion(self, chat_id: str, sender: str, at: str) -> None:
        """Deletion ledger: ``sender='*'`` means the whole chat. Replay honours it."""
        with self._txn():
            self.db.execute(
                "INSERT OR REPLACE INTO deletion_ledger(chat_id, sender, at) VALUES (?,?,?)",
                (chat_id, sender, at),
            )

    async def deletions(self) -> set[tuple[str, str]]:
        return {(c, s) for c, s in self.db.execute("SELECT chat_id, sender FROM deletion_ledger")}

    async def complete_deletion(self, chat_id: str, sender: str, at: str, done_at: str) -> None:
        """The deletion recorded at ``at`` has removed everything (until then it is pending: a restarted
        process finishes it, readers refuse the chat)."""
        with self._txn():
            self.db.execute("INSERT OR REPLACE INTO deletion_done(chat_id, sender, at, done_at) VALUES (?,?,?,?)",
                            (chat_id, sender, at, done_at))  # fmt: skip

    async def deletion_jobs(self, chat_id: str | None = None) -> list[tuple[str, str, str, str | None]]:
        """``(chat, sender, at, done_at)`` of every ledgered deletion (of one chat), ``done_at`` None while it
        is pending. A ledger written before completions were recorded reads as pending (finishing is
        idempotent)."""
        sql = ("SELECT l.chat_id, l.sender, l.at, d.done_at FROM deletion_ledger l LEFT JOIN deletion_done d"
               " ON d.chat_id = l.chat_id AND d.sender = l.sender AND d.at = l.at")
        rows = self.db.execute(sql + " WHERE l.chat_id = ?", (chat_id,)) if chat_id is not None else self.db.execute(sql)
        return [(c, s, a, d) for c, s, a, d in rows]

    # ---- erasure (deletion): see memstream.deletion -------------------------------------------------

    async def plan_redistil(self, chat_id: str, sender: str, topic_ids: Iterable[str]) -> set[str]:
        """Add ``topic_ids`` to the topics the pending deletion distils again, on disk before it removes
        anything; returns every topic planned (those of a killed run too)."""
        with self._txn():
            self.db.executemany("INSERT OR IGNORE INTO deletion_redistil (chat_id, sender, topic_id) VALUES (?,?,?)",
                                [(chat_id, sender, t) for t in topic_ids])  # fmt: skip
            rows = self.db.execute(
                "SELECT topic_id FROM deletion_redistil WHERE chat_id = ? AND sender = ?", (chat_id, sender)
            ).fetchall()
        return {t for (t,) in rows}

    async def end_redistil(self, chat_id: str, sender: str) -> None:
        """The planned topics are distilled again: the plan goes."""
        with self._txn():
            self.db.execute("DELETE FROM deletion_redistil WHERE chat_id = ? AND sender = ?", (chat_id, sender))

    async def record_deleted_ids(self, chat_id: str, sender: str, message_ids: Iterable[str]) -> int:
        """Keep hashes (never the ids or texts) of the messages a deletion erased, for audit."""
        rows = [(chat_id, sender, message_id_hash(chat_id, m)) for m in dict.fromkeys(message_ids)]
        with self._txn():
            before = self.db.total_changes
            self.db.executemany(
                "INSERT OR IGNORE INTO deletion_ledger_ids (chat_id, sender, id_hash) VALUES (?,?,?)", rows
            )
            return self.db.total_changes - before

    async def keyed(self, topic: str, key: str) -> list[Record]:
        """Every record of ``topic`` with ``key`` (a chat id), in offset order."""
        rows = self.db.execute(
            "SELECT offset, record_id, value FROM records WHERE topic=? AND key=? ORDER BY offset", (topic, key)
        ).fetchall()
        return [Record(topic, o, key, rid, v) for o, rid, v in rows]

    async def consumed(self, topic: str) -> int | None:
        """The offset below which every consumer group of ``topic`` has committed (None: nobody reads it)."""
        row = self.db.execute("SELECT MIN(offset) FROM consumer_offsets WHERE topic=?", (topic,)).fetchone()
        return None if row[0] is None else int(row[0])

    async def rewrite(self, topic: str, values: Mapping[int, str]) -> int:
        """Replace the payloads at these offsets of ``topic`` (offset, key and record id stay): erasure."""
        with self._txn():
            return sum(
                self.db.execute("UPDATE records SET value=? WHERE topic=? AND offset=?", (v, topic, o)).rowcount
                for o, v in values.items()
            )

    async def erase_freed(self) -> bool:
        """Zero freed pages and truncate the WAL (see :func:`backends.sqlite.scrub.erase_freed`)."""
        return erase_freed(self.db, "log_meta")

    async def topic_counts(self) -> dict[str, int]:
        rows = self.db.execute("SELECT topic, COUNT(*) FROM records GROUP BY topic").fetchall()
        return {t: int(n) for t, n in rows}

    def _txn(self, *, relaxed: bool = False) -> _Txn:
        return _Txn(self.db, relaxed=relaxed)


def message_id_hash(chat_id: str, message_id: str) -> str:
    """What the deletion ledger keeps of an erased message id."""
    return hashlib.blake2b(f"{chat_id}\x1f{message_id}".encode(), digest_size=16).hexdigest()


class _Txn:
    """One write transaction. ``relaxed``: committed with synchronous=NORMAL (written to the WAL, not synced:
    it survives a killed process, not a power cut), for what replay can make again; every other transaction,
    and the next synced one after a relaxed one, syncs the WAL up to itself (its order is kept)."""

    def __init__(self, db: sqlite3.Connection, *, relaxed: bool = False) -> None:
        self.db = db
        self.relaxed = relaxed

    def __enter__(self) -> sqlite3.Connection:
        if self.relaxed:
            self.db.execute("PRAGMA synchronous=NORMAL")
        try:
            self.db.execute("BEGIN IMMEDIATE")
        except BaseException:  # e.g. locked by another process past the timeout: stay FULL
            self._synced()
            raise
        return self.db

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            self.db.execute("ROLLBACK" if exc_type else "COMMIT")
        except BaseException:
            if self.db.in_transaction:  # a COMMIT that failed (busy): nothing of the batch is kept
                with contextlib.suppress(sqlite3.Error):
                    self.db.execute("ROLLBACK")
            raise
        finally:
            self._synced()

    def _synced(self) -> None:
        if self.relaxed and not self.db.in_transaction:
            self.db.execute("PRAGMA synchronous=FULL")
