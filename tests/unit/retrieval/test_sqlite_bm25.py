"""The in-memory BM25 of a chat ranks exactly as FTS5's ``bm25(docs_fts, 1.0, 0.0)`` does (same scores to the
bit, same order, ties by rowid), follows every write, and leaves to FTS5 what it cannot tokenise the same way."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pytest

from backends.sqlite import bm25 as sqlite_bm25
from backends.sqlite import search as sqlite_search
from backends.sqlite.schema import chat_token
from backends.sqlite.store import SQLiteStore
from language.text import fts_query
from retrieval.protocols import SearchQuery
from schemas import ChatMessage

T0 = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)
WORDS = ("pizza party hangzhou lake violin quartet sunday rainy weather moved spring paint sunrise museum "
         "charity race camping family beach café 西湖 杭州 音乐 2023 42").split()  # fmt: skip
QUESTIONS = ["Where is the pizza party?", "violin quartet on sunday", "rainy weather at the lake", "café 西湖",
             "family camping beach race", "paint a sunrise", "nothing matches zebra", "2023 charity"]  # fmt: skip


def _texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 12))) for _ in range(n)]


def _msgs(chat: str, texts: list[str], start: int = 0) -> list[ChatMessage]:
    return [ChatMessage(chat_id=chat, message_id=f"m{start + i}", sender=f"u{i % 3}",
                        ts=T0 + timedelta(minutes=start + i), text=t) for i, t in enumerate(texts)]  # fmt: skip


def _fts(db, chat: str, question: str) -> list[tuple[int, float]]:
    """FTS5's own ranking: the reference."""
    match = f'chat : "{chat_token(chat)}" AND body : ({fts_query(question)})'
    rows = db.execute("SELECT rowid, bm25(docs_fts, 1.0, 0.0) AS s FROM docs_fts WHERE docs_fts MATCH ?"
                      " ORDER BY s, rowid", (match,)).fetchall()  # fmt: skip
    return [(rid, -s) for rid, s in rows]


def _ours(db, chat: str, question: str) -> list[tuple[int, float]] | None:
    found = sqlite_bm25.ranked(db, chat, [t[1:-1] for t in fts_query(question).split(" OR ")])
    return None if found is None else sqlite_bm25.best(*found, None)


@pytest.fixture
async def store(tmp_path):
    s = SQLiteStore(tmp_path / "m.db")
    await s.bootstrap()
    await s.upsert_messages(_msgs("A", _texts(300, 1)), None)
    await s.upsert_messages(_msgs("B", _texts(120, 2)), None)  # another chat: the idf is table-wide
    yield s
    await s.close()


async def test_scores_and_order_equal_fts5_to_the_bit(store):
    for chat in ("A", "B"):
        for q in QUESTIONS:
            assert _ours(store.db, chat, q) == _fts(store.db, chat, q), (chat, q)
    assert _ours(store.db, "A", "nothing matches zebra") == []


async def test_every_write_is_seen(store, monkeypatch):
    monkeypatch.setattr(sqlite_bm25, "REBUILD_RATIO", 0)  # rebuild after every write (not throttled)
    db = store.db
    assert _ours(db, "A", "pizza lake") == _fts(db, "A", "pizza lake")
    await store.upsert_messages(_msgs("A", ["pizza pizza lake zebra"], start=1000), None)  # append
    assert _ours(db, "A", "pizza zebra") == _fts(db, "A", "pizza zebra")
    await store.upsert_messages(_msgs("B", ["zebra zebra"], start=2000), None)  # another chat: the idf moves
    assert _ours(db, "A", "zebra pizza") == _fts(db, "A", "zebra pizza")
    edited = _msgs("A", ["zebra lake lake"], start=5)[0]  # an edit of the same length, rowid kept
    assert await store.replace_message(edited, None)
    assert _ours(db, "A", "zebra lake pizza") == _fts(db, "A", "zebra lake pizza")
    await store.forget_user("A", "u1")  # deletions
    assert _ours(db, "A", "zebra lake pizza") == _fts(db, "A", "zebra lake pizza")


