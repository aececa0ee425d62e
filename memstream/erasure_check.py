"""Physical erasure checked by bytes: after a deletion, no file of the data dir holds a deleted text.

``secure_delete`` zeroes what SQLite frees and the WAL is truncated (:mod:`backends.sqlite.scrub`), but a page's
free space can still keep an old copy of a cell that a page rebalance moved, and a file written before
``secure_delete`` was on keeps what it freed then. So the deletion does not trust the mechanism: it scans
every file of the data dir for the deleted texts (as UTF-8 and as JSON escapes, the two ways they are
stored), ``VACUUM``s each SQLite file that still holds one (rewriting it whole, free space included) and
scans again. What is still found is reported (and logged as a warning), never silently left, unless a
message or memory record that stays holds the same text (another member's identical line, the same fact in
another chat): that copy is someone else's, and counting it would bury a real remnant under expected ones.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import Any

from backends.sqlite.scrub import erase_freed, secure

__all__ = ["checked_erasure", "holds", "in_one_row", "needles", "remnant_files", "said_by_others", "sqlite_files"]

log = logging.getLogger("memstream.deletion")

MIN_CHARS = 24  # a shorter text ("ok", "see you soon") is as likely someone else's identical line
WINDOW = 24  # characters of each window looked for


def needles(texts: Iterable[str]) -> list[list[list[bytes]]]:
    """Per text, the byte strings a stored copy of it contains: windows at its start, middle and end, each
    as UTF-8 and as the ASCII JSON escapes a JSON column may hold."""
    out = []
    for text in texts:
        t = text.strip()
        if len(t) < MIN_CHARS:
            continue
        mid = max(0, len(t) // 2 - WINDOW // 2)
        windows = list(dict.fromkeys([t[:WINDOW], t[mid : mid + WINDOW], t[-WINDOW:]]))
        out.append([list(dict.fromkeys([w.encode("utf-8"), json.dumps(w)[1:-1].encode("ascii")])) for w in windows])
    return out


def holds(data: bytes, text: Sequence[Sequence[bytes]]) -> bool:
    """Whether ``data`` holds a copy of one text: each of its windows, in some encoding. A window or two in
    common is what another person's similar line looks like, not a copy."""
    return all(any(b in data for b in window) for window in text)


def remnant_files(data_dir: Path, texts: Sequence[Sequence[Sequence[bytes]]]) -> dict[Path, int]:
    """Files under ``data_dir`` holding a copy of any of the texts (path -> how many texts)."""
    return _holding(sorted(p for p in Path(data_dir).rglob("*") if p.is_file()), texts) if texts else {}


def _holding(paths: Iterable[Path], texts: Sequence[Sequence[Sequence[bytes]]]) -> dict[Path, int]:
    """Those of ``paths`` holding any of the texts (path -> how many texts); an unreadable file is skipped."""
    hits: dict[Path, int] = {}
    for path in paths:
        try:
            data = path.read_bytes()
        except OSError:
            continue
        n = sum(1 for t in texts if holds(data, t))
        if n:
            hits[path] = n
    return hits


def is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


def sqlite_files(data_dir: Path) -> list[Path]:
    return [p for p in sorted(Path(data_dir).rglob("*")) if p.is_file() and is_sqlite(p)]


def _connections(clients: Any) -> dict[Path, sqlite3.Connection]:
    out = {}
    for holder in (clients.log, clients.store, clients.graph):
        db = getattr(holder, "db", None) if holder is not None else None
        if isinstance(db, sqlite3.Connection):
            for _, name, file in db.execute("PRAGMA database_list").fetchall():
                if name == "main" and file:
                    out[Path(file).resolve()] = db
    return out


Removed = tuple[str, str | None, Collection[str]]  # the chat, the deleted sender (None: all), the deleted ids


def said_by_others(dbs: Iterable[sqlite3.Connection], texts: Sequence[Sequence[Sequence[bytes]]],
                   removed: Removed) -> list[bool]:  # fmt: skip
    """Per text (:func:`needles`): whether something that stays still holds it: a stored chat message outside
    ``removed``, or a memory record drawn from none of its messages (the same line in another chat, a fact
    another member's identical line gave). Read from a SQLite store's ``messages`` and ``memories``; a deleted
    message or a record of one left in them is never counted."""
    chat, user, ids = removed
    out = [False] * len(texts)

    def seen(payload: bytes) -> None:
        for i, text in enumerate(texts):
            out[i] = out[i] or holds(payload, text)

    for db in dict.fromkeys(dbs):
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if "messages" in tables:
            for chat_id, message_id, sender, payload in db.execute(
                    "SELECT chat_id, message_id, sender, CAST(payload AS BLOB) FROM messages"):  # fmt: skip
                if not (chat_id == chat and (user is None or sender == user or message_id in ids)):
                    seen(payload)
        if "memories" in tables:
            for chat_id, record in db.execute("SELECT chat_id, CAST(record AS BLOB) FROM memories"):
                if chat_id == chat and (user is None or _drawn_from(record, ids)):
                    continue
                seen(record)
        if all(out):
            break
    return out


