"""What the router keeps between reads changes no answer. A BM25 leg run ahead (while a routed request's
texts are embedded): the embedded store keeps a BM25 ranking only until the next write (its own or another
connection's), and a hybrid search after the leg was run ahead returns what it returns without; the router's
searches find the same pool either way. The topics' participants, kept until the next write, follow a new
topic."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from backends.sqlite.store import SQLiteStore
from retrieval.protocols import SearchQuery
from retrieval.router.candidates import Pool, SearchSpec, bm25_ahead, run_specs
from retrieval.router.pipeline import topic_participants
from retrieval.store_memo import memoises_bm25, until_write
from schemas import ChatMessage, TopicSummary
from tests.unit.streams.test_runner_prefetch import HashingEmbedder

T0 = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)
TEXTS = ["violin lesson with Ann", "the violin was repaired", "Ann bought a cello", "piano recital on Friday",
         "violin and piano duet", "a walk by the river", "Ann's violin teacher moved"]  # fmt: skip


def _msgs(texts: list[str], start: int = 0) -> list[ChatMessage]:
    return [ChatMessage(chat_id="c", message_id=f"m{start + i}", sender="ann", ts=T0 + timedelta(days=start + i),
                        text=t) for i, t in enumerate(texts)]  # fmt: skip


async def _filled(path, embedder: HashingEmbedder) -> SQLiteStore:
    store = SQLiteStore(path, embedder.dim)
    await store.bootstrap()
    await store.upsert_messages(_msgs(TEXTS), await embedder.embed(TEXTS))
    return store


def _hits(hits) -> list[tuple]:
    return [(h.doc.doc_id, h.score, sorted(h.scores.items())) for h in hits]


class NoMemo:
    """The same store seen through the protocol only (no connection): nothing is run ahead."""

    def __init__(self, store: SQLiteStore) -> None:
        self.search = store.search
        self.list_topics = store.list_topics


async def test_a_kept_ranking_is_dropped_by_any_write(tmp_path):
    embedder = HashingEmbedder()
    store = await _filled(tmp_path / "m.db", embedder)
    other = SQLiteStore(tmp_path / "m.db", embedder.dim)  # another connection to the same file
    await other.bootstrap()
    try:
        q = SearchQuery(chat_id="c", text="violin", mode="bm25", k=10)
        first = _hits(await store.search(q))
        assert len(first) == 4 and _hits(await store.search(q)) == first
        await store.upsert_messages(_msgs(["violin violin violin"], 10), None)  # a write of this connection
        own = _hits(await store.search(q))
        assert own[0][0] == "turn:c:m10" and len(own) == 5
        await other.upsert_messages(_msgs(["the violin again, violin"], 11), None)  # of another connection
        assert [h[0] for h in _hits(await store.search(q))] == [h[0] for h in _hits(await other.search(q))]
        assert len(_hits(await store.search(q))) == 6
    finally:
        await other.close()
        await store.close()


async def test_a_hybrid_search_after_its_bm25_leg_ran_ahead_is_the_same(tmp_path):
    embedder = HashingEmbedder()
    ahead = await _filled(tmp_path / "a.db", embedder)
    fresh = await _filled(tmp_path / "b.db", embedder)
    try:
        assert memoises_bm25(ahead) and not memoises_bm25(NoMemo(fresh))
        spec = SearchSpec(label="main", text="Ann violin teacher", embed_text="Ann violin teacher", k=6,
                          candidates=4, kinds=["turn"])  # fmt: skip
        await bm25_ahead(ahead, "c", [spec])
        vector = (await embedder.embed([spec.embed_text], is_query=True))[0].tolist()
        q = SearchQuery(chat_id="c", text=spec.text, vector=vector, mode="hybrid", k=6, candidates=4, kinds=["turn"])
        assert _hits(await ahead.search(q)) == _hits(await fresh.search(q))
        # the router's searches: the same pool with the legs run ahead and without
        specs = [spec, spec.model_copy(update={"label": "sub0", "text": "cello", "embed_text": "Ann cello"})]
        pools = []
        for store in (ahead, NoMemo(fresh)):
            pool = Pool()
            await run_specs(store, embedder, "c", specs, pool, {})
            pools.append((pool.rankings, {i: (c.scores, c.found_by) for i, c in pool.cands.items()}))
        assert pools[0] == pools[1] and pools[0][0]["sub0"]
    finally:
        await ahead.close()
        await fresh.close()


def _topic(i: int, people: list[str]) -> TopicSummary:
    at = T0 + timedelta(days=i)
    return TopicSummary(chat_id="c", topic_id=f"t{i}", state="closed", message_ids=[f"m{i}"], participants=people,
                        started_at=at, last_active_at=at)  # fmt: skip


async def test_the_topics_participants_follow_a_new_topic(tmp_path):
    embedder = HashingEmbedder()
    store = await _filled(tmp_path / "m.db", embedder)
    try:
        await store.upsert_topic(_topic(0, ["ann", "bob"]))
        assert await topic_participants(store, "c") == ({"ann", "bob"}, T0)
        assert until_write(store) and until_write(NoMemo(store)) is None  # kept, for this store only
        named, _ = await topic_participants(store, "c")
        named.add("eve")  # a caller's copy: what is kept does not change
        assert await topic_participants(store, "c") == ({"ann", "bob"}, T0)
        await store.upsert_topic(_topic(3, ["cat"]))
        assert not until_write(store)  # the write emptied it
        expected = ({"ann", "bob", "cat"}, T0 + timedelta(days=3))
        assert await topic_participants(store, "c") == expected == await topic_participants(NoMemo(store), "c")
    finally:
        await store.close()
