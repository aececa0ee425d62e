"""Kafka side of a deletion (:func:`memstream.kafka_replay.delete_data`): the ledger topic as a log, and raw-topic
tombstones.

The default raw topic is keyed by chat id with ``cleanup.policy=delete``: its records leave the brokers only
by retention (the ledger keeps every reader from using a deleted sender's records meanwhile). A raw topic
run compacted, keyed ``chat_id\x1fmessage_id``, gets a null-value tombstone per deleted record (same key,
same partition), and compaction removes the original.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from typing import Any

from memstream.kafka_admin import (
    _admin,
    _producer,
    end_offsets,
    read_ledger,
    read_topic,
    record_deletion,
    record_forgotten,
)
from schemas import ChatMessage
from streams.codec import is_tombstone
from streams.kafka_log import ID_HEADER, LEDGER_TOPIC, redistil_key, redistil_topics, redistil_value
from streams.log import Record
from streams.log_erase import messages_in, raw_messages_of_records
from streams.topics import RAW_MESSAGES

__all__ = ["LedgerLog", "cleanup_policy", "raw_tombstones", "tombstone_raw"]

log = logging.getLogger("memstream.kafka_delete")


class LedgerLog:
    """The deletion ledger topic as :mod:`memstream.deletion` sees a log (record, read back)."""

    def __init__(self, brokers: list[str]) -> None:
        self.brokers = brokers

    async def record_deletion(self, chat_id: str, sender: str, at: str) -> None:
        await asyncio.to_thread(record_deletion, self.brokers, chat_id, sender, at)

    async def record_forgotten(self, chat_id: str, sender: str, keys: list[bytes]) -> None:
        await asyncio.to_thread(record_forgotten, self.brokers, chat_id, sender, keys)

    async def deletions(self) -> set[tuple[str, str]]:
        return await asyncio.to_thread(read_ledger, self.brokers)

    async def plan_redistil(self, chat_id: str, sender: str, topic_ids: Iterable[str]) -> set[str]:
        """:meth:`memstream.deletion.RedistilPlan.plan_redistil` on the ledger topic."""
        key, wanted = redistil_key(chat_id, sender), set(topic_ids)

        def plan() -> set[str]:
            name = key.decode()
            values = [r.value for r in read_topic(self.brokers, LEDGER_TOPIC) if r.key == name]
            recorded = redistil_topics(values[-1].encode()) if values else set()
            if not wanted <= recorded:
                _send_ledger(self.brokers, key, redistil_value(recorded | wanted))
            return recorded | wanted

        return await asyncio.to_thread(plan)

    async def end_redistil(self, chat_id: str, sender: str) -> None:
        await asyncio.to_thread(_send_ledger, self.brokers, redistil_key(chat_id, sender), None)

    async def raw_messages(self, chat_id: str, sender: str | None) -> list[ChatMessage]:
        """The chat's messages still in the raw topic (``sender``'s unless None), every revision of an edited
        one: what the store keeps is only each message's latest text."""

        def read() -> list[ChatMessage]:
            mine = [r for records in _raw_by_partition(self.brokers).values() for r in records
                    if _of_chat(r.key, chat_id)]  # fmt: skip
            return messages_in(mine, chat_id, sender)

        return await asyncio.to_thread(read)

    async def close(self) -> None:
        return None


def _send_ledger(brokers: list[str], key: bytes, value: bytes | None) -> None:
    producer = _producer(brokers, exact_offsets=True)  # alone in its batch, as the ledger's
    try:
        producer.send(LEDGER_TOPIC, key=key, value=value)
        producer.flush()
    finally:
        producer.close()


def cleanup_policy(brokers: list[str], topic: str) -> str:
    """The topic's ``cleanup.policy`` (``delete`` when it cannot be read)."""
    from kafka.admin import ConfigResource, ConfigResourceType

    admin = _admin(brokers)
    try:
        got = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all")
    except Exception:  # noqa: BLE001 - a broker without DescribeConfigs: treat as the default policy
        return "delete"
    finally:
        admin.close()
    return _find_config(got, "cleanup.policy") or "delete"


def _find_config(tree: Any, name: str) -> str | None:
    """The value of config ``name`` anywhere in a describe_configs answer (its shape varies by version)."""
    if isinstance(tree, dict):
        if name in tree:
            value = tree[name]
            return str(value.get("value", value.get("config_value")) if isinstance(value, dict) else value)
        for sub in tree.values():
            if (found := _find_config(sub, name)) is not None:
                return found
    if isinstance(tree, list | tuple):
        if len(tree) >= 2 and tree[0] == name:
            return str(tree[1])
        for sub in tree:
            if (found := _find_config(sub, name)) is not None:
                return found
    return None


def raw_tombstones(brokers: list[str], chat_id: str, user: str | None, *, policy: str | None = None) -> int:
    """On a COMPACTED raw topic, write a null-value record (Kafka's tombstone) per deleted raw record, with
    the original's key, to the original's partition, so compaction removes the original. Compaction keeps
    the latest value per key, so this needs the compacted layout: raw records keyed ``chat_id\x1fmessage_id``
    (a record keyed by the bare chat id there stands for the whole chat: only a chat deletion writes one).
    On the default layout (keyed by chat id, ``cleanup.policy=delete``) nothing is written: the raw records
    go by the topic's retention (``retention.ms``), and the ledger keeps every reader from using them.
    Returns how many tombstones were written."""
    if "compact" not in (policy or cleanup_policy(brokers, RAW_MESSAGES.name)):
        return 0
    targets: dict[str, int] = {}  # key -> partition
    for partition, records in _raw_by_partition(brokers).items():
        latest = {r.key: r.value for r in records}  # a key whose latest record is a tombstone is done
        mine = [r for r in records if _of_chat(r.key, chat_id)
                and not is_tombstone(latest[r.key])]  # fmt: skip
        for r in raw_messages_of_records(mine, chat_id, user):
            if user is None or r.key != chat_id:
                targets.setdefault(r.key, partition)
    if not targets:
        return 0
    producer = _producer(brokers, exact_offsets=True)  # few records; one per batch (exact end offsets)
    try:
        for key, partition in targets.items():
            producer.send(RAW_MESSAGES.name, key=key.encode(), value=None, partition=partition,
                          headers=[(ID_HEADER, f"tombstone:{key}".encode())])  # fmt: skip
        producer.flush()
    finally:
        producer.close()
    return len(targets)


def _of_chat(key: str, chat_id: str) -> bool:
    """A raw record's key is the chat's: the chat id (the default layout) or ``chat_id\x1fmessage_id``."""
    return key == chat_id or key.startswith(f"{chat_id}\x1f")


def _raw_by_partition(brokers: list[str]) -> dict[int, list[Record]]:
    """The raw topic's records up to its current end, by partition."""
    ends = {tp: end for tp, end in end_offsets(brokers, [RAW_MESSAGES.name]).items() if end > 0}
    return {tp.partition: read_topic(brokers, RAW_MESSAGES.name, {tp: end}) for tp, end in ends.items()}


async def tombstone_raw(log_url: str, chat_id: str, user: str | None) -> int:
    """The raw-topic part of ``memstream delete`` and the API's DELETE when the log is Kafka (the rest is the
    embedded deletion, :func:`memstream.ops.delete_report`): the same tombstones ``memstream kafka delete``
    writes, so every delete path leaves the brokers alike."""
    from streams.kafka_log import brokers_of

    written = await asyncio.to_thread(raw_tombstones, brokers_of(log_url), chat_id, user)
    log.info("raw tombstones written", extra={"chat_id": chat_id, "records": written})
    return written
