"""The log seen from Kafka: append to topics and read the compacted deletion ledger (offsets belong to the
consumers, i.e. the Faust agents). Stands in for ``Clients.log`` in a worker and serves an API that appends
messages to the raw topic."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable, Hashable, Iterable, Sequence
from typing import Any

from streams.log import Produce

__all__ = [
    "FORGET_PREFIX",
    "ID_HEADER",
    "LEDGER_TOPIC",
    "REDISTIL_PREFIX",
    "KafkaLog",
    "apply_ledger_entry",
    "forget_records",
    "forgotten_keys",
    "brokers_of",
    "ends_alone",
    "ledger_key",
    "ledger_value",
    "partition_of",
    "redistil_key",
    "redistil_topics",
    "redistil_value",
    "send_all",
]

log = logging.getLogger("memstream.kafka")

LEDGER_TOPIC = "memstream.deletion-ledger"  # compacted, one partition, key "chat\x1fsender" ("*" = chat)
ID_HEADER = "memstream-id"
BATCH_BYTES = 256 * 1024  # a producer batch per partition: a worker batch's decisions go in a few requests


def brokers_of(log_url: str) -> list[str]:
    """``kafka://h1:9092,h2:9092`` -> ``["h1:9092", "h2:9092"]``."""
    if not log_url.startswith("kafka://"):
        raise ValueError(f"expected a kafka:// log URL, got {log_url!r}")
    hosts = [h.strip() for h in log_url[len("kafka://") :].strip("/").split(",") if h.strip()]
    if not hosts:
        raise ValueError(f"no broker in {log_url!r}")
    return hosts


def partition_of(key: bytes, partitions: Iterable[int]) -> int:
    """The partition Kafka's default partitioner picks for a keyed record (murmur2 of the key)."""
    from aiokafka.partitioner import murmur2

    ordered = sorted(partitions)
    return ordered[(murmur2(key) & 0x7FFFFFFF) % len(ordered)]


def ends_alone(partitions: Sequence[Hashable]) -> tuple[list[int], list[int]]:
    """Split items (given by their partitions, in send order) into two rounds: every item but the last of its
    partition, then the last of each partition. Sent round after round, each partition's last batch holds
    one record, so a broker that reports a partition's end as its last batch's base offset + 1 (Tansu)
    reports it exactly, while the first round is batched freely (one request, not one per record)."""
    last = {part: i for i, part in enumerate(partitions)}
    tail = set(last.values())
    return [i for i in range(len(partitions)) if i not in tail], sorted(tail)


SendOne = Callable[[Produce, int | None], Awaitable[Awaitable[Any]]]  # (item, partition) -> its ack


async def send_all(
    items: Sequence[Produce],
    send_one: SendOne,
    partitions_of: Callable[[str], Awaitable[Iterable[int]]] | None = None,
) -> None:
    """Send ``items`` in order through ``send_one`` and wait for every ack. With ``partitions_of`` (exact
    offsets: a topic's partitions), each item goes to its key's default partition in the two rounds of
    :func:`ends_alone`; without it the producer partitions and batches as it likes."""
    if partitions_of is None:
        await asyncio.gather(*[await send_one(p, None) for p in items])
        return
    known: dict[str, Iterable[int]] = {}
    parts = []
    for p in items:
        if p.topic not in known:
            known[p.topic] = await partitions_of(p.topic)
        parts.append((p.topic, partition_of(p.key.encode(), known[p.topic])))
    for round_ in ends_alone(parts):
        await asyncio.gather(*[await send_one(items[i], parts[i][1]) for i in round_])


def ledger_key(chat_id: str, sender: str) -> bytes:
    return f"{chat_id}\x1f{sender}".encode()


def ledger_value(chat_id: str, sender: str, at: str) -> bytes:
    return json.dumps({"chat_id": chat_id, "sender": sender, "at": at}).encode()


# a deletion's embedding-cache keys (:func:`backends.embed.embedder.cache_keys`), for the workers that keep a cache
# of their own: ledger records under keys of this prefix, the keys as hex in chunks, never texts
FORGET_PREFIX = b"\x1eforget\x1f"
FORGET_CHUNK = 2000


