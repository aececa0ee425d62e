"""memstream.clients.BACKENDS for the service schemes, against the real local servers: ``kafka://`` (Tansu)
and ``es://`` (the noida-db Elasticsearch API)."""

from __future__ import annotations

import uuid

import pytest

from backends.es.store import ESStore
from memstream.clients import open_backend
from memstream.kafka_admin import bootstrap_topics
from streams.clients import StageLog
from streams.kafka_log import KafkaLog
from tests.integration import kafka_fixtures
from tests.integration.test_store_contract import _drop_es

pytestmark = pytest.mark.integration
tansu_broker = kafka_fixtures.tansu_broker


async def test_kafka_scheme_opens_the_kafka_log(tansu_broker):
    bootstrap_topics(tansu_broker.hosts, partitions=1)
    log = await open_backend("log", tansu_broker.url)
    try:
        assert isinstance(log, KafkaLog) and isinstance(log, StageLog)
        assert await log.deletions() == set()
    finally:
        await log.close()


async def test_es_scheme_opens_the_es_store(es_url):
    prefix = f"test-{uuid.uuid4().hex[:10]}"
    store = await open_backend("store", "es://" + es_url.split("://", 1)[1] + f"?prefix={prefix}", None)
    try:
        assert isinstance(store, ESStore)
        await store.bootstrap()
        assert await store.chats() == []
    finally:
        await store.close()
        await _drop_es(es_url, prefix)
