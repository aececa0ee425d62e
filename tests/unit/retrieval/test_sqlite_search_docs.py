"""Docs read by a search are reused until anything is written, by this connection or another one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from retrieval.protocols import SearchQuery
from retrieval.sqlite_store import SQLiteStore
from schemas import ChatMessage

T0 = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)


def _msg(chat: str, i: int, text: str) -> ChatMessage:
    return ChatMessage(chat_id=chat, message_id=f"m{i}", sender="ann", ts=T0 + timedelta(minutes=i), text=text)


async def _texts(store: SQLiteStore, chat: str, text: str) -> list[str]:
    return [h.doc.text for h in await store.search(SearchQuery(chat_id=chat, text=text, mode="bm25", k=10))]


async def test_an_edit_and_another_connections_write_are_seen(tmp_path):
    a, b = SQLiteStore(tmp_path / "m.db"), SQLiteStore(tmp_path / "m.db")
    await a.bootstrap()
    await b.bootstrap()
    try:
        await a.upsert_messages([_msg("c", 0, "the violin lesson"), _msg("d", 1, "violin in another chat")], None)
        assert await _texts(a, "c", "violin") == ["the violin lesson"]  # read (and kept) once
        assert await _texts(a, "c", "violin") == ["the violin lesson"]  # served again; chat d never leaks
        assert await a.replace_message(_msg("c", 0, "the violin concert"), None)  # this connection writes
        assert await _texts(a, "c", "violin") == ["the violin concert"]
        assert await b.replace_message(_msg("c", 0, "a violin recital"), None)  # another connection writes
        assert await _texts(a, "c", "violin") == ["a violin recital"]
        assert await _texts(a, "d", "violin") == ["violin in another chat"]
    finally:
        await a.close()
        await b.close()


async def test_the_filters_read_from_docs_already_read_keep_what_sql_keeps(tmp_path):
    """A filtered search over docs read before (kinds, chat, currency checked in memory) keeps what the same
    search checked in SQL keeps (a time bound that excludes nothing sends every check to SQL)."""
    store = SQLiteStore(tmp_path / "m.db")
    await store.bootstrap()
    try:
        await store.upsert_messages([_msg("c", i, f"violin lesson {i}") for i in range(30)]
                                    + [_msg("d", 40, "violin lesson in another chat")], None)  # fmt: skip
        queries = [SearchQuery(chat_id=chat, text="violin lesson", mode="bm25", k=k, kinds=kinds, include_superseded=sup)
                   for chat in ("c", "d") for k in (3, 20) for kinds in (None, ["turn"], ["fact"], ["fact", "turn"])
                   for sup in (False, True)]  # fmt: skip
        for q in queries:  # read every doc once
            await store.search(q.model_copy(update={"kinds": None}))
        for q in queries:
            got = [(h.doc.doc_id, h.score) for h in await store.search(q)]
            in_sql = q.model_copy(update={"since": T0 - timedelta(days=1)})
            assert got == [(h.doc.doc_id, h.score) for h in await store.search(in_sql)]
            assert all(h.doc.chat_id == q.chat_id for h in await store.search(q))
            assert (got == []) == (q.kinds == ["fact"]), q
    finally:
        await store.close()