def forget_records(chat_id: str, sender: str, keys: Sequence[bytes]) -> list[tuple[bytes, bytes]]:
    """The ledger records (key, value) that carry ``keys`` to every worker's cache."""
    head = FORGET_PREFIX + ledger_key(chat_id, sender) + b"\x1f"
    return [(head + str(i // FORGET_CHUNK).encode(),
             json.dumps({"forget": [k.hex() for k in keys[i : i + FORGET_CHUNK]]}).encode())
            for i in range(0, len(keys), FORGET_CHUNK)]  # fmt: skip


def forgotten_keys(value: bytes | None) -> list[bytes]:
    """The cache keys of one forget record (none when unreadable: the deleting process's own cache is clean)."""
    try:
        return [bytes.fromhex(k) for k in json.loads(value or b"{}").get("forget", [])]
    except (ValueError, TypeError, AttributeError):
        log.warning("unreadable forget record of the deletion ledger skipped")
        return []


# the topics a pending deletion distils again (:class:`memstream.deletion.RedistilPlan`): one ledger record per
# deletion under a key of this prefix, their ids (never texts), a null value once they are distilled again
REDISTIL_PREFIX = b"\x1eredistil\x1f"


def redistil_key(chat_id: str, sender: str) -> bytes:
    return REDISTIL_PREFIX + ledger_key(chat_id, sender)


def redistil_value(topic_ids: Iterable[str]) -> bytes:
    return json.dumps({"redistil": sorted(topic_ids)}).encode()


def redistil_topics(value: bytes | None) -> set[str]:
    """The topic ids of one redistil record (none for a null value)."""
    try:
        return {str(t) for t in json.loads(value or b"{}").get("redistil", [])}
    except (ValueError, TypeError, AttributeError):
        log.warning("unreadable redistil record of the deletion ledger skipped")
        return set()


def apply_ledger_entry(entries: dict[bytes, tuple[str, str]], key: bytes | None, value: bytes | None) -> None:
    """Fold one ledger record into ``entries`` (last write per key wins; a tombstone removes). Forget
    records (:data:`FORGET_PREFIX`) and redistil records (:data:`REDISTIL_PREFIX`) are not deletions."""
    if key is None or key.startswith((FORGET_PREFIX, REDISTIL_PREFIX)):
        return
    if value is None:
        entries.pop(key, None)
        return
    try:
        obj = json.loads(value)
        entries[key] = (str(obj["chat_id"]), str(obj["sender"]))
    except (ValueError, KeyError, TypeError):
        log.warning("unreadable deletion-ledger record skipped", extra={"key": key[:100]})


class KafkaLog:
    """The log seen from Kafka: append to topics and the deletion ledger (offsets belong to the consumers).

    Stands in for ``Clients.log`` in the worker (the stages only ask it for ``deletions()``) and can serve
    an API that appends messages to the raw topic.
    """

    def __init__(self, brokers: list[str], *, refresh_s: float = 2.0, exact_offsets: bool = False) -> None:
        self.brokers = brokers
        self.refresh_s = refresh_s
        self.exact_offsets = exact_offsets
        self._entries: dict[bytes, tuple[str, str]] = {}
        self._forgotten: list[bytes] = []  # cache keys of deletions read, not yet taken (take_forgotten)
        self._plans: dict[bytes, set[str]] = {}  # redistil key -> topic ids
        self._consumer: Any = None
        self._producer: Any = None
        self._refreshed = 0.0
        self._lock = asyncio.Lock()
        self._send_lock = asyncio.Lock()

    async def open(self) -> KafkaLog:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        self._tp = TopicPartition(LEDGER_TOPIC, 0)
        self._consumer = AIOKafkaConsumer(bootstrap_servers=self.brokers, enable_auto_commit=False,
                                          fetch_max_wait_ms=100)  # fmt: skip
        await self._consumer.start()
        self._consumer.assign([self._tp])
        await self._consumer.seek_to_beginning(self._tp)
        self._consumer.pause(self._tp)
        await self.refresh()
        return self

    async def refresh(self) -> None:
        """Read the ledger up to its current end.

        The partition is fetched only meanwhile (paused between refreshes): a fetch left running on the
        ledger, nearly always empty, is held by the broker up to its wait, and a broker that answers a
        connection's requests in order (Tansu) held the next refresh's end-offset request behind it: the
        stages, which read the ledger before each batch, stalled 0.4-1.4 s every two seconds."""
        async with self._lock:
            end = (await self._consumer.end_offsets([self._tp]))[self._tp]
            if await self._consumer.position(self._tp) < end:
                self._consumer.resume(self._tp)
                try:
                    await self._read_to(end)
                finally:
                    self._consumer.pause(self._tp)
            self._refreshed = time.monotonic()

    async def _read_to(self, end: int) -> None:
        idle = 0
        while await self._consumer.position(self._tp) < end and idle < 3:
            batch = await self._consumer.getmany(self._tp, timeout_ms=500)
            records = batch.get(self._tp, [])
            idle = 0 if records else idle + 1
            for rec in records:
                if rec.key is not None and rec.key.startswith(FORGET_PREFIX):
                    self._forgotten.extend(forgotten_keys(rec.value))
                if rec.key is not None and rec.key.startswith(REDISTIL_PREFIX):
                    self._plans[rec.key] = redistil_topics(rec.value)
                apply_ledger_entry(self._entries, rec.key, rec.value)

    async def deletions(self) -> set[tuple[str, str]]:
        if time.monotonic() - self._refreshed >= self.refresh_s:
            await self.refresh()
        return set(self._entries.values())

    def take_forgotten(self) -> list[bytes]:
        """The cache keys of the deletions read since the last call (all of them, the first time)."""
        keys, self._forgotten = self._forgotten, []
        return keys

    async def record_forgotten(self, chat_id: str, sender: str, keys: Sequence[bytes]) -> None:
        """Hand a deletion's cache keys to every worker (the records alone in their batches, as the ledger's)."""
        producer = await self._producer_started()
        async with self._send_lock:
            for key, value in forget_records(chat_id, sender, keys):
                await producer.send_and_wait(LEDGER_TOPIC, value, key=key)

    async def plan_redistil(self, chat_id: str, sender: str, topic_ids: Iterable[str]) -> set[str]:
        """:meth:`memstream.deletion.RedistilPlan.plan_redistil` on the ledger topic."""
        await self.refresh()
        key = redistil_key(chat_id, sender)
        recorded = self._plans.get(key, set())
        plan = recorded | set(topic_ids)
        if plan != recorded:
            await self._send_ledger(key, redistil_value(plan))
            self._plans[key] = plan
        return plan

    async def end_redistil(self, chat_id: str, sender: str) -> None:
        key = redistil_key(chat_id, sender)
        await self._send_ledger(key, None)
        self._plans.pop(key, None)

    async def _send_ledger(self, key: bytes, value: bytes | None) -> None:
        producer = await self._producer_started()
        async with self._send_lock:  # alone in its batch, as the ledger's
            await producer.send_and_wait(LEDGER_TOPIC, value, key=key)

    async def _producer_started(self):
        if self._producer is None:
            from aiokafka import AIOKafkaProducer

            self._producer = AIOKafkaProducer(
                bootstrap_servers=self.brokers, acks="all", max_batch_size=BATCH_BYTES
            )
            await self._producer.start()
        return self._producer

    async def append(self, items: list[Produce]) -> int:
        """Send records (keyed by chat id, id in a header) and wait for the acks; returns how many."""
        producer = await self._producer_started()

        async def send_one(p: Produce, partition: int | None) -> Awaitable[Any]:
            return await producer.send(p.topic, p.value.encode(), key=p.key.encode(), partition=partition,
                                       headers=[(ID_HEADER, p.record_id.encode())])  # fmt: skip

        if not self.exact_offsets:
            await send_all(items, send_one)
            return len(items)
        async with self._send_lock:  # concurrent appends could batch a partition's last records together
            await send_all(items, send_one, producer.partitions_for)
        return len(items)

    async def record_deletion(self, chat_id: str, sender: str, at: str) -> None:
        producer = await self._producer_started()
        async with self._send_lock:  # alone in its batch: the ledger's end offset stays exact (Tansu)
            await producer.send_and_wait(
                LEDGER_TOPIC, ledger_value(chat_id, sender, at), key=ledger_key(chat_id, sender)
            )
        self._entries[ledger_key(chat_id, sender)] = (chat_id, sender)

    async def close(self) -> None:
        for client in (self._consumer, self._producer):
            if client is not None:
                await client.stop()
        self._consumer = self._producer = None
