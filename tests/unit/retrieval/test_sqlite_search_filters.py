"""A filtered BM25 search returns the best docs that pass its filters, whether they are among the first
ones checked or found only in the rest of the ranking."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from backends.sqlite.store import SQLiteStore
from retrieval.protocols import SearchQuery
from schemas import ChatMessage

T0 = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)


def _msg(i: int, text: str) -> ChatMessage:
    return ChatMessage(chat_id="c", message_id=f"m{i}", sender="ann", ts=T0 + timedelta(days=i), text=text)


async def test_a_window_keeps_the_best_of_the_docs_inside_it(tmp_path):
    store = SQLiteStore(tmp_path / "m.db")
    await store.bootstrap()
    try:
        # the violin docs rank by how often they say it: the later days say it less, so the window's docs
        # (days 40-59) are far down the unfiltered ranking
        msgs = [_msg(i, " ".join(["violin"] * max(1, 8 - i // 10)) + f" lesson {i}") for i in range(60)]
        await store.upsert_messages(msgs, None)

        async def ranked(k: int, since=None, until=None) -> list[tuple[str, float]]:
            q = SearchQuery(chat_id="c", text="violin", mode="bm25", k=k, since=since, until=until)
            return [(h.doc.doc_id, h.score) for h in await store.search(q)]

        everything = await ranked(60)
        since, until = T0 + timedelta(days=40), T0 + timedelta(days=59)
        inside = [(d, s) for d, s in everything if 40 <= int(d.rsplit(":m", 1)[1]) <= 59]
        for k in (1, 5, 10, 20):
            assert await ranked(k, since, until) == inside[:k]  # none of them among the first checked
        early = [(d, s) for d, s in everything if int(d.rsplit(":m", 1)[1]) <= 45]
        assert await ranked(10, None, T0 + timedelta(days=45)) == early[:10]  # all among the first checked
    finally:
        await store.close()
