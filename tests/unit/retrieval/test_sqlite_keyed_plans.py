"""Statements that name a chat's rows by key (``doc_id IN (…)``, ``rid IN (…)``) find them by that key, never by
reading the chat's whole index: without table statistics SQLite prefers the chat's index from about ten keys
on, which made each topic's ``UPDATE docs`` cost O(chat size) (7 ms at 9,000 docs in one chat)."""

from __future__ import annotations

import re
import sqlite3
from datetime import timedelta

from retrieval.sqlite_store import SQLiteStore
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
