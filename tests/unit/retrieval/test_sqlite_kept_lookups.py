"""A memory lookup is kept until the next write: what it returns after any write (this connection's or
another's) is what a fresh read returns, and a caller's list cannot change what is kept; inside a
transaction (whose writes may be rolled back) nothing is kept."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from backends.sqlite.lookup import _find
from backends.sqlite.search import until_write
from backends.sqlite.store import SQLiteStore
from retrieval.protocols import MemoryFilter
from schemas import DecisionOp, MemoryDecision, MemoryKind, MemoryRecord

T0 = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)
FACTS = MemoryFilter(kinds=["fact"])


def _add(i: int, text: str) -> MemoryDecision:
    at = T0 + timedelta(minutes=i)
    record = MemoryRecord(memory_id=f"mem{i}", chat_id="c", kind=MemoryKind.FACT, text=text, speaker="ann",
                          valid_from=at, source_message_ids=[f"m{i}"], source_event_id="ev")  # fmt: skip
    return MemoryDecision(decision_id=f"d{i}", op=DecisionOp.ADD, chat_id="c", reason="test", source_event_id="ev",
                          at=at, record=record)  # fmt: skip


async def test_a_lookup_is_kept_until_any_write(tmp_path):
    store, other = SQLiteStore(tmp_path / "m.db"), SQLiteStore(tmp_path / "m.db")
    await store.bootstrap()
    await other.bootstrap()
    try:
        await store.apply_decision(_add(0, "Ann plays the violin"), None)
        first = await store.find_memories("c", FACTS)
        assert [r.text for r in first] == ["Ann plays the violin"]
        first.clear()  # the caller's list
        assert [r.memory_id for r in await store.find_memories("c", FACTS)] == ["mem0"]
        assert any(k[0] == "find_memories" for k in until_write(store.db))  # kept
        await store.apply_decision(_add(1, "Ann moved to Porto"), None)  # this connection's write
        assert [r.memory_id for r in await store.find_memories("c", FACTS)] == ["mem0", "mem1"]
        await other.apply_decision(_add(2, "Ann has a cat"), None)  # another connection's write
        assert [r.memory_id for r in await store.find_memories("c", FACTS)] == ["mem0", "mem1", "mem2"]
        assert await store.find_memories("c", FACTS) == _find(store.db, "c", FACTS)
        store.db.execute("BEGIN")
        try:
            assert until_write(store.db) == {} and until_write(store.db) is not until_write(store.db)
        finally:
            store.db.execute("ROLLBACK")
    finally:
        await other.close()
        await store.close()
