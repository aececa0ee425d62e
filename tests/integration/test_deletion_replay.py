"""Deletion followed by replay on every backend (issue 15): the deleted user does not come back.

- SQLite store (embedded log): ``delete`` then ``replay`` (rebuild from offset 0 into the emptied store).
- Elasticsearch store (noida-db): the same embedded ``replay`` rebuilds in place (every chat's index
  documents deleted, then re-derived from the local log); Redis working memory of the chat stays clean.
  The Kafka blue/green replay is refused by design for an ES store (no index-and-alias switch yet,
  ``memstream.kafka_replay.blue_green_for``): that refusal is tested, and that it touches nothing.
- Redis working memory (Kafka log on Tansu): the Kafka replay rewrites the segmenter pools in Redis from the
  raw topic, honouring the deletion ledger; the raw records stay on the retention-only topic, so only the
  ledger keeps the user out.
After each replay no record, message, topic or working-memory entry holds the user's messages or canary
texts, and searching for the canaries (bm25 and hybrid) returns none of them.
"""

from __future__ import annotations

import json
import uuid

import pytest

from memstream.clients import UnsupportedBackend, build_clients, open_working_memory
from memstream.kafka_admin import bootstrap_topics, produce_file, read_ledger
from memstream.kafka_replay import delete_data as kafka_delete
from memstream.kafka_replay import replay as kafka_replay
from memstream.ops import delete_report, ingest, replay
from memstream.settings import Settings
from retrieval.service import retrieve
from schemas import RetrieveRequest
from tests.helpers import write_jsonl
from tests.integration import kafka_fixtures
from tests.integration import test_deletion_es_redis as es_case
from tests.pipeline.deletion_data import (
    CASES,
    Case,
    check_others_kept,
    check_retrieval,
    check_stored,
    contains_canary,
)

pytestmark = pytest.mark.integration
tansu_broker = kafka_fixtures.tansu_broker  # fixtures, by name
redis_wm_url = kafka_fixtures.redis_wm_url
es_clients = es_case.es_clients  # the ES store + Redis working memory of test_deletion_es_redis


async def check_canaries_not_found(clients, case: Case) -> None:
    """Searching for the user's own words finds nothing of theirs (any mode, any depth)."""
    for canary in case.canaries:
        for mode in ("bm25", "hybrid"):
            req = RetrieveRequest(chat_id=case.chat, query=canary, k=50, mode=mode)
            resp = await retrieve(clients.store, clients.embedder, req)
            assert not [it for it in resp.items if contains_canary(it.text, case)], (mode, canary, resp.items)
            assert not [it for it in resp.items if set(it.source_message_ids) & case.user_ids], (mode, canary)


async def check_gone(clients, case: Case) -> None:
    await check_retrieval(clients, case)
    await check_stored(clients, case)
    await check_canaries_not_found(clients, case)


async def check_pool_clean(wm_url: str, case: Case, *, expect_pool: bool = True) -> None:
    wm = await open_working_memory(wm_url)
    try:
        pool = await wm.get_pool(case.chat)
        assert bool(pool) == expect_pool
        if pool:
            assert not any(f'"{m}"' in pool for m in case.user_ids) and f'"{case.user}"' not in pool, pool
            assert not contains_canary(pool, case)
        for ids in (await wm.topic_windows(case.chat)).values():
            assert not set(ids) & case.user_ids
    finally:
        await wm.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_sqlite_store_deletion_then_replay(tmp_path, minilm, lang):
    case = CASES[lang]
    clients = await build_clients(Settings(data_dir=tmp_path / "d"), embedder=minilm)
    try:
        await ingest(clients, write_jsonl(tmp_path / "in.jsonl", case.rows))
        assert any(
            set(m.source_message_ids) & case.user_ids for m in await clients.store.list_memories(case.chat)
        )
        assert (await delete_report(clients, case.chat, case.user)).removed > 0
        stats = await replay(clients)
        assert sum(stats.processed.values()) > 0  # the rest of the chat was really rebuilt
        await check_gone(clients, case)
        await check_others_kept(clients, case)
        assert await clients.log.deletions() == {(case.chat, case.user)}
    finally:
        await clients.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_es_store_deletion_then_replay(tmp_path, es_clients, lang):
    case, clients = CASES[lang], es_clients
    await ingest(clients, write_jsonl(tmp_path / "in.jsonl", case.rows), flush=False)
    await es_case._to_working_memory(
        clients, case.chat, {"consolidate:theirs": json.dumps([{"value": f'"{min(case.user_ids)}" said it'}])}
    )  # what a worker keeps: the pool, topic windows and a journal entry quoting the user's message
    assert (await delete_report(clients, case.chat, case.user)).removed > 0
    await replay(clients)
    assert await clients.store.list_memories(case.chat)  # rebuilt in the same indices
    await check_gone(clients, case)
    await check_others_kept(clients, case)
    await check_pool_clean(clients.settings.working_memory_url, case)
    wm = await open_working_memory(clients.settings.working_memory_url)
    try:
        assert await wm.get_journal(case.chat, "consolidate:theirs") is None
    finally:
        await wm.close()


