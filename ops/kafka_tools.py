"""Kafka operations (kafka-python): topic bootstrap, file import, lag, deletion ledger, blue/green replay.

- ``bootstrap_topics`` is the explicit step that creates every topic with its partition count (never rely on
  broker auto-creation: it picks its own count, and a chat's key would hash elsewhere).
- ``produce_file`` reads a file with the same readers as ``memstream ingest`` and produces it keyed by chat id.
- ``lag`` reports, per consumer group and topic, how many records are still unconsumed.
- ``delete_data`` records a deletion in the compacted ``memstream.deletion-ledger`` topic, then deletes it and
  everything derived (store, working memory, embedding cache; :mod:`memstream.deletion`) and tombstones the
  raw records on a compacted raw topic (:mod:`ops.kafka_delete`).
- ``replay`` rebuilds memory from offset 0 of the raw topic into a FRESH store with the same stage code
  (the embedded runner over a throw-away local log), honouring the ledger, then hands the segmenter pools to
  working memory, moves the worker group past what it rebuilt, and switches the store (blue/green). Run it
  with the workers stopped (it refuses while the group is active; ``force`` skips that check, needed on
  Tansu, which keeps stopped members in the group); it is idempotent: an interrupted replay is run again.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import os
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlparse

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import NoError, TopicAlreadyExistsError
from kafka.structs import OffsetAndMetadata

from memstream.clients import Clients, UnsupportedBackend, open_embedder, open_llm, open_store
from memstream.formats import read_any
from memstream.ops import IngestReport, screen, to_records
from memstream.settings import Settings
from retrieval.protocols import MemoryStore
from streams.faust_app import (
    ID_HEADER,
    LEDGER_TOPIC,
    WorkerConfig,
    apply_ledger_entry,
    brokers_of,
    ledger_key,
    ledger_value,
)
from streams.log import FileLog, Produce, Record
from streams.runner import EmbeddedRunner, Progress, RunStats
from streams.sensitive import SensitivePolicy
from streams.topics import ALL_TOPICS, DISTILL_JOBS, DISTILL_RESULTS, MEMORY_DECISIONS, RAW_MESSAGES
from streams.working_memory import open_working_memory

log = logging.getLogger("memstream.kafka_tools")

CONSUMED_TOPICS = (RAW_MESSAGES.name, DISTILL_JOBS.name, DISTILL_RESULTS.name, MEMORY_DECISIONS.name)
DEFAULT_GROUP = WorkerConfig.app_id


def _admin(brokers: list[str]) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=brokers, client_id="memstream-ops")


def topic_plan(partitions: int | None = None) -> dict[str, tuple[int, dict[str, str]]]:
    """Every topic with its partition count and config; ``partitions`` overrides the multi-partition ones."""
    plan = {t.name: (partitions if partitions and t.partitions > 1 else t.partitions, {}) for t in ALL_TOPICS}
    plan[LEDGER_TOPIC] = (1, {"cleanup.policy": "compact"})
    return plan


def bootstrap_topics(brokers: list[str], partitions: int | None = None) -> dict[str, str]:
    """Create every topic with an explicit partition count; returns what happened to each."""
    admin = _admin(brokers)
    try:
        existing = set(admin.list_topics())
        plan = topic_plan(partitions)
        status: dict[str, str] = {}
        for name, (n, configs) in plan.items():
            if name in existing:
                have = len(admin.describe_topics([name])[0]["partitions"])
                status[name] = "exists" if have == n else f"exists with {have} partitions (plan: {n})"
                continue
            try:
                admin.create_topics([NewTopic(name, n, 1, topic_configs=configs)])
                status[name] = f"created ({n} partitions)"
            except TopicAlreadyExistsError:
                status[name] = "exists"
        return status
    finally:
        admin.close()


def missing_topics(brokers: list[str]) -> list[str]:
    admin = _admin(brokers)
    try:
        existing = set(admin.list_topics())
    finally:
        admin.close()
    return [name for name in topic_plan() if name not in existing]


def _producer(brokers: list[str], exact_offsets: bool) -> KafkaProducer:
    # batch_size=0: one record per batch, for brokers (Tansu) that under-report end offsets of larger batches
    return KafkaProducer(bootstrap_servers=brokers, acks="all", batch_size=0 if exact_offsets else 16384,
                         linger_ms=0 if exact_offsets else 5, max_in_flight_requests_per_connection=1)  # fmt: skip


def produce(brokers: list[str], items: Iterable[Produce], *, exact_offsets: bool = False) -> int:
    """Send records keyed by chat id with their id in a header; waits for every ack."""
    producer = _producer(brokers, exact_offsets)
    sent = 0
    try:
        for p in items:
            producer.send(p.topic, key=p.key.encode(), value=p.value.encode(),
                          headers=[(ID_HEADER, p.record_id.encode())])  # fmt: skip
            sent += 1
        producer.flush()
    finally:
        producer.close()
    return sent


def produce_file(
    brokers: list[str], path: Path, fmt: str | None = None, *, flush: bool = True, exact_offsets: bool = False,
    policy: SensitivePolicy | None = None,
) -> IngestReport:
    """Produce a file of messages (jsonl | locomo | irc) to the raw topic; rejects go to dead letters."""
    report = IngestReport()
    records = to_records(screen(read_any(path, fmt), policy), report, flush=flush, source=str(path))
    report.new = produce(brokers, records, exact_offsets=exact_offsets)
    return report


def end_offsets(brokers: list[str], topics: Iterable[str]) -> dict[TopicPartition, int]:
    consumer = KafkaConsumer(bootstrap_servers=brokers, enable_auto_commit=False)
    try:
        tps = [TopicPartition(t, p) for t in topics for p in sorted(consumer.partitions_for_topic(t) or ())]
        return dict(consumer.end_offsets(tps)) if tps else {}
    finally:
        consumer.close()


def committed_offsets(brokers: list[str], groups: Iterable[str]) -> dict[str, dict[TopicPartition, int]]:
    admin = _admin(brokers)
    try:
        out = {}
        for group in groups:
            offsets = admin.list_group_offsets({group: None}).get(group, {})
            out[group] = {tp: om.offset for tp, om in offsets.items() if om.offset >= 0}
        return out
    finally:
        admin.close()


def lag(brokers: list[str], group: str | None = None, topics: Iterable[str] = CONSUMED_TOPICS) -> dict:
    """``{group: {topic: unconsumed records}}`` for every consumer group (or just ``group``).

    The worker group is measured on every topic it consumes (``topics``), the others on the topics they
    have committed. Committed offsets are read before end offsets, so a lag of zero everywhere means every
    committed batch's output was already in the topics it was read from.
    """
    if group is None:
        admin = _admin(brokers)
        try:
            groups = sorted({g["group_id"] for g in admin.list_groups()} | {DEFAULT_GROUP})
        finally:
            admin.close()
    else:
        groups = [group]
    committed = committed_offsets(brokers, groups)
    wanted = set(topics)
    for offsets in committed.values():
        wanted |= {tp.topic for tp in offsets}
    ends = end_offsets(brokers, sorted(wanted))
    report: dict[str, dict[str, int]] = {}
    for g in groups:
        mine = set(topics) if g == (group or DEFAULT_GROUP) else {tp.topic for tp in committed[g]}
        per_topic: dict[str, int] = {}
        for tp, end in ends.items():
            if tp.topic in mine:
                per_topic[tp.topic] = per_topic.get(tp.topic, 0) + max(0, end - committed[g].get(tp, 0))
        report[g] = dict(sorted(per_topic.items()))
    return report


def wait_idle(brokers: list[str], group: str = DEFAULT_GROUP, *, timeout_s: float = 120.0,
              poll_s: float = 0.5, stable: int = 2) -> dict[str, int]:  # fmt: skip
    """Block until ``group`` has nothing left to consume on ``stable`` consecutive polls."""
    deadline = time.monotonic() + timeout_s
    calm = 0
    while True:
        current = lag(brokers, group)[group]
        calm = calm + 1 if not any(current.values()) else 0
        if calm >= stable:
            return current
        if time.monotonic() > deadline:
            raise TimeoutError(f"group {group} still lagging: {current}")
        time.sleep(poll_s)


# ---- deletion ledger -----------------------------------------------------------------------------------


def record_deletion(brokers: list[str], chat_id: str, sender: str, at: str | None = None) -> None:
    """Append to the compacted ledger topic (``sender='*'`` = the whole chat); waits for the ack."""
    at = at or datetime.now(UTC).isoformat()
    produce_ledger = KafkaProducer(bootstrap_servers=brokers, acks="all", batch_size=0)
    try:
        produce_ledger.send(
            LEDGER_TOPIC, key=ledger_key(chat_id, sender), value=ledger_value(chat_id, sender, at)
        )
        produce_ledger.flush()
    finally:
        produce_ledger.close()


def read_topic(brokers: list[str], topic: str, ends: dict[TopicPartition, int] | None = None) -> list[Record]:
    """Every record of ``topic`` from offset 0 up to ``ends`` (default: the current end), partition by partition."""
    ends = ends if ends is not None else end_offsets(brokers, [topic])
    ends = {tp: end for tp, end in ends.items() if tp.topic == topic and end > 0}
    out: list[Record] = []
    if not ends:
        return out
    consumer = KafkaConsumer(bootstrap_servers=brokers, enable_auto_commit=False, group_id=None,
                             auto_offset_reset="earliest")  # fmt: skip
    try:
        consumer.assign(list(ends))
        consumer.seek_to_beginning(*ends)
        by_tp: dict[TopicPartition, list[Record]] = {tp: [] for tp in ends}
        idle = 0
        while any(consumer.position(tp) < end for tp, end in ends.items()) and idle < 20:
            batch = consumer.poll(timeout_ms=500)
            idle = 0 if batch else idle + 1
            for tp, recs in batch.items():
                for r in recs:
                    if r.offset < ends[tp]:
                        by_tp[tp].append(_record(r))
        for tp in sorted(by_tp, key=lambda t: t.partition):
            out.extend(by_tp[tp])
        return out
    finally:
        consumer.close()


def _record(r: Any) -> Record:
    headers = dict(r.headers or ())
    rid = headers.get(ID_HEADER)
    rid = rid.decode() if rid else f"{r.topic}:{r.partition}:{r.offset}"
    key = r.key.decode("utf-8", "replace") if r.key else "-"
    value = r.value.decode("utf-8", "replace") if r.value else ""
    return Record(r.topic, r.offset, key, rid, value)


def read_ledger(brokers: list[str]) -> set[tuple[str, str]]:
    """The deletion ledger: ``{(chat_id, sender)}`` with ``sender='*'`` for a whole chat."""
    entries: dict[bytes, tuple[str, str]] = {}
    ends = end_offsets(brokers, [LEDGER_TOPIC])
    if ends:
        consumer = KafkaConsumer(bootstrap_servers=brokers, enable_auto_commit=False, group_id=None)
        try:
            consumer.assign(list(ends))
            consumer.seek_to_beginning(*ends)
            idle = 0
            while any(consumer.position(tp) < end for tp, end in ends.items()) and idle < 20:
                batch = consumer.poll(timeout_ms=500)
                idle = 0 if batch else idle + 1
                for recs in batch.values():
                    for r in recs:
                        apply_ledger_entry(entries, r.key, r.value)
        finally:
            consumer.close()
    return set(entries.values())


async def delete_data(
    settings: Settings, chat_id: str, user: str | None = None, *, embedder: Any = "settings"
) -> int:
    """Ledger first (so replay and the workers honour it), then everything derived in the store, working
    memory (pool, windows, journal) and the local embedding cache, topics distilled again without them
    (:mod:`memstream.deletion`), then tombstones for their raw records (:mod:`ops.kafka_delete`).
    Returns the messages and docs removed from the store."""
    from memstream.deletion import delete_data as delete_everywhere
    from ops.kafka_delete import LedgerLog, raw_tombstones

    brokers = brokers_of(settings.resolved_log_url)
    emb = open_embedder(settings) if embedder == "settings" else embedder
    store = await open_store(settings, emb.dim if emb is not None else None)
    wm = open_working_memory(settings.working_memory_url)
    clients = Clients(settings, LedgerLog(brokers), store, emb, open_llm(settings))
    try:
        report = await delete_everywhere(clients, chat_id, user, wm=wm)
        written = await asyncio.to_thread(raw_tombstones, brokers, chat_id, user)
        log.info("raw tombstones written", extra={"chat_id": chat_id, "records": written})
        return report.removed
    finally:
        await wm.close()
        await store.close()


# ---- blue/green replay ----------------------------------------------------------------------------------


class BlueGreen(Protocol):
    """A store rebuilt beside the live one, then made live in one step."""

    async def fresh(self, dim: int | None) -> MemoryStore:
        """An empty, bootstrapped store at a new location (the live one is untouched)."""
        ...

    async def switch(self) -> str:
        """Make the fresh store the live one (closing it first); returns where it now lives."""
        ...

    async def abandon(self) -> None: ...


def sqlite_path(url: str) -> Path:
    """The file of a ``sqlite:///PATH`` URL, read the way ``memstream.clients.open_store`` reads it."""
    return Path("/" + url[len("sqlite:////") :]) if url.startswith("sqlite:////") else Path(url[10:])