def _drawn_from(record: bytes, ids: Collection[str]) -> bool:
    """Whether a stored memory record (JSON) was drawn from any of the message ids (unreadable: assumed so)."""
    try:
        sources = json.loads(record).get("source_message_ids") or []
    except (ValueError, AttributeError):
        return True
    return any(m in ids for m in sources)


def _vacuum(path: Path, open_dbs: dict[Path, sqlite3.Connection]) -> bool:
    """Rewrite ``path`` whole (the database file itself, or the one a ``-wal``/``-shm`` belongs to); whether
    it was."""
    base = path.with_name(path.name.removesuffix("-wal").removesuffix("-shm")).resolve()
    db = open_dbs.get(base)
    own = db is None
    if own:
        if not is_sqlite(base):
            return False
        db = secure(sqlite3.connect(base, isolation_level=None, timeout=30))
    try:
        if db.in_transaction:
            return False
        db.execute("VACUUM")
        erase_freed(db)
        return True
    finally:
        if own:
            db.close()


def in_one_row(path: Path, texts: Sequence[Sequence[Sequence[bytes]]],
               open_dbs: dict[Path, sqlite3.Connection]) -> bool:  # fmt: skip
    """Whether one row of the SQLite file ``path`` holds a whole copy of any of the texts. After ``VACUUM`` a
    copy can only be in a live row: a text's windows found in different rows are other lines that share its
    words ("Q: Ivan: Who keeps leaving dishes in the sink A: Mike: not me" and another chat's "Q: Victor: Who
    keeps …", once Victor's own pair with Mike went)."""
    db = open_dbs.get(path.resolve())
    own = db is None
    if own:
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30)
    try:
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
            for row in db.execute(f'SELECT * FROM "{table}"'):
                data = b"\x00".join(c if isinstance(c, bytes) else str(c).encode() for c in row if c is not None)
                if any(holds(data, t) for t in texts):
                    return True
        return False
    except sqlite3.DatabaseError:
        return True  # unreadable as rows: the bytes decide
    finally:
        if own:
            db.close()


async def checked_erasure(clients: Any, texts: Iterable[str], *, vacuum_all: bool = False,
                          removed: Removed | None = None) -> list[Path]:  # fmt: skip
    """Scan the data dir for ``texts``; vacuum every SQLite file holding one and scan again. ``vacuum_all``:
    vacuum every SQLite file of the data dir first (finishing a deletion a killed process began: what it had
    already removed left no text to look for, but may have left bytes in free space). ``removed``: what was
    deleted (chat, sender, message ids); a text that something outside it still holds (:func:`said_by_others`)
    is someone else's copy and not counted. Returns the files that still hold any other (logged as a warning)."""
    data_dir = Path(clients.settings.data_dir)
    if not data_dir.exists():
        return []
    open_dbs = _connections(clients)
    if vacuum_all:
        for path in await asyncio.to_thread(sqlite_files, data_dir):
            await asyncio.to_thread(_vacuum, path, open_dbs)
    found = needles(texts)
    if not found:
        return []
    hits = await asyncio.to_thread(remnant_files, data_dir, found)
    vacuumed = {path for path in hits if await asyncio.to_thread(_vacuum, path, open_dbs)}
    left = list(await asyncio.to_thread(remnant_files, data_dir, found)) if hits else []
    own = found
    if left and removed is not None:  # a vacuumed file holds live rows only: this text, or someone's same line
        others = await asyncio.to_thread(said_by_others, open_dbs.values(), found, removed)
        own = [t for t, said in zip(found, others, strict=True) if not said]
        if len(own) < len(found):
            log.info("%d deleted text(s) are still held by messages or records that stay", len(found) - len(own))
        left = list(await asyncio.to_thread(_holding, left, own)) if own else []  # only these can hold one
    left = [p for p in left if p not in vacuumed or p.name.endswith(("-wal", "-shm"))
            or await asyncio.to_thread(in_one_row, p, own, open_dbs)]
    if left:
        log.warning("a deleted text is still in the bytes of %s after vacuum%s", ", ".join(str(p) for p in left),
                    "" if removed is not None else " (another message may say the same)")
    return left