async def test_a_rebuild_is_not_repeated_at_once_fts5_ranks_meanwhile(store, monkeypatch):
    db = store.db
    assert _ours(db, "A", "pizza") is not None
    monkeypatch.setattr(sqlite_bm25, "REBUILD_RATIO", 10**9)  # a rebuild now counts as too soon
    await store.upsert_messages(_msgs("A", ["pizza zebra"], start=3000), None)
    assert _ours(db, "A", "pizza") is None  # stale and too soon to rebuild: FTS5 must rank
    q = SearchQuery(chat_id="A", text="pizza zebra", mode="bm25", k=10)
    assert sqlite_search.bm25(db, q, 10)[0][0] == db.execute("SELECT max(rid) FROM docs").fetchone()[0]


async def test_an_empty_table_and_an_unknown_chat_find_nothing(tmp_path):
    s = SQLiteStore(tmp_path / "e.db")
    await s.bootstrap()
    try:
        assert _ours(s.db, "A", "pizza") == [] == _fts(s.db, "A", "pizza")
        await s.upsert_messages(_msgs("A", ["pizza"]), None)
        assert _ours(s.db, "nobody", "pizza") == [] == _fts(s.db, "nobody", "pizza")
    finally:
        await s.close()


async def test_tokens_unicode61_could_see_differently_are_left_to_fts5(store):
    assert not sqlite_bm25.plain("Pizza") and not sqlite_bm25.plain("don't") and not sqlite_bm25.plain("é́")
    assert sqlite_bm25.plain("café") and sqlite_bm25.plain("西湖") and sqlite_bm25.plain("2023")
    assert sqlite_bm25.ranked(store.db, "A", ["pizza", "Pizza"]) is None


async def test_search_results_equal_with_filters(store):
    """bm25 legs with kinds, a time window and superseded docs: the same hits whichever path ranks."""
    db = store.db
    for q in QUESTIONS:
        for kw in ({}, {"kinds": ["turn"]}, {"kinds": ["fact"]},
                   {"since": T0 + timedelta(minutes=100), "until": T0 + timedelta(minutes=130)}):  # fmt: skip
            sq = SearchQuery(chat_id="A", text=q, mode="bm25", k=40, **kw)
            got = sqlite_search.bm25(db, sq, 40)
            where, args = sqlite_search._filters(sq)
            match = f'chat : "{chat_token("A")}" AND body : ({fts_query(q)})'
            ref = db.execute("SELECT d.rid, bm25(docs_fts, 1.0, 0.0) AS s FROM docs_fts JOIN docs d ON"
                             f" d.rid = docs_fts.rowid WHERE docs_fts MATCH ? AND d.chat_id = ?{where}"
                             " ORDER BY s, d.rid LIMIT 40", (match, "A", *args)).fetchall()  # fmt: skip
            assert got == [(rid, -s) for rid, s in ref], (q, kw)


async def test_a_write_by_another_connection_midway_does_not_break_the_ranking(store, tmp_path, monkeypatch):
    """The statistics, postings and document frequencies are read in one snapshot: another process writing
    between them (a served chat under load) once made a document frequency exceed the row count (a 500)."""
    writer = SQLiteStore(tmp_path / "m.db")
    await writer.bootstrap()
    before = _fts(store.db, "A", "pizza party")
    real, wrote = sqlite_bm25._doc_freq, []

    def write_then_read(db, entry, term, version):
        if not wrote:  # another connection adds rows with the term between the statistics and this read
            wrote.append(True)
            writer.db.executemany(
                "INSERT INTO docs_fts (body, chat) VALUES (?, ?)",
                [("pizza party pizza", chat_token("C"))] * 500,
            )
        return real(db, entry, term, version)

    monkeypatch.setattr(sqlite_bm25, "_doc_freq", write_then_read)
    try:
        assert _ours(store.db, "A", "pizza party") == before  # the snapshot before the write
        assert wrote and not store.db.in_transaction
        monkeypatch.setattr(sqlite_bm25, "_doc_freq", real)
        # rebuilt at once (a loaded box could otherwise be within REBUILD_RATIO x the last build: FTS5 ranks)
        monkeypatch.setattr(sqlite_bm25, "REBUILD_RATIO", 0)
        assert _ours(store.db, "A", "pizza party") == _fts(store.db, "A", "pizza party") != before
    finally:
        await writer.close()