class SQLiteBlueGreen:
    """Build into ``PATH.next``, then ``os.replace`` it over ``PATH`` (atomic on one file system).

    Processes holding the old file keep reading it until they reopen: run with workers and API stopped.
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.next_path = self.path.with_name(self.path.name + ".next")
        self.store: MemoryStore | None = None

    def _unlink(self, base: Path) -> None:
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{base}{suffix}").unlink(missing_ok=True)

    async def fresh(self, dim: int | None) -> MemoryStore:
        from retrieval.sqlite_store import SQLiteStore

        self._unlink(self.next_path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.store = SQLiteStore(self.next_path, dim)
        await self.store.bootstrap()
        return self.store

    async def switch(self) -> str:
        if self.store is not None:
            await self.store.close()  # checkpoints and removes the new file's WAL
            self.store = None
        for suffix in ("-wal", "-shm", "-journal"):  # the old file's side files must not outlive it
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)
        os.replace(self.next_path, self.path)
        return str(self.path)

    async def abandon(self) -> None:
        if self.store is not None:
            await self.store.close()
            self.store = None
        self._unlink(self.next_path)


# One registry keyed by store URL scheme. The ES store exposes ``blue_green(settings) -> BlueGreen``
# (new index, then an alias switch) in its own module; it is imported only when asked for.
BLUE_GREEN: dict[str, str] = {"es": "retrieval.es_store:blue_green"}


def blue_green_for(settings: Settings) -> BlueGreen:
    url = settings.resolved_store_url
    scheme = urlparse(url).scheme
    if scheme == "sqlite":
        return SQLiteBlueGreen(sqlite_path(url))
    if scheme in BLUE_GREEN:
        module, _, attr = BLUE_GREEN[scheme].partition(":")
        try:
            factory = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise UnsupportedBackend(
                f"no blue/green hook {BLUE_GREEN[scheme]} for {scheme!r} stores"
            ) from exc
        return factory(settings)
    raise UnsupportedBackend(f"no blue/green replay for store scheme {scheme!r}")


def ensure_group_inactive(brokers: list[str], group: str, wait_s: float = 0.0) -> None:
    """Refuse to replay under running workers: an offset commit from outside fails for an active group.

    A worker that has just stopped may hold its membership until its session times out: wait ``wait_s``.
    """
    deadline = time.monotonic() + wait_s
    while True:
        current = committed_offsets(brokers, [group])[group]
        probe = dict(list(current.items())[:1])
        if not probe:
            return
        admin = _admin(brokers)
        try:
            result = admin.alter_group_offsets(
                group, {tp: OffsetAndMetadata(o, "", -1) for tp, o in probe.items()}
            )
        finally:
            admin.close()
        errors = [e for e in result.values() if e is not NoError]
        if not errors:
            return
        if time.monotonic() >= deadline:
            raise RuntimeError(
                f"consumer group {group!r} looks active ({errors[0].__name__}); stop the workers"
            )
        time.sleep(1.0)


def move_group_offsets(brokers: list[str], group: str, targets: dict[TopicPartition, int]) -> int:
    """Commit ``targets`` for an inactive ``group`` (only the partitions not already there); returns how many."""
    current = committed_offsets(brokers, [group])[group]
    moves = {tp: o for tp, o in targets.items() if current.get(tp, 0) != o}
    if moves:
        set_group_offsets(brokers, group, moves)
    return len(moves)


def set_group_offsets(brokers: list[str], group: str, offsets: dict[TopicPartition, int]) -> None:
    admin = _admin(brokers)
    try:
        result = admin.alter_group_offsets(
            group, {tp: OffsetAndMetadata(o, "", -1) for tp, o in offsets.items()}
        )
    finally:
        admin.close()
    errors = {tp: e for tp, e in result.items() if e is not NoError}
    if errors:
        raise RuntimeError(f"could not move consumer group {group!r}: {errors}")


@dataclass
class ReplayReport:
    raw_records: int = 0
    chats: int = 0
    deletions: set[tuple[str, str]] = field(default_factory=set)
    stats: RunStats | None = None
    store: str = ""
    offsets_moved: int = 0
    seconds: float = 0.0


async def replay(
    settings: Settings,
    *,
    group: str = DEFAULT_GROUP,
    embedder: Any = "settings",
    blue_green: BlueGreen | None = None,
    force: bool = False,
    inactive_wait_s: float = 15.0,
    pool_ttl_s: float | None = WorkerConfig.pool_ttl_s,
    progress: Progress | None = None,
) -> ReplayReport:
    """Rebuild memory from offset 0 of the raw topic into a fresh store, honouring the deletion ledger."""
    start = time.perf_counter()
    brokers = brokers_of(settings.resolved_log_url)
    if not force:
        await asyncio.to_thread(ensure_group_inactive, brokers, group, inactive_wait_s)
    raw_ends = await asyncio.to_thread(end_offsets, brokers, [RAW_MESSAGES.name])
    deleted = await asyncio.to_thread(read_ledger, brokers)
    raw = await asyncio.to_thread(read_topic, brokers, RAW_MESSAGES.name, raw_ends)
    report = ReplayReport(raw_records=len(raw), deletions=deleted)

    emb = open_embedder(settings) if embedder == "settings" else embedder
    bg = blue_green or blue_green_for(settings)
    store = await bg.fresh(emb.dim if emb is not None else None)
    try:
        with tempfile.TemporaryDirectory(prefix="memstream-replay-") as tmp:
            local_log = await FileLog(Path(tmp) / "log.db").open()
            try:
                clients = Clients(settings, local_log, store, emb, open_llm(settings))
                for chat_id, sender in sorted(deleted):
                    await local_log.record_deletion(chat_id, sender, "replay")
                runner = EmbeddedRunner(clients)
                await runner.produce(Produce(r.topic, r.key, r.record_id, r.value) for r in raw)
                report.stats = await runner.run_until_idle(progress)
                pools = dict(runner.segment.pools)
            finally:
                await local_log.close()
    except BaseException:
        await bg.abandon()
        raise

    wm = open_working_memory(settings.working_memory_url)
    try:  # the replayed pools become the live ones (unversioned writes: replay is authoritative)
        chats = {r.key for r in raw} | set(pools) | {c for c, _ in deleted}
        report.chats = len(pools)
        for chat in sorted(chats - {"-"}):
            await wm.forget_chat(chat)
        for chat, pool in pools.items():
            if (chat, "*") not in deleted:
                await wm.put_pool(chat, pool.model_dump_json(), pool_ttl_s)
    finally:
        await wm.close()
    derived_ends = await asyncio.to_thread(end_offsets, brokers, CONSUMED_TOPICS[1:])
    try:  # the workers resume after what was rebuilt (nothing to move if they had drained)
        report.offsets_moved = await asyncio.to_thread(
            move_group_offsets, brokers, group, {**raw_ends, **derived_ends}
        )
    except RuntimeError:
        if not force:
            await bg.abandon()
            raise
        log.warning("consumer group offsets not moved: the workers will re-read their backlog (idempotent)")
    report.store = await bg.switch()
    report.seconds = time.perf_counter() - start
    return report
