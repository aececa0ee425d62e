"""The worker side of the stages (streams.worker.Pipeline) on the in-process backends, without a broker."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from memstream.clients import build_clients
from memstream.ops import IngestReport, to_records
from memstream.settings import Settings
from memstream.worker import build_app
from schemas import ChatMessage
from streams.faust_app import record_of
from streams.kafka_log import ID_HEADER, brokers_of
from streams.log import Produce, Record
from streams.topics import DISTILL_JOBS, DISTILL_RESULTS, MEMORY_DECISIONS, RAW_MESSAGES, TOPIC_SEGMENTS
from streams.worker import Pipeline, WorkerConfig
from streams.working_memory import InProcessWorkingMemory
from tests.helpers import make_messages


def raw_records(rows: list[dict]) -> list[Record]:
    parsed = [
        SimpleNamespace(message=ChatMessage.model_validate(r), raw="", error=None, where="") for r in rows
    ]
    items = list(to_records(parsed, IngestReport(), flush=True, source="test"))
    return [Record(p.topic, i, p.key, p.record_id, p.value) for i, p in enumerate(items)]


def as_records(produced: list[Produce], topic: str) -> list[Record]:
    return [
        Record(p.topic, i, p.key, p.record_id, p.value) for i, p in enumerate(produced) if p.topic == topic
    ]


class Sink:
    def __init__(self) -> None:
        self.sent: list[Produce] = []

    async def __call__(self, items: list[Produce]) -> None:
        self.sent += items

    def ids(self, topic: str) -> list[str]:
        return [p.record_id for p in self.sent if p.topic == topic]


@pytest.fixture
async def pipeline(tmp_path):
    clients = await build_clients(Settings(data_dir=tmp_path, embedder="none"), embedder=None)
    yield Pipeline(clients, InProcessWorkingMemory(), WorkerConfig(), clients.settings.pipeline)
    await clients.close()


@pytest.mark.parametrize("kept", [0, 256])
async def test_segmenting_in_batches_through_working_memory_equals_one_batch(tmp_path, pipeline, kept):
    """Every batch reads the chats' pools from working memory: parsed each time (``kept_pools=0``), or the
    pool this worker stored last, kept parsed while the stored JSON is still the one it wrote."""
    records = raw_records(make_messages(2, 120))
    whole = Sink()
    await pipeline.segment_batch(records, whole)

    cfg = WorkerConfig(kept_pools=kept)
    other = Pipeline(pipeline.clients, InProcessWorkingMemory(), cfg, pipeline.pipeline_cfg)
    split = Sink()
    for i in range(0, len(records), 17):
        await other.segment_batch(records[i : i + 17], split)
    assert split.ids(TOPIC_SEGMENTS.name) == whole.ids(TOPIC_SEGMENTS.name)
    assert split.ids(DISTILL_JOBS.name) == whole.ids(DISTILL_JOBS.name) != []
    assert [p.value for p in split.sent] == [p.value for p in whole.sent]
    assert await other.wm.get_pool("chat-0") is not None
    assert len(other._written) == (2 if kept else 0)


def test_written_pools_keep_what_this_worker_stored_and_parse_anything_else():
    from agents.segmenter import ChatPool
    from streams.worker import WrittenPools

    kept = WrittenPools(2)
    pools = {c: ChatPool(chat_id=c, names={"ann": "u1"}) for c in ("a", "b", "c")}
    raws = {c: p.model_dump_json() for c, p in pools.items()}
    for c in ("a", "b"):
        kept.wrote(c, raws[c], pools[c])
    assert kept.load("a", raws["a"]) is pools["a"]  # still the JSON this worker stored: no parse
    changed = ChatPool(chat_id="a", names={"bob": "u2"}).model_dump_json()  # stored by someone else
    got = kept.load("a", changed)
    assert got is not pools["a"] and got.names == {"bob": "u2"}
    kept.wrote("c", raws["c"], pools["c"])  # the chat stored longest ago goes
    assert len(kept) == 2 and kept.load("a", raws["a"]) is not pools["a"]
    assert kept.load("b", raws["b"]) is pools["b"]
    kept.forget("b")
    assert kept.load("b", raws["b"]) is not pools["b"]
    kept.clear()
    assert len(kept) == 0


async def test_a_failed_batch_and_a_new_deletion_drop_the_pools_kept_parsed(pipeline):
    """A batch retried after a failure starts from the stored pools, parsed: nothing the failed attempt
    touched is reused; a deletion read from the ledger drops them as it empties the text caches."""

    async def failing(items: list[Produce]) -> None:
        raise RuntimeError("broker down")

    records = raw_records(make_messages(1, 60))[:-1]
    await pipeline.segment_batch(records[:30], Sink())
    assert len(pipeline._written) == 1
    with pytest.raises(RuntimeError):
        await pipeline.segment_batch(records[30:], failing)
    assert len(pipeline._written) == 0
    retried = Sink()
    await pipeline.segment_batch(records[30:], retried)  # the retry: the pool stored after the first batch
    assert retried.ids(TOPIC_SEGMENTS.name) != [] and len(pipeline._written) == 1
    await pipeline.clients.log.record_deletion("c0", "u1", "2026-01-01T00:00:00+00:00")
    await pipeline.deletions()
    assert len(pipeline._written) == 0


async def test_a_redelivered_batch_emits_nothing_new_and_a_stale_pool_write_loses(pipeline):
    records = raw_records(make_messages(1, 60))[:-1]  # no flush: topics stay open
    first, again = Sink(), Sink()
    await pipeline.segment_batch(records[:40], first)
    await pipeline.segment_batch(records[40:], first)
    pool_after = await pipeline.wm.get_pool("chat-0")
    assert await pipeline.wm.topic_windows("chat-0")  # the active topics' windows
    await pipeline.segment_batch(records[:40], again)  # redelivered after the pool moved on
    assert again.ids(TOPIC_SEGMENTS.name) == []
    assert await pipeline.wm.get_pool("chat-0") == pool_after  # fenced: offset 39 < 59


async def test_consolidation_is_journalled_and_applied_before_it_is_emitted(pipeline):
    seg = Sink()
    await pipeline.segment_batch(raw_records(make_messages(1, 80)), seg)
    dist = Sink()
    await pipeline.distill_batch(as_records(seg.sent, DISTILL_JOBS.name), dist)
    results = as_records(dist.sent, DISTILL_RESULTS.name)
    assert results

    first = Sink()
    await pipeline.consolidate_batch(results, first)
    decisions = first.ids(MEMORY_DECISIONS.name)
    assert decisions and await pipeline.clients.store.list_memories("chat-0")  # applied already
    before = sorted(
        m.model_dump_json() for m in await pipeline.clients.store.list_memories("chat-0", live_only=False)
    )

    again = Sink()  # redelivery: the journal repeats the same decisions; re-applying them changes nothing
    await pipeline.consolidate_batch(results, again)
    assert again.ids(MEMORY_DECISIONS.name) == decisions
    await pipeline.index_batch(as_records(first.sent, MEMORY_DECISIONS.name), Sink())
    after = sorted(
        m.model_dump_json() for m in await pipeline.clients.store.list_memories("chat-0", live_only=False)
    )
    assert after == before


def personal_rows(chat: str, names: dict[str, str] | None = None) -> list[dict]:
    lines = [
        ("bob", "I live in Hangzhou and I work as a nurse."),
        ("alice", "I love my cat Mochi, she is three."),
        ("bob", "My favourite food is dumplings."),
        ("alice", "I will write the release notes by Thursday."),
    ]
    return [{"chat_id": chat, "message_id": f"m{i}", "sender": who, "ts": f"2024-01-01T10:{i:02d}:00Z", "text": text}
            | ({"sender_name": names[who]} if names and who in names else {})
            for i, (who, text) in enumerate(lines)]  # fmt: skip


@pytest.mark.parametrize("names", [None, {"bob": "Bob Li", "alice": "Alice W"}], ids=["ids", "display-names"])
async def test_deleted_chats_and_speakers_are_dropped_downstream(pipeline, names):
    """A chat, and a sender (ledgered by id; memories name the display name), deleted while their results
    were in flight: nothing of theirs is applied."""
    seg = Sink()
    await pipeline.segment_batch(raw_records(personal_rows("chat-0", names) + personal_rows("chat-1", names)), seg)
    dist = Sink()
    await pipeline.distill_batch(as_records(seg.sent, DISTILL_JOBS.name), dist)
    # deleted while the results were in flight
    await pipeline.clients.log.record_deletion("chat-1", "*", "now")
    await pipeline.clients.log.record_deletion("chat-0", "bob", "now")
    out = Sink()
    await pipeline.consolidate_batch(as_records(dist.sent, DISTILL_RESULTS.name), out)
    assert await pipeline.clients.store.list_memories("chat-1", live_only=False) == []
    speakers = {m.speaker for m in await pipeline.clients.store.list_memories("chat-0", live_only=False)}
    alice, bob = (names or {}).get("alice", "alice"), (names or {}).get("bob", "bob")
    assert alice in speakers and bob not in speakers
    assert {p.key for p in out.sent if p.topic == MEMORY_DECISIONS.name} == {"chat-0"}


@pytest.mark.parametrize("names", [None, {"bob": "Bob Li"}], ids=["ids", "display-names"])
async def test_redelivered_results_repeat_their_journalled_decisions_less_a_later_deletions(tmp_path, pipeline,
                                                                                          monkeypatch, names):
    """A worker journalled a batch's decisions and died before applying them; the batch, redelivered to
    another worker after the speaker was deleted, is not decided again: its journalled decisions are
    applied, the deleted speaker's (ledgered by id) left out."""
    seg, dist = Sink(), Sink()
    await pipeline.segment_batch(raw_records(personal_rows("chat-0", names)), seg)
    await pipeline.distill_batch(as_records(seg.sent, DISTILL_JOBS.name), dist)
    results = as_records(dist.sent, DISTILL_RESULTS.name)
    first = Sink()
    await pipeline.consolidate_batch(results, first)
    speakers = {m.speaker for m in await pipeline.clients.store.list_memories("chat-0", live_only=False)}
    bob = (names or {}).get("bob", "bob")
    assert bob in speakers

    clients = await build_clients(Settings(data_dir=tmp_path / "other", embedder="none"), embedder=None)
    try:
        other = Pipeline(clients, pipeline.wm, WorkerConfig(), clients.settings.pipeline)  # the same journal
        await clients.log.record_deletion("chat-0", "bob", "now")

        async def never(self, records):
            raise AssertionError("decided again")

        monkeypatch.setattr(type(other.consolidate), "process", never)
        again = Sink()
        await other.consolidate_batch(results, again)
        kept = {m.speaker for m in await clients.store.list_memories("chat-0", live_only=False)}
        assert kept == speakers - {bob} != set()
        assert set(again.ids(MEMORY_DECISIONS.name)) < set(first.ids(MEMORY_DECISIONS.name))
    finally:
        await clients.close()


