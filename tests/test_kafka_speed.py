"""Batched sends with exact end offsets on Tansu: each partition's last record goes alone in its batch.

Tansu reports a partition's end offset as its last batch's base offset + 1, so a batch of several records
under-reports it (the lag, and the bench's clock, would read 0 too early). The senders batch everything but
the last record of each partition, then send those alone (:func:`streams.kafka_log.ends_alone`).
"""

from __future__ import annotations

import asyncio
from collections import Counter

import numpy as np
import pytest
from aiokafka.partitioner import DefaultPartitioner
from kafka.partitioner.default import murmur2

from backends.embed.embedder import CachedEmbedder, build_embedder
from memstream.clients import build_clients
from memstream.kafka_admin import bootstrap_topics, end_offsets, produce, read_topic
from memstream.ops import ingest
from memstream.settings import Settings
from streams.kafka_log import KafkaLog, ends_alone, partition_of
from streams.log import Produce
from streams.topics import DISTILL_JOBS, DISTILL_RESULTS, RAW_MESSAGES
from streams.worker import Pipeline, WorkerConfig
from streams.worker_embed import PriorityEmbedder, bulk
from streams.working_memory import InProcessWorkingMemory
from tests.helpers import write_jsonl
from tests.integration import kafka_fixtures
from tests.unit.retrieval.test_model_thread import GatedModel
from tests.unit.streams.test_faust_pipeline import Sink, as_records, raw_records
from tests.unit.streams.test_runner_prefetch import HashingEmbedder, _messages

tansu_broker = kafka_fixtures.tansu_broker  # fixture, by name


def test_ends_alone_sends_the_last_item_of_each_partition_second_in_order():
    parts = ["a", "b", "a", "c", "a", "b"]
    first, second = ends_alone(parts)
    assert first == [0, 1, 2]
    assert second == [3, 4, 5]
    assert ends_alone([]) == ([], [])
    assert ends_alone(["x"]) == ([], [0])


def test_partition_of_is_the_default_partitioners_choice():
    """What aiokafka (the Faust worker) and kafka-python (the file producer) pick without a partition."""
    partitions = list(range(8))
    for key in [b"conv-26", b"conv-30", b"chat-\xe4", b"", b"x" * 300]:
        assert partition_of(key, set(partitions)) == DefaultPartitioner()(key, partitions, partitions)
        assert partition_of(key, partitions) == partitions[(murmur2(key) & 0x7FFFFFFF) % 8]


def _items(topic: str, n: int, chats: int) -> list[Produce]:
    return [Produce(topic, f"chat-{i % chats}", f"id-{topic}-{i}", f'{{"i": {i}}}') for i in range(n)]


@pytest.mark.integration
def test_batched_produce_reports_exact_end_offsets_and_keeps_each_chat_in_order(tansu_broker):
    hosts = tansu_broker.hosts
    bootstrap_topics(hosts, 8)
    items = _items(RAW_MESSAGES.name, 500, 11)
    assert produce(hosts, items, exact_offsets=True, chunk=150) == 500
    ends = end_offsets(hosts, [RAW_MESSAGES.name])
    assert sum(ends.values()) == 500  # one record a batch would give this too; batches of several would not
    records = read_topic(hosts, RAW_MESSAGES.name)
    assert Counter(r.key for r in records) == Counter(p.key for p in items)
    for chat in {p.key for p in items}:  # a chat's records in one partition, in the order sent
        assert [r.record_id for r in records if r.key == chat] == [
            p.record_id for p in items if p.key == chat
        ]
    partitions = {
        r.key: tp.partition for tp in ends for r in read_topic(hosts, RAW_MESSAGES.name, {tp: ends[tp]})
    }
    assert {k: partition_of(k.encode(), range(8)) for k in partitions} == partitions


