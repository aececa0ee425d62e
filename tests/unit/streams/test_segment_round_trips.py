"""The segmenter's store traffic per batch: the touched topics go in one ``upsert_topics`` write, and a
closed topic's messages are read once for its job and its stored summary (each store call is a round trip
to Elasticsearch in production). The stored topics are those of one write per topic."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

from memstream.clients import build_clients
from memstream.ops import ingest
from memstream.settings import Settings
from retrieval.sqlite_store import SQLiteStore
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


async def _ingest(tmp_path, store_cls):
    data = write_jsonl(tmp_path / "in.jsonl", _rows())
    clients = await build_clients(Settings(data_dir=tmp_path / f"data-{store_cls.__name__}"), embedder=None)
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


async def test_the_stored_topics_are_those_of_one_write_per_topic(tmp_path):
    class OneAtATime(SQLiteStore):
        async def upsert_topics(self, topics):
            for topic in topics:
                await SQLiteStore.upsert_topics(self, [topic])

    _, _, batched, batched_turns = await _ingest(tmp_path, SQLiteStore)
    _, _, single, single_turns = await _ingest(tmp_path, OneAtATime)
    assert batched == single and batched_turns == single_turns
    assert all(tid for turns in batched_turns.values() for _, tid in turns)