def test_record_of_a_faust_event_keeps_the_record_id():
    msg = SimpleNamespace(topic=RAW_MESSAGES.name, partition=3, offset=17, key=b"chat-9",
                          headers=[(ID_HEADER, b"chat-9\x1fm1")])  # fmt: skip
    rec = record_of(SimpleNamespace(message=msg, value=b'{"x": 1}'))
    assert rec == Record(RAW_MESSAGES.name, 17, "chat-9", "chat-9\x1fm1", '{"x": 1}')
    bare = record_of(
        SimpleNamespace(message=SimpleNamespace(**{**vars(msg), "headers": None}), value=b"\xff")
    )
    assert bare.record_id == f"{RAW_MESSAGES.name}:3:17" and bare.value == "\ufffd"


def test_brokers_of():
    assert brokers_of("kafka://a:9092,b:9093") == ["a:9092", "b:9093"]
    with pytest.raises(ValueError):
        brokers_of("file:///tmp/log")


def test_create_app_binds_every_stage_without_io():
    app = build_app(Settings(log_url="kafka://127.0.0.1:1"), WorkerConfig(app_id="t-memstream"))
    names = {a.name for a in app.agents.values()}
    assert names == {"memstream.segment", "memstream.distill", "memstream.consolidate", "memstream.index"}
    topics = {t for a in app.agents.values() for t in a.channel.topics}
    assert topics == {RAW_MESSAGES.name, DISTILL_JOBS.name, DISTILL_RESULTS.name, MEMORY_DECISIONS.name}


