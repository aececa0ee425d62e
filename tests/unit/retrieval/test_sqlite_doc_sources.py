"""Records by source message (``find_memories(message_ids=…)``) read the ``doc_sources`` index for every kind
but profiles: the same records, in the same order, as filtering all the chat's records, through additions,
invalidations and a user's deletion; a file written before the index is filled when opened."""

from __future__ import annotations

import random

from backends.sqlite.store import SQLiteStore
from retrieval.protocols import MemoryFilter
from schemas import DecisionOp, MemoryKind
from tests.unit.retrieval.test_sqlite_store import DIM, decision, msg, record, unit

KINDS = [MemoryKind.FACT, MemoryKind.SUMMARY, MemoryKind.QA, MemoryKind.PROFILE, MemoryKind.TITLE]


async def fill(store: SQLiteStore, chat: str, rnd: random.Random) -> None:
    await store.upsert_messages([msg(chat, i, f"turn {i}", sender=f"u{i % 3}") for i in range(30)],
                                [unit(i % DIM) for i in range(30)])  # fmt: skip
    for i in range(40):
        kind = KINDS[i % len(KINDS)]
        sources = [f"m{j}" for j in sorted(rnd.sample(range(30), rnd.randint(1, 6)))]
        rec = record(chat, f"{chat}k{i}", f"{kind.value} {i}", minutes=rnd.randint(0, 50)).model_copy(
            update={"kind": kind, "source_message_ids": sources, "attribute": None}
        )
        await store.apply_decision(decision(f"{chat}d{i}", DecisionOp.ADD, chat, rec=rec, minutes=i), unit(i % DIM))
    for i in range(0, 40, 7):  # some versions invalidated
        await store.apply_decision(decision(f"{chat}x{i}", DecisionOp.DELETE, chat, target=f"{chat}k{i}", minutes=60), None)


async def same_as_a_filter(store: SQLiteStore, chat: str, rnd: random.Random) -> int:
    everything = await store.find_memories(chat, MemoryFilter(state="all", limit=100_000))
    checked = 0
    for _ in range(30):
        ids = [f"m{j}" for j in rnd.sample(range(32), rnd.randint(1, 8))]
        for kinds in (None, ["fact"], ["profile"], ["summary", "qa", "profile"]):
            for state in ("live", "invalidated", "all"):
                for limit in (1000, 3):
                    q = MemoryFilter(message_ids=ids, kinds=kinds, state=state, limit=limit)
                    want = [r.memory_id for r in everything
                            if set(ids) & set(r.source_message_ids) and (kinds is None or r.kind.value in kinds)
                            and (state == "all" or (r.valid_to is None) == (state == "live"))][:limit]  # fmt: skip
                    assert [r.memory_id for r in await store.find_memories(chat, q)] == want, (ids, kinds, state)
                    checked += len(want)
    return checked


async def test_by_source_equals_a_filter_of_all_records_through_writes_and_a_deletion(tmp_path):
    rnd = random.Random(7)
    store = SQLiteStore(tmp_path / "s.db", DIM)
    await store.bootstrap()
    try:
        for chat in ("A", "B"):
            await fill(store, chat, rnd)
        assert await same_as_a_filter(store, "A", rnd) > 0
        indexed = store.db.execute("SELECT COUNT(*) FROM doc_sources WHERE chat_id = 'A'").fetchone()[0]
        assert indexed > 0
        await store.forget_user("A", "u1")
        assert await same_as_a_filter(store, "A", rnd) > 0
        rids = {r[0] for r in store.db.execute("SELECT rid FROM docs")}
        assert {r[0] for r in store.db.execute("SELECT rid FROM doc_sources")} <= rids  # nothing left dangling
        await store.forget_chat("B")
        assert store.db.execute("SELECT COUNT(*) FROM doc_sources WHERE chat_id = 'B'").fetchone()[0] == 0
    finally:
        await store.close()


async def test_a_file_written_before_the_index_is_filled_when_opened(tmp_path):
    rnd = random.Random(3)
    path = tmp_path / "s.db"
    store = SQLiteStore(path, DIM)
    await store.bootstrap()
    await fill(store, "A", rnd)
    full = sorted(store.db.execute("SELECT chat_id, message_id, rid FROM doc_sources"))
    store.db.execute("DELETE FROM doc_sources")  # as a file of the previous release holds it
    store.db.execute("DELETE FROM meta WHERE key = 'doc_sources'")
    await store.close()
    again = SQLiteStore(path, DIM)
    await again.bootstrap()
    try:
        assert sorted(again.db.execute("SELECT chat_id, message_id, rid FROM doc_sources")) == full
        assert await same_as_a_filter(again, "A", rnd) > 0
    finally:
        await again.close()
