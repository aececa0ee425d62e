"""Filter-only lookups of memory records in the embedded store (slot mates, derived records, stale facts).

Plain functions over a SQLite connection so :mod:`retrieval.sqlite_store` stays a thin class. Every
statement is filtered by ``chat_id``.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from retrieval.protocols import MemoryFilter
from schemas import MemoryRecord

__all__ = ["find_memories"]


def find_memories(db: sqlite3.Connection, chat_id: str, q: MemoryFilter) -> list[MemoryRecord]:
    """Memory records of one chat matching ``q``, oldest first (by valid_from, then insertion)."""
    if q.kinds is not None and not q.kinds or q.message_ids is not None and not q.message_ids:
        return []
    where, args = ["d.chat_id = ?", "d.kind != 'turn'", "d.memory IS NOT NULL"], [chat_id]
    if q.kinds is not None:
        where.append(f"d.kind IN ({','.join('?' * len(q.kinds))})")
        args += list(q.kinds)
    if q.state == "live":
        where.append("d.valid_to IS NULL")
    elif q.state == "invalidated":
        where.append("d.valid_to IS NOT NULL")
    if q.attribute is not None:
        where.append("EXISTS (SELECT 1 FROM memories m WHERE m.memory_id = d.doc_id AND m.attribute = ?)")
        args.append(q.attribute)
    if q.message_ids is not None:
        ids = list(dict.fromkeys(q.message_ids))[:900]
        where.append(
            "EXISTS (SELECT 1 FROM json_each(d.source_message_ids) j "
            f"WHERE j.value IN ({','.join('?' * len(ids))}))"
        )
        args += ids
    sql = f"SELECT d.memory FROM docs d WHERE {' AND '.join(where)} ORDER BY d.ts_epoch, d.rid LIMIT ?"
    rows: list[Any] = db.execute(sql, (*args, q.limit)).fetchall()
    return [MemoryRecord.model_validate_json(r[0]) for r in rows]