@pytest.mark.integration
def test_kafka_log_append_reports_exact_end_offsets(tansu_broker):
    hosts = tansu_broker.hosts
    bootstrap_topics(hosts, 8)

    async def run() -> None:
        kafka_log = await KafkaLog(hosts, exact_offsets=True).open()
        try:
            assert await kafka_log.append(_items(DISTILL_JOBS.name, 300, 5)) == 300
            assert await kafka_log.append(_items(DISTILL_JOBS.name, 7, 3)) == 7
        finally:
            await kafka_log.close()

    asyncio.run(run())
    assert sum(end_offsets(hosts, [DISTILL_JOBS.name]).values()) == 307


# ---- the worker's embedding order and read-ahead (streams.worker_embed, streams.worker) ----------------


async def test_a_bulk_call_goes_in_chunks_after_every_other_call_and_keeps_its_rows():
    inner = GatedModel()
    emb = PriorityEmbedder(inner, chunk=4)
    texts = [f"text {'a' * (i % 5)} {'e' * i}" for i in range(10)]
    big = asyncio.create_task(bulk(lambda: emb.embed(texts)))
    assert await asyncio.to_thread(inner.started.wait, 10)  # the first chunk holds the model
    small = asyncio.create_task(emb.embed(["alpha", "beta"]))  # a later stage's few texts
    await asyncio.sleep(0)
    inner.gate.set()
    vectors, urgent = await big, await small
    assert [len(c) for c in inner.calls] == [4, 2, 4, 2]  # the small call went right after one chunk
    assert inner.calls[1] == ["alpha", "beta"]
    expected = np.array([[len(t), t.count("a"), t.count("e"), 1.0] for t in texts])
    assert np.allclose(vectors, expected / np.linalg.norm(expected, axis=1, keepdims=True))  # rows in order
    assert urgent.shape == (2, 4) and emb.dim == 4  # the rest is the wrapped embedder's


async def _memories(clients) -> list[str]:
    out = []
    for chat in sorted(await clients.store.chats()):
        out += sorted(m.model_dump_json() for m in await clients.store.list_memories(chat, live_only=False))
    return out


def _embedder(kind: str):
    return CachedEmbedder(HashingEmbedder()) if kind == "hashing" else build_embedder("minilm", None, 64)


@pytest.mark.parametrize("kind", ["hashing", "minilm"])
async def test_the_worker_path_with_read_ahead_ends_with_the_embedded_runners_memories(tmp_path, kind):
    """Segmenter batches in parts (all parts' turns queued for the model at once), its calls after the others,
    candidates embedded as soon as results are made: the same memories as the embedded runner, with the
    default MiniLM too (int8, one text per forward: a vector does not depend on what it is batched with)."""
    rows = _messages()
    src = write_jsonl(tmp_path / "chats.jsonl", rows)
    settings = dict(embedder="none", derived_vectors="text")
    embedded = await build_clients(Settings(data_dir=tmp_path / "e", **settings), embedder=_embedder(kind))
    try:
        await ingest(embedded, src)
        want = await _memories(embedded)
    finally:
        await embedded.close()

    clients = await build_clients(Settings(data_dir=tmp_path / "w", **settings), embedder=_embedder(kind))
    try:
        pipeline = Pipeline(
            clients, InProcessWorkingMemory(), WorkerConfig(segment_part=16), clients.settings.pipeline
        )
        records = raw_records(rows)
        jobs, results = Sink(), Sink()
        for i in range(0, len(records), 50):  # segmenter batches of 50, in parts of 16
            await pipeline.segment_batch(records[i : i + 50], jobs)
        job_records = as_records(jobs.sent, DISTILL_JOBS.name)
        for i in range(0, len(job_records), 4):
            await pipeline.distill_batch(job_records[i : i + 4], results)
        assert pipeline._ahead  # candidates being embedded in the background
        result_records = as_records(results.sent, DISTILL_RESULTS.name)
        for i in range(0, len(result_records), 16):
            await pipeline.consolidate_batch(result_records[i : i + 16], Sink())
        await pipeline.stop_ahead()
        assert await _memories(clients) == want != []
    finally:
        await clients.close()
