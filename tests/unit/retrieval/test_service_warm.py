"""``retrieval.service.warm``: the router's first questions asked in an empty chat before a server takes
requests. It reads nothing of any chat and writes nothing."""

from __future__ import annotations

import sys

from backends.sqlite.store import SQLiteStore
from retrieval.service import WARM_CHAT, warm
from tests.unit.retrieval.test_sqlite_store import DIM, msg


async def test_warm_up_reads_and_writes_nothing(tmp_path):
    store = SQLiteStore(tmp_path / "s.db", DIM)
    await store.bootstrap()
    try:
        await store.upsert_messages([msg("A", 1, "Ann started a new job at the bakery last week.")], None)
        changes, version = store.db.total_changes, store.db.execute("PRAGMA data_version").fetchone()
        took = await warm(store, None)
        assert took > 0
        assert store.db.total_changes == changes and store.db.execute("PRAGMA data_version").fetchone() == version
        assert await store.chats() == ["A"] and await store.list_messages(WARM_CHAT) == []
        assert "retrieval.router.pipeline" in sys.modules and "retrieval.graph_expand" in sys.modules
    finally:
        await store.close()
