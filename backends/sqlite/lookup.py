"""Filter-only lookups of memory records in the embedded store (slot mates, derived records, stale facts).

Plain functions over a SQLite connection so :mod:`backends.sqlite.store` stays a thin class. Every
statement is filtered by ``chat_id``.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any

from backends.sqlite.schema import RECORD
from backends.sqlite.search import records_by_rid, until_write
from backends.sqlite.sources import UNINDEXED_KINDS, rids_citing
from backends.sqlite.util import chunks, marks
from language.text import parse_json
from retrieval.protocols import MemoryFilter
from schemas import MemoryRecord

if TYPE_CHECKING:
    import numpy as np

    from backends.sqlite.vector_cache import ChatVectors

__all__ = ["find_memories"]


def find_memories(db: sqlite3.Connection, chat_id: str, q: MemoryFilter) -> list[MemoryRecord]:
    """Memory records of one chat matching ``q``, oldest first (by valid_from, then insertion). Kept until the
    next write (a routed request reads the chat's invalidated facts and profile records, and the next request
    the same ones again; the records are frozen)."""
    if q.kinds is not None and not q.kinds or q.message_ids is not None and not q.message_ids:
        return []
    kept = until_write(db)
    key = ("find_memories", chat_id, None if q.kinds is None else tuple(q.kinds), q.attribute,
           None if q.message_ids is None else tuple(q.message_ids), q.state, q.limit)  # fmt: skip
    if (found := kept.get(key)) is None:
        found = kept[key] = tuple(_find(db, chat_id, q))
    return list(found)


def _find(db: sqlite3.Connection, chat_id: str, q: MemoryFilter) -> list[MemoryRecord]:
    if q.message_ids is not None and q.attribute is None:
        return _citing(db, chat_id, q)
    where, args = ["d.chat_id = ?", "d.kind != 'turn'"], [chat_id]
    if q.kinds == ["profile"]:
        where.append("d.kind = 'profile'")  # spelt out: the live-profile index's condition (_profiles)
    elif q.kinds is not None:
        where.append(f"d.kind IN ({','.join('?' * len(q.kinds))})")
        args += list(q.kinds)
    if q.state == "live":
        where.append("d.valid_to IS NULL")
    elif q.state == "invalidated":
        where.append("d.valid_to IS NOT NULL")
    source = f"docs d {RECORD}"
    if q.attribute is not None:  # the chat's memories with the attribute, then their docs: scanning the chat's
        # docs and probing memories for each cost 4x as much (68 vs 16 ms for 50k facts in one chat)
        source = "memories m CROSS JOIN docs d ON d.doc_id = m.memory_id"
        where[:0] = ["m.chat_id = ?", "m.attribute = ?"]
        args[:0] = [chat_id, q.attribute]
        # the state from the memories row too (written with the doc's, sqlite_writes.close_memory): a superseded
        # profile's doc is ~40 KB, and its valid_to lies past the text in overflow pages (a profile:<class>
        # read walked ~200 superseded versions' pages, 1.3 ms at 24k messages in the chat)
        where += {"live": ["m.valid_to IS NULL"], "invalidated": ["m.valid_to IS NOT NULL"]}.get(q.state, [])
    elif q.kinds == ["profile"] and q.state == "live":  # retrieval's set questions: the chat's live profiles
        source = _profiles("live")
    if q.message_ids is not None:
        ids = list(dict.fromkeys(q.message_ids))[:900]
        where.append(
            "EXISTS (SELECT 1 FROM json_each(d.source_message_ids) j "
            f"WHERE j.value IN ({','.join('?' * len(ids))}))"
        )
        args += ids
    sql = f"SELECT m.record FROM {source} WHERE {' AND '.join(where)} ORDER BY d.ts_epoch, d.rid LIMIT ?"
    rows: list[Any] = db.execute(sql, (*args, q.limit)).fetchall()
    return [parse_json(MemoryRecord, r[0]) for r in rows]  # the next request reads the same records again


def _citing(db: sqlite3.Connection, chat_id: str, q: MemoryFilter) -> list[MemoryRecord]:
    """:func:`_find` by source messages: the indexed docs by key (:mod:`backends.sqlite.sources`), the chat's
    profiles by their sources' JSON; the same records in the same order as one scan of the chat's docs."""
    ids = list(dict.fromkeys(q.message_ids or ()))[:900]
    kinds = None if q.kinds is None else [k for k in q.kinds if k != "turn"]
    state = {"live": " AND d.valid_to IS NULL", "invalidated": " AND d.valid_to IS NOT NULL"}.get(q.state, "")
    rows: list[tuple[float, int, str]] = []
    indexed = [k for k in kinds if k not in UNINDEXED_KINDS] if kinds is not None else None
    if indexed is None or indexed:
        rids = sorted(rids_citing(db, chat_id, ids))
        only = "" if indexed is None else f" AND d.kind IN ({marks(indexed)})"
        for chunk in chunks(rids):
            sql = (f"SELECT d.ts_epoch, d.rid, m.record FROM docs d {RECORD} WHERE d.rid IN ({marks(chunk)})"
                   f" AND +d.chat_id = ? AND d.kind NOT IN ('turn', 'profile'){state}{only}")  # fmt: skip
            rows += db.execute(sql, (*chunk, chat_id, *(indexed or ()))).fetchall()
    if kinds is None or "profile" in kinds:
        sql = (f"SELECT d.ts_epoch, d.rid, m.record FROM {_profiles(q.state)} WHERE d.chat_id = ? AND d.kind = 'profile'"
               f"{state} AND EXISTS (SELECT 1 FROM json_each(d.source_message_ids) j"
               f" WHERE j.value IN ({marks(ids)})) ORDER BY d.ts_epoch, d.rid LIMIT ?")  # fmt: skip
        rows += db.execute(sql, (chat_id, *ids, q.limit)).fetchall()
    rows.sort(key=lambda r: (r[0], r[1]))
    return [parse_json(MemoryRecord, r[2]) for r in rows[: q.limit]]


def _profiles(state: str) -> str:
    """The FROM clause for a chat's profile docs in ``state``: live ones through their partial index. Without
    table statistics SQLite takes docs_by_chat (chat, kind) and reads every superseded version too (a long
    chat keeps hundreds of each profile): all live profiles 2.5 -> 0.25 ms, those quoting given messages
    4.2 -> 0.42 ms, at ~1,700 versions in one chat. The query must say ``d.kind = 'profile'`` and
    ``d.valid_to IS NULL`` (the index's condition)."""
    return f"docs d {'INDEXED BY docs_live_profiles ' if state == 'live' else ''}{RECORD}"


def nearest_records(
    db: sqlite3.Connection, chat_id: str, cv: ChatVectors, queries: np.ndarray, k: int, subject: str | None
) -> list[list[tuple[MemoryRecord, float]]]:
    """Per query vector (unit rows of ``queries``): the chat's live memory records (``subject``: only about
    them) by cosine, best first, from its vector cache ``cv``. The live mask is made once and the records
    found are read in one query for the lot (a consolidator's batch asks for every candidate of a result at
    once); each vector's scan is the one it gets alone, so are its scores and their order."""
    keep = cv.mask(None, None, None, live_only=True) & ~cv.kind_mask(["turn"])
    if subject is not None:
        keep &= cv.subjects == subject
    tops = [cv.top(query, keep, k) for query in queries]
    payloads = records_by_rid(db, chat_id, list(dict.fromkeys(rid for top in tops for rid, _ in top)))
    return [[(parse_json(MemoryRecord, payloads[rid]), score) for rid, score in top if payloads.get(rid)]
            for top in tops]  # fmt: skip
