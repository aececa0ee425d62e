"""Statements that name a chat's rows by key (``doc_id IN (…)``, ``rid IN (…)``) find them by that key, never by
reading the chat's whole index: without table statistics SQLite prefers the chat's index from about ten keys
on, which made each topic's ``UPDATE docs`` cost O(chat size) (7 ms at 9,000 docs in one chat)."""

from __future__ import annotations

import re
import sqlite3
from datetime import timedelta

from backends.sqlite.store import SQLiteStore
from schemas import DecisionOp, TopicSummary
from tests.unit.retrieval.test_sqlite_store import DIM, T0, decision, msg, record, unit

CHAT_INDEXES = re.compile(r"USING (?:COVERING )?INDEX (docs_by_chat|docs_closed|vectors_by_chat|memories_by_\w+) "
                          r"\(chat_id=\?\)$")  # fmt: skip


def plans_of_keyed_statements(db: sqlite3.Connection, statements: list[str]) -> list[tuple[str, str]]:
    """(statement, plan line) of every traced statement with an IN list of 10+ values (a list of source message
    ids matched through ``json_each`` has no index to use: the chat's rows are read for it, by design)."""
    out = []
    for sql in statements:
        if "json_each" in sql or not re.search(r" IN \((?:[^,()]+,){9,}", sql) or not sql.lstrip().upper().startswith(
            ("SELECT", "UPDATE", "DELETE")
        ):
            continue
        for row in db.execute("EXPLAIN QUERY PLAN " + sql):
            out.append((sql[:90], row[3]))
    return out


async def test_a_topic_and_a_users_deletion_find_their_rows_by_key(tmp_path):
    store = SQLiteStore(tmp_path / "s.db", DIM)
    await store.bootstrap()
    try:
        n = 40
        await store.upsert_messages([msg("A", i, f"turn {i}", sender=f"u{i % 2}") for i in range(n)],
                                    [unit(i % DIM) for i in range(n)])  # fmt: skip
        for i in range(12):
            rec = record("A", f"k{i}", f"fact {i}", minutes=i).model_copy(update={"source_message_ids": [f"m{2 * i}"]})
            await store.apply_decision(decision(f"d{i}", DecisionOp.ADD, "A", rec=rec), unit(i % DIM))
        statements: list[str] = []
        store.db.set_trace_callback(statements.append)
        topic = TopicSummary(chat_id="A", topic_id="t1", state="closed", message_ids=[f"m{i}" for i in range(n)],
                             participants=["u0", "u1"], started_at=T0, last_active_at=T0 + timedelta(minutes=n))  # fmt: skip
        await store.upsert_topic(topic)
        await store.forget_user("A", "u0")
        store.db.set_trace_callback(None)
        plans = plans_of_keyed_statements(store.db, statements)
        assert any(sql.startswith("UPDATE docs SET topic_id") for sql, _ in plans)
        assert any(sql.startswith("DELETE FROM docs") for sql, _ in plans)
        assert not [(sql, plan) for sql, plan in plans if CHAT_INDEXES.search(plan)]
        assert [m.message_id for m in await store.list_messages("A")] == [f"m{i}" for i in range(1, n, 2)]
    finally:
        await store.close()


async def test_a_chats_live_profiles_are_read_through_their_partial_index(tmp_path):
    """Retrieval's set questions read every live profile of the chat; a long chat keeps hundreds of superseded
    versions of each, which the (chat, kind) index would read too."""
    from retrieval.protocols import MemoryFilter
    from schemas import MemoryKind

    store = SQLiteStore(tmp_path / "s.db", DIM)
    await store.bootstrap()
    try:
        prev: dict[str, str] = {}
        for v in range(6):  # six versions each of two people's profiles, in two chats
            for chat in ("A", "B"):
                for who in ("ann", "bo"):
                    rec = record(chat, f"{chat}-{who}-v{v}", f"{who} read book {v}", subject=who, minutes=v)
                    rec = rec.model_copy(update={"kind": MemoryKind.PROFILE, "attribute": "profile:reading",
                                                 "version": v + 1, "source_message_ids": [f"m{v}"]})  # fmt: skip
                    key = f"{chat}-{who}"
                    op = DecisionOp.UPDATE if key in prev else DecisionOp.ADD
                    d = decision(f"d-{rec.memory_id}", op, chat, rec=rec, target=prev.get(key), minutes=v)
                    await store.apply_decision(d, None)
                    prev[key] = rec.memory_id
        statements: list[str] = []
        store.db.set_trace_callback(statements.append)
        live = await store.find_memories("A", MemoryFilter(kinds=["profile"], limit=10_000))
        store.db.set_trace_callback(None)
        assert sorted(r.memory_id for r in live) == ["A-ann-v5", "A-bo-v5"]
        every = await store.find_memories("A", MemoryFilter(kinds=["profile"], state="all", limit=10_000))
        assert len(every) == 12 and {r.chat_id for r in every} == {"A"}
        [sql] = [s for s in statements if "docs_live_profiles" in s]
        plan = [row[3] for row in store.db.execute("EXPLAIN QUERY PLAN " + sql.replace("INDEXED BY docs_live_profiles", ""))]
        assert any("docs_by_chat" in p for p in plan)  # what SQLite would choose by itself
    finally:
        await store.close()
