"""The pipeline's store traffic per batch (each store call is a round trip to Elasticsearch in production):
the segmenter writes the touched topics in one ``upsert_topics`` and reads the messages of every topic a
batch closes in one read across chats; the graph stage reads a batch of results' senders at once; the
consolidator reads its candidates' neighbours one call a result and the turn vectors of a batch of results
once for itself and the indexer. The stored topics are those of one write per topic."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

from backends.sqlite.store import SQLiteStore
from memstream.clients import build_clients
from memstream.ops import ingest
from memstream.settings import Settings
from tests.helpers import write_jsonl


class CountingStore(SQLiteStore):
    """The embedded store, counting the calls the segmenter makes (and the messages each read asks for)."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.calls: Counter[str] = Counter()
        self.asked: Counter[tuple[str, str]] = Counter()

    async def upsert_topic(self, topic):
        self.calls["upsert_topic"] += 1
        return await super().upsert_topic(topic)

    async def upsert_topics(self, topics):
        self.calls["upsert_topics"] += 1
        self.calls["topics written"] += len(topics)
        return await super().upsert_topics(topics)

    async def get_messages(self, chat_id, message_ids):
        self.calls["get_messages"] += 1
        self.asked.update((chat_id, m) for m in message_ids)
        return await super().get_messages(chat_id, message_ids)

    async def get_messages_in(self, keys):
        self.calls["get_messages_in"] += 1
        self.calls["get_messages"] -= len({c for c, _ in keys})  # its own reads below are one round trip
        return await super().get_messages_in(keys)

    async def turn_vectors(self, chat_id, message_ids):
        self.calls["turn_vectors"] += 1
        return await super().turn_vectors(chat_id, message_ids)

    async def turn_vectors_in(self, keys):
        self.calls["turn_vectors_in"] += 1
        self.calls["turn_vectors"] -= len({c for c, _ in keys})
        return await super().turn_vectors_in(keys)

    async def similar_memories(self, chat_id, vector, **kw):
        self.calls["similar_memories"] += 1
        return await super().similar_memories(chat_id, vector, **kw)

    async def similar_memories_many(self, chat_id, vectors, **kw):
        self.calls["similar_memories_many"] += 1  # answered without a call per vector
        return await super().similar_memories_many(chat_id, vectors, **kw)


def _rows() -> list[dict]:
    """Three chats whose long gaps close a topic every five messages."""
    start, rows = datetime(2024, 3, 1, 9, 0, tzinfo=UTC), []
    for c in range(3):
        t = start
        for i in range(40):
            t += timedelta(minutes=1 if i % 5 else 600)
            rows.append({"chat_id": f"c{c}", "message_id": f"c{c}-{i}", "sender": ["ann", "bo"][i % 2],
                         "ts": t.isoformat(), "text": f"topic {i // 5} of chat {c}: line {i} about item {i // 5}"})  # fmt: skip
    return rows


async def _ingest(tmp_path, store_cls, embedder=None):
    data = write_jsonl(tmp_path / "in.jsonl", _rows())
    clients = await build_clients(Settings(data_dir=tmp_path / f"data-{store_cls.__name__}"), embedder=embedder)
    store = store_cls(tmp_path / f"{store_cls.__name__}.db", None)
    await store.bootstrap()
    await clients.store.close()
    clients.store = store
    try:
        report = await ingest(clients, data)
        topics = {c: await store.list_topics(c) for c in ("c0", "c1", "c2")}
        turns = {c: store.db.execute("SELECT doc_id, topic_id FROM docs WHERE kind = 'turn' AND chat_id = ? "
                                     "ORDER BY doc_id", (c,)).fetchall() for c in topics}  # fmt: skip
    finally:
        await clients.close()
    return store, report, topics, turns


async def test_a_batch_writes_its_topics_at_once_and_reads_a_closed_topic_once(tmp_path):
    store, report, topics, _ = await _ingest(tmp_path, CountingStore)
    assert report.read == 120
    closed = sum(1 for ts in topics.values() for t in ts if t.state == "closed")
    assert closed == 24  # 8 topics in each of 3 chats
    assert store.calls["upsert_topic"] == 0  # no write of one topic at a time
    # one write per segmenter batch (the input is one batch, then the end-of-input flush)
    assert 1 <= store.calls["upsert_topics"] <= 2 < store.calls["topics written"]
    # each message is read three times: the edit check of its batch, its topic's close (the job and the
    # stored summary: one read), and the graph stage's lookup of the result's senders
    assert set(store.asked.values()) == {3}
    # ...each time in a read across the chats: one a segmenter batch for the edit check and one for the
    # closed topics (2 batches), one a graph batch (24 results, 16 a batch); none a topic or a result
    assert store.calls["get_messages"] == 0
    assert store.calls["get_messages_in"] <= 6


async def test_a_result_asks_for_its_neighbours_once_and_a_batch_for_its_turn_vectors_once(tmp_path, minilm):
    store, report, topics, _ = await _ingest(tmp_path, CountingStore, embedder=minilm)
    results = sum(1 for ts in topics.values() for t in ts if t.state == "closed")
    assert report.read == 120 and results == 24
    assert store.calls["similar_memories"] == 0 and store.calls["turn_vectors"] == 0  # none one at a time
    assert store.calls["similar_memories_many"] == results  # every candidate of a result in one call
    assert 1 <= store.calls["turn_vectors_in"] <= 3  # the composed items' turns: a read a batch of results


async def test_the_stored_topics_are_those_of_one_write_per_topic(tmp_path):
    class OneAtATime(SQLiteStore):
        async def upsert_topics(self, topics):
            for topic in topics:
                await SQLiteStore.upsert_topics(self, [topic])

    _, _, batched, batched_turns = await _ingest(tmp_path, SQLiteStore)
    _, _, single, single_turns = await _ingest(tmp_path, OneAtATime)
    assert batched == single and batched_turns == single_turns
    assert all(tid for turns in batched_turns.values() for _, tid in turns)