async def test_the_workers_consumer_asks_the_broker_to_hold_an_empty_fetch_at_most_fetch_wait_ms():
    """Faust fixes aiokafka's fetch_max_wait_ms at 1,500; a broker that holds a fetch to its end (Tansu) then
    delays each hop of the pipeline by up to that long. The worker's consumer takes the worker config's."""
    app = build_app(Settings(log_url="kafka://127.0.0.1:1"), WorkerConfig(app_id="t-memstream", fetch_wait_ms=42))
    consumer = app.consumer._thread._create_worker_consumer(app.transport)  # built, not started: no I/O
    try:
        assert consumer._fetch_max_wait_ms == 42
    finally:
        await consumer.stop()


async def test_a_worker_that_reads_a_new_deletion_empties_its_text_caches(pipeline):
    """Another process deleted a user (the ledger grew): this worker's text caches are emptied, so no text
    that deletion erased stays in its memory; reading the same ledger again keeps them."""
    from language.text import text_cache_entries, tokenize

    records = raw_records(make_messages(1, 30))
    await pipeline.segment_batch(records, Sink())
    assert await pipeline.deletions() == set()
    assert text_cache_entries() > 0
    await pipeline.deletions()  # unchanged ledger: the caches stay
    assert text_cache_entries() > 0
    await pipeline.clients.log.record_deletion("c0", "u1", "2026-01-01T00:00:00+00:00")
    assert await pipeline.deletions() == {("c0", "u1")}
    assert text_cache_entries() == 0
    tokenize("the caches fill again on use")
    await pipeline.deletions()
    assert text_cache_entries() > 0


