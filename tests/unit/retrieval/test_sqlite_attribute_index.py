"""A slot question looks up a chat's memories by attribute: an index serves it (a 100k-memory chat scanned
every row through the subject index, ~32 ms a lookup)."""

from __future__ import annotations

import sqlite3

from backends.sqlite.store import SQLiteStore


async def test_memories_by_attribute_is_searched_by_index(tmp_path):
    store = SQLiteStore(tmp_path / "s.db", None)
    await store.bootstrap()
    await store.close()
    db = sqlite3.connect(tmp_path / "s.db")
    try:
        plan = db.execute("EXPLAIN QUERY PLAN SELECT record FROM memories WHERE chat_id = ? AND attribute = ?",
                          ("c", "lives_in")).fetchall()  # fmt: skip
    finally:
        db.close()
    assert any("memories_by_attribute" in str(row) for row in plan)
