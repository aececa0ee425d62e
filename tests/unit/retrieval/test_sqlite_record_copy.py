"""A memory record's JSON is stored once, in its ``memories`` row: the doc no longer carries a copy, and a file
written while it did (``docs.memory`` filled) reads the same, from ``memories``."""

from __future__ import annotations

from backends.sqlite.store import SQLiteStore
from retrieval.protocols import MemoryFilter
from schemas import DecisionOp
from tests.unit.retrieval.test_sqlite_store import DIM, decision, record, unit


async def _reads(store: SQLiteStore) -> tuple:
    live = await store.find_memories("A", MemoryFilter())
    closed = await store.find_memories("A", MemoryFilter(state="invalidated"))
    slot = await store.find_memories("A", MemoryFilter(attribute="lives_in", state="all"))
    cited = await store.find_memories("A", MemoryFilter(message_ids=["m1", "m2"], state="all"))
    near = await store.similar_memories("A", unit(0), k=5)
    return (
        [(r.memory_id, r.valid_to, r.superseded_by) for r in live],
        [(r.memory_id, r.superseded_by) for r in closed],
        [r.memory_id for r in slot],
        [r.memory_id for r in cited],
        [(r.memory_id, round(s, 4)) for r, s in near],
    )


async def test_records_are_stored_once_and_files_with_the_copy_read_the_same(tmp_path):
    store = SQLiteStore(tmp_path / "s.db", DIM)
    await store.bootstrap()
    try:
        paris = record("A", "k1", "Alice lives in Paris").model_copy(update={"source_message_ids": ["m1"]})
        berlin = record("A", "k2", "Alice lives in Berlin", minutes=5).model_copy(
            update={"source_message_ids": ["m2"], "version": 2}
        )
        other = record("B", "k9", "Alice lives in Paris")
        await store.apply_decision(decision("d1", DecisionOp.ADD, "A", rec=paris), unit(0))
        await store.apply_decision(decision("d9", DecisionOp.ADD, "B", rec=other), unit(0))
        await store.apply_decision(decision("d2", DecisionOp.UPDATE, "A", rec=berlin, target="k1"), unit(0, 1))
        assert store.db.execute("SELECT COUNT(*) FROM docs WHERE memory IS NOT NULL").fetchone()[0] == 0
        now = await _reads(store)
        assert now[0] == [("k2", None, None)] and now[1] == [("k1", "k2")] and now[2] == ["k1", "k2"]
        assert now[3] == ["k1", "k2"] and [m for m, _ in now[4]] == ["k2"]
        # as an earlier version wrote the file: each doc with a copy of its record (stale copies: never read)
        store.db.execute("UPDATE docs SET memory = (SELECT m.record FROM memories m WHERE m.memory_id = docs.doc_id)")
        store.db.execute("UPDATE docs SET memory = '{}' WHERE doc_id = 'k1'")
        reopened = SQLiteStore(tmp_path / "s.db", DIM)
        await reopened.bootstrap()
        try:
            assert await _reads(reopened) == now
        finally:
            await reopened.close()
    finally:
        await store.close()