SECRET = "my card is 4111 1111 1111 1111, call me"


def _unscreened(chat: str) -> list[Record]:
    """A raw record as a producer that bypassed the ingest screen wrote it."""
    row = {"chat_id": chat, "message_id": "m0", "sender": "ann", "ts": "2024-01-01T10:00:00Z", "text": SECRET}
    return [Record(RAW_MESSAGES.name, 0, chat, f"{chat}\x1fm0", ChatMessage.model_validate(row).model_dump_json())]


async def test_the_segmenter_screens_what_a_producer_wrote_unscreened_in_either_runtime(tmp_path, pipeline):
    """Screening is the segment stage's: the worker and the embedded runner mask the same raw payload."""
    from streams.runner import EmbeddedRunner

    await pipeline.segment_batch(_unscreened("k"), Sink())
    clients = await build_clients(Settings(data_dir=tmp_path / "e", embedder="none"), embedder=None)
    try:
        runner = EmbeddedRunner(clients, clients.settings.pipeline)
        await runner.produce([Produce(r.topic, r.key, r.record_id, r.value) for r in _unscreened("e")])
        await runner.run_until_idle()
        for c, chat in ((pipeline.clients, "k"), (clients, "e")):
            (stored,) = (await c.store.export_chat(chat))["messages"]
            text = stored["text"] if isinstance(stored, dict) else stored.text
            assert "4111" not in text and "[bank_card]" in text, text
    finally:
        await clients.close()


async def test_each_stage_reads_the_ledger_itself(pipeline):
    """A chat deleted while its jobs, results and decisions were in flight: the distiller, the consolidator
    and the indexer drop them, whichever runtime drives them (no filter of the worker's in between)."""
    seg = Sink()
    await pipeline.segment_batch(raw_records(personal_rows("chat-0") + personal_rows("chat-1")), seg)
    jobs = as_records(seg.sent, DISTILL_JOBS.name)
    results = as_records((await pipeline.distill.process(jobs)).produced, DISTILL_RESULTS.name)
    decided = (await pipeline.consolidate.process(results)).produced
    decisions = as_records(decided, MEMORY_DECISIONS.name)
    assert {r.key for r in decisions} == {"chat-0", "chat-1"}
    await pipeline.clients.log.record_deletion("chat-1", "*", "now")
    assert {p.key for p in (await pipeline.distill.process(jobs)).produced} == {"chat-0"}
    assert {p.key for p in (await pipeline.consolidate.process(results)).produced
            if p.topic == MEMORY_DECISIONS.name} == {"chat-0"}  # fmt: skip
    await pipeline.index.process(decisions)
    assert await pipeline.clients.store.list_memories("chat-1", live_only=False) == []
    assert await pipeline.clients.store.list_memories("chat-0", live_only=False)