async def test_kafka_replay_into_es_is_refused_and_touches_nothing(
    tmp_path, tansu_broker, es_url, redis_wm_url
):
    case = CASES["en"]
    hosts = tansu_broker.hosts
    bootstrap_topics(hosts, partitions=2)
    produce_file(hosts, write_jsonl(tmp_path / "in.jsonl", case.rows), flush=False, exact_offsets=True)
    prefix = f"test-delrep-{uuid.uuid4().hex[:10]}"
    settings = Settings(data_dir=tmp_path / "kd", log_url=tansu_broker.url, working_memory_url=redis_wm_url,
                        store_url=f"es://{es_url.split('://', 1)[1]}?prefix={prefix}", embedder="none")  # fmt: skip
    wm = await open_working_memory(redis_wm_url)
    try:
        assert await wm.put_pool(case.chat, '{"marker": 1}', 3600.0, version=1)
        with pytest.raises(UnsupportedBackend, match="only sqlite"):
            await kafka_replay(settings, embedder=None, force=True)
        assert await wm.get_pool(case.chat) == '{"marker": 1}'  # working memory untouched
    finally:
        await wm.close()
        await es_case._drop_es(es_url, prefix)


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_redis_working_memory_deletion_then_kafka_replay(tmp_path, tansu_broker, redis_wm_url, lang):
    case = CASES[lang]
    hosts = tansu_broker.hosts
    bootstrap_topics(hosts, partitions=2)
    # no flush: the last topics stay active, so the pools in Redis hold messages
    produce_file(hosts, write_jsonl(tmp_path / "in.jsonl", case.rows), flush=False, exact_offsets=True)
    store_url = f"sqlite:///{tmp_path / 'k.db'}"
    settings = Settings(data_dir=tmp_path / "kd", log_url=tansu_broker.url, store_url=store_url,
                        working_memory_url=redis_wm_url, embedder="none")  # fmt: skip
    await kafka_replay(settings, embedder=None, force=True)  # builds the store and the live pools
    wm = await open_working_memory(redis_wm_url)
    try:
        before = await wm.get_pool(case.chat)
        assert before and any(f'"{m}"' in before for m in case.user_ids)  # the user is in working memory
    finally:
        await wm.close()

    assert await kafka_delete(settings, case.chat, case.user, embedder=None) > 0
    assert (case.chat, case.user) in read_ledger(hosts)
    await check_pool_clean(redis_wm_url, case)
    report = await kafka_replay(settings, embedder=None, force=True)
    assert report.deletions == {(case.chat, case.user)} and report.raw_records >= len(case.rows)
    await check_pool_clean(redis_wm_url, case)  # the replayed pools, written to Redis

    reader = Settings(data_dir=tmp_path / "reader", store_url=store_url, working_memory_url=redis_wm_url,
                      embedder="none")  # fmt: skip
    clients = await build_clients(reader, embedder=None)
    try:
        assert await clients.store.list_messages(case.chat)  # the others' messages were replayed
        await check_gone(clients, case)
    finally:
        await clients.close()
