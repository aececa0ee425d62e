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
