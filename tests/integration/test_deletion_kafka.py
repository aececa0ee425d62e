"""`memstream kafka delete` on a Kafka-wire broker (Tansu): the ledger entry, and a null-value tombstone per
deleted raw record on a compacted raw topic (keyed like the originals, in their partitions); nothing on
the default retention-only raw topic."""

from __future__ import annotations

import json

import pytest
from kafka.admin import NewTopic

from memstream.kafka_admin import _admin, bootstrap_topics, produce, produce_file, read_ledger
from memstream.kafka_delete import _raw_by_partition, cleanup_policy, raw_tombstones
from memstream.kafka_replay import delete_data
from memstream.settings import Settings
from streams.codec import Tombstone, decode, is_tombstone
from streams.log import Produce
from streams.topics import RAW_MESSAGES
from tests.integration import kafka_fixtures

pytestmark = pytest.mark.integration
tansu_broker = kafka_fixtures.tansu_broker  # fixtures, by name
redis_wm_url = kafka_fixtures.redis_wm_url


def _raw(chat: str, i: int, sender: str) -> Produce:
    msg = {"chat_id": chat, "message_id": f"m{i}", "sender": sender, "ts": "2024-01-01T00:00:00Z",
           "text": f"{sender} says secret {i}"}  # fmt: skip
    key = f"{chat}\x1fm{i}"  # the compacted layout: one key per message
    return Produce(RAW_MESSAGES.name, key, key, json.dumps(msg))


async def test_kafka_delete_tombstones_the_users_raw_records_on_a_compacted_topic(
    tmp_path, tansu_broker, redis_wm_url
):
    hosts = tansu_broker.hosts
    admin = _admin(hosts)
    try:
        admin.create_topics([NewTopic(RAW_MESSAGES.name, 2, 1, topic_configs={"cleanup.policy": "compact"})])
    finally:
        admin.close()
    bootstrap_topics(hosts)  # the other topics
    assert "compact" in cleanup_policy(hosts, RAW_MESSAGES.name)
    items = [_raw("c", i, "u" if i % 2 else "v") for i in range(6)] + [_raw("d", 9, "u")]
    produce(hosts, items, exact_offsets=True)
    before = {p: [r.key for r in recs] for p, recs in _raw_by_partition(hosts).items()}

    settings = Settings(data_dir=tmp_path / "d", log_url=tansu_broker.url, store_url=f"sqlite:///{tmp_path / 's.db'}",
                        working_memory_url=redis_wm_url, embedder="none")  # fmt: skip
    await delete_data(settings, "c", "u", embedder=None)
    assert ("c", "u") in read_ledger(hosts)

    after = _raw_by_partition(hosts)
    tombs = {(p, r.key) for p, recs in after.items() for r in recs if is_tombstone(r.value)}
    theirs = {(p, k) for p, keys in before.items() for k in keys if k in {"c\x1fm1", "c\x1fm3", "c\x1fm5"}}
    assert tombs == theirs  # one per deleted record, same key, same partition; other chat and users untouched
    for recs in after.values():
        for r in recs:
            if is_tombstone(r.value):
                assert r.value == "" and isinstance(decode(RAW_MESSAGES, r.value), Tombstone)
    assert raw_tombstones(hosts, "c", "u") == 0  # idempotent: nothing left to erase

    later = tmp_path / "later.jsonl"  # the deleted user's new messages are not produced at all
    later.write_text("".join(json.dumps({"chat_id": "c", "message_id": f"n{i}", "sender": s, "text": f"{s} later {i}",
                                         "ts": "2024-01-02T00:00:00Z"}) + "\n" for i, s in enumerate("uvu")))  # fmt: skip
    report = produce_file(hosts, later, exact_offsets=True)
    assert (report.read, report.withheld) == (3, 2)
    texts = [r.value for recs in _raw_by_partition(hosts).values() for r in recs if not is_tombstone(r.value)]
    assert any("v later 1" in t for t in texts) and not any("u later" in t for t in texts)


async def test_no_tombstones_on_the_default_retention_only_raw_topic(tansu_broker):
    hosts = tansu_broker.hosts
    bootstrap_topics(hosts)
    assert "compact" not in cleanup_policy(hosts, RAW_MESSAGES.name)
    produce(hosts, [_raw("c", 1, "u")], exact_offsets=True)
    assert raw_tombstones(hosts, "c", "u") == 0
