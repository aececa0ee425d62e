"""The embedded store's per-chat vector caches stay under ``vector_cache_bytes``: the chats searched least
recently are dropped and loaded from the file again when next searched, with the same answers as a store that
keeps everything; the chat in use is never the one dropped."""

from __future__ import annotations

from backends.sqlite.store import SQLiteStore
from backends.sqlite.vector_cache import ChatVectors
from memstream.clients import open_store
from memstream.settings import Settings
from schemas import DecisionOp
from tests.unit.retrieval.test_sqlite_store import DIM, decision, msg, record
from tests.unit.retrieval.test_sqlite_vector_sync import answers, cached, vecs

CHATS = ("a", "b", "c")


async def fill(store: SQLiteStore, chat: str, turns: int = 12) -> None:
    await store.upsert_messages([msg(chat, i, f"{chat} turn {i}", sender=f"u{i % 3}") for i in range(turns)],
                                vecs(turns))  # fmt: skip
    for i in range(3):
        rec = record(chat, f"{chat}k{i}", f"{chat} fact {i}", subject=f"s{i % 2}")
        await store.apply_decision(decision(f"{chat}d{i}", DecisionOp.ADD, chat, rec=rec), vecs(1)[0])


def one_chat_bytes(store: SQLiteStore, chat: str) -> int:
    cv = store._chat_vectors(chat)
    assert cv is not None
    return cv.nbytes


async def test_least_recently_searched_chats_are_dropped_and_answer_the_same_when_loaded_again(tmp_path):
    path = tmp_path / "store.db"
    bounded = SQLiteStore(path, DIM)
    await bounded.bootstrap()
    for chat in CHATS:
        await fill(bounded, chat)
    size = one_chat_bytes(bounded, "a")
    bounded.vector_cache_bytes = 2 * size + size // 2  # room for two chats of this size, not three
    free = SQLiteStore(path, DIM)
    await free.bootstrap()
    try:
        queries = vecs(2)
        for chat in CHATS:
            cached(bounded, chat)
        assert bounded._vectors.nbytes <= bounded.vector_cache_bytes
        assert bounded._vectors.evictions >= 1
        assert list(bounded._vectors._chats) == ["b", "c"]  # "a", searched first, went
        loads = bounded._vectors.loads
        for chat in CHATS:  # "a" again: loaded from the file; then "b" goes, and so on
            assert cached(bounded, chat) == cached(free, chat), chat
            assert await answers(bounded, chat, queries) == await answers(free, chat, queries), chat
        assert bounded._vectors.loads > loads
        assert bounded._vectors.nbytes <= bounded.vector_cache_bytes
        await fill(bounded, "a", turns=14)  # a write to a dropped chat, then its search
        assert cached(bounded, "a") == cached(free, "a")
    finally:
        await bounded.close()
        await free.close()


async def test_the_chat_in_use_stays_even_when_it_alone_is_over_the_limit(tmp_path):
    store = SQLiteStore(tmp_path / "store.db", DIM, vector_cache_bytes=1)
    await store.bootstrap()
    fresh = SQLiteStore(tmp_path / "store.db", DIM)
    try:
        for chat in CHATS:
            await fill(store, chat)
            assert cached(store, chat)["rids"]
            assert list(store._vectors._chats) == [chat]
        await fill(store, "c", turns=20)  # this connection's own write extends the cached chat in place
        assert list(store._vectors._chats) == ["c"]
        await fresh.bootstrap()
        assert cached(store, "c") == cached(fresh, "c")
        assert len(cached(store, "c")["rids"]) == 20 + 3  # 20 turns (12 of them again) and the 3 facts
    finally:
        await store.close()
        await fresh.close()


def test_nbytes_counts_the_filled_rows():
    cv = ChatVectors.empty(DIM)
    assert cv.nbytes == 0
    rows = [(i + 1, "turn", float(i), True, None, v) for i, v in enumerate(vecs(10))]
    cv.extend(rows[:5])
    five = cv.nbytes
    assert five >= 5 * DIM * 4
    cv.extend(rows[5:])
    assert cv.nbytes == 2 * five  # the buffers' spare rows are not counted


async def test_the_setting_reaches_the_embedded_store(tmp_path):
    store = await open_store(Settings(data_dir=tmp_path, vector_cache_mb=3), DIM)
    try:
        assert isinstance(store, SQLiteStore)
        assert store.vector_cache_bytes == 3 << 20
    finally:
        await store.close()
