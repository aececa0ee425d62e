"""Docs read by a search are reused until anything is written, by this connection or another one."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from backends.sqlite.store import SQLiteStore
from retrieval.protocols import SearchQuery
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


async def test_filters_checked_on_kept_columns_keep_what_they_keep_in_sql(tmp_path):
    """A filtered search (chat, kinds, time bounds; its docs' filtered columns read once and kept) returns the
    best of the unfiltered ranking that pass the filters, on a first read and on a later one."""
    store = SQLiteStore(tmp_path / "m.db")
    await store.bootstrap()
    try:
        await store.upsert_messages([_msg("c", i, f"violin lesson {i} " + "violin " * (i % 4)) for i in range(40)]
                                    + [_msg("d", 50, "violin lesson in another chat")], None)  # fmt: skip
        bounds = [(None, None), (T0 + timedelta(minutes=10), None), (None, T0 + timedelta(minutes=25)),
                  (T0 + timedelta(minutes=5), T0 + timedelta(minutes=5))]  # fmt: skip
        for _ in range(2):
            for chat in ("c", "d"):
                q = SearchQuery(chat_id=chat, text="violin lesson", mode="bm25", k=100)
                everything = await store.search(q)
                for k in (3, 20):
                    for kinds in (None, ["turn"], ["fact"], ["fact", "turn"]):
                        for since, until in bounds:
                            want = [(h.doc.doc_id, h.score) for h in everything
                                    if (kinds is None or h.doc.kind in kinds) and (since is None or h.doc.ts >= since)
                                    and (until is None or h.doc.ts <= until)][:k]  # fmt: skip
                            f = q.model_copy(update={"k": k, "kinds": kinds, "since": since, "until": until})
                            assert [(h.doc.doc_id, h.score) for h in await store.search(f)] == want
                            assert since is not None or until is not None or (want == []) == (kinds == ["fact"])
    finally:
        await store.close()
