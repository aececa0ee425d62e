"""Deletion on the production backends: the Elasticsearch store (noida-db locally) and Redis working memory.
Right after the delete (no replay), nothing of the user is retrievable or stored, and working memory (the
segmenter pool, topic windows, the consolidation journal) holds none of their messages."""

from __future__ import annotations

import json
import uuid

import pytest

from memstream.clients import build_clients, open_working_memory
from memstream.ops import delete_report, ingest
from memstream.settings import Settings
from tests.helpers import write_jsonl
from tests.integration import kafka_fixtures
from tests.pipeline.deletion_data import (
    CASES,
    CHINESE,
    ENGLISH,
    check_others_kept,
    check_retrieval,
    check_stored,
    contains_canary,
)

pytestmark = pytest.mark.integration
redis_wm_url = kafka_fixtures.redis_wm_url  # fixture, by name


async def _drop_es(url: str, prefix: str) -> None:
    from elasticsearch import AsyncElasticsearch

    es = AsyncElasticsearch(url)
    try:
        for kind in ("docs", "messages", "memories", "decisions", "topics"):
            await es.options(ignore_status=404).indices.delete(index=f"{prefix}-{kind}-v1")
            await es.options(ignore_status=404).indices.delete_index_template(name=f"{prefix}-{kind}")
    finally:
        await es.close()


@pytest.fixture
async def es_clients(tmp_path, es_url, redis_wm_url, minilm):
    prefix = f"test-del-{uuid.uuid4().hex[:10]}"
    host = es_url.split("://", 1)[1]
    settings = Settings(data_dir=tmp_path / "d", store_url=f"es://{host}?prefix={prefix}&rrf=client",
                        working_memory_url=redis_wm_url)  # fmt: skip
    clients = await build_clients(settings, embedder=minilm)
    try:
        yield clients
    finally:
        await clients.close()
        await _drop_es(es_url, prefix)


async def _to_working_memory(clients, chat: str, journal: dict[str, str]) -> None:
    """What a Faust worker keeps in Redis for a chat: its pool (fenced by a version), the active topics'
    windows and consolidation journal entries."""
    pool = (await clients.log.load_state("segmenter"))[chat]
    wm = await open_working_memory(clients.settings.working_memory_url)
    try:
        assert await wm.put_pool(chat, pool, 3600.0, version=41)
        for topic in json.loads(pool)["topics"]:
            await wm.put_topic_window(chat, topic["topic_id"], topic["message_ids"], 3600.0)
        for entry, value in journal.items():
            await wm.put_journal(chat, entry, value, 3600.0)
    finally:
        await wm.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
async def test_es_store_and_redis_forget_the_user_at_once(tmp_path, es_clients, lang):
    case, clients = CASES[lang], es_clients
    user_ids = sorted(case.user_ids)
    # no flush: the first topic closes when the chat moves on, the last ones stay active (in the pool)
    await ingest(clients, write_jsonl(tmp_path / "in.jsonl", case.rows), flush=False)
    assert any(set(m.source_message_ids) & case.user_ids for m in await clients.store.list_memories(case.chat))
    journal = {"consolidate:theirs": json.dumps([{"value": f'"{user_ids[0]}" said it'}]),
               "consolidate:others": json.dumps([{"value": "nothing of theirs"}])}  # fmt: skip
    await _to_working_memory(clients, case.chat, journal)

    report = await delete_report(clients, case.chat, case.user)
    assert report.removed > 0 and report.memories > 0 and report.working_memory >= 2
    await check_retrieval(clients, case)
    await check_stored(clients, case)
    await check_others_kept(clients, case)

    wm = await open_working_memory(clients.settings.working_memory_url)
    try:
        pool = await wm.get_pool(case.chat)
        assert pool and not any(f'"{m}"' in pool for m in user_ids) and f'"{case.user}"' not in pool
        assert not contains_canary(pool, case)
        assert not await wm.put_pool(case.chat, "{}", None, version=40)  # the fencing version was kept
        windows = await wm.topic_windows(case.chat)
        assert windows and not any(set(ids) & case.user_ids for ids in windows.values())
        assert await wm.get_journal(case.chat, "consolidate:theirs") is None
        assert await wm.get_journal(case.chat, "consolidate:others") is not None
    finally:
        await wm.close()


async def test_es_chat_deletion_leaves_nothing_and_other_chats_untouched(tmp_path, es_clients):
    clients = es_clients
    await ingest(clients, write_jsonl(tmp_path / "in.jsonl", ENGLISH.rows + CHINESE.rows), flush=False)
    await _to_working_memory(clients, "eng", {})
    await _to_working_memory(clients, "zh", {})
    kept = await clients.store.export_chat("zh")
    report = await delete_report(clients, "eng", None)
    assert report.removed > 0
    assert await clients.store.export_chat("eng") == {"chat_id": "eng", "messages": [], "memories": [], "topics": []}
    assert "eng" not in await clients.store.chats()
    assert await clients.store.export_chat("zh") == kept
    wm = await open_working_memory(clients.settings.working_memory_url)
    try:
        assert await wm.get_pool("eng") is None and await wm.topic_windows("eng") == {}
        assert await wm.get_pool("zh") is not None and await wm.topic_windows("zh")
    finally:
        await wm.close()
