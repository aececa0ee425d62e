"""Kafka administration (kafka-python): topic bootstrap, file import, lag, the deletion ledger, group offsets.

- ``bootstrap_topics`` is the explicit step that creates every topic with its partition count (never rely on
  broker auto-creation: it picks its own count, and a chat's key would hash elsewhere).
- ``produce_file`` reads a file with the same readers as ``memstream ingest`` and produces it keyed by chat id.
- ``lag`` reports, per consumer group and topic, how many records are still unconsumed.
- ``record_deletion`` / ``read_ledger``: the compacted ``memstream.deletion-ledger`` topic.
- ``ensure_group_inactive`` / ``move_group_offsets``: what a replay (:mod:`memstream.kafka_replay`) needs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import NoError, TopicAlreadyExistsError
from kafka.structs import OffsetAndMetadata

from memstream.formats import read_any
from memstream.ops import IngestReport, screen, to_records, withhold
from streams.kafka_log import (
    BATCH_BYTES,
    ID_HEADER,
    LEDGER_TOPIC,
    apply_ledger_entry,
    ends_alone,
    forget_records,
    ledger_key,
    ledger_value,
    partition_of,
)
from streams.log import Produce, Record
from streams.sensitive import SensitivePolicy
from streams.topics import ALL_TOPICS, DISTILL_JOBS, DISTILL_RESULTS, MEMORY_DECISIONS, RAW_MESSAGES
from streams.worker import WorkerConfig

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
    return KafkaProducer(bootstrap_servers=brokers, acks="all", batch_size=0 if exact_offsets else BATCH_BYTES,
                         linger_ms=0 if exact_offsets else 5, max_in_flight_requests_per_connection=1)  # fmt: skip


def produce(brokers: list[str], items: Iterable[Produce], *, exact_offsets: bool = False, chunk: int = 5000) -> int:
    """Send records keyed by chat id with their id in a header; waits for every ack.

    ``exact_offsets`` (Tansu, which reports a partition's end as its last batch's base offset + 1): each
    chunk goes in the two rounds of :func:`streams.kafka_log.ends_alone` (the last record of every partition
    alone in its batch), so end offsets are exact whenever a chunk is done, and still one request a batch."""
    producer = _producer(brokers, exact_offsets=False)  # batches; exact offsets come from the rounds
    sent = 0

    def send(p: Produce, partition: int | None) -> None:
        producer.send(p.topic, key=p.key.encode(), value=p.value.encode(), partition=partition,
                      headers=[(ID_HEADER, p.record_id.encode())])  # fmt: skip

    def flush(todo: list[Produce]) -> None:
        if not exact_offsets:
            for p in todo:
                send(p, None)
            producer.flush()
            return
        parts = [(p.topic, partition_of(p.key.encode(), producer.partitions_for(p.topic))) for p in todo]
        for round_ in ends_alone(parts):
            for i in round_:
                send(todo[i], parts[i][1])
            producer.flush()

    try:
        todo: list[Produce] = []
        for p in items:
            todo.append(p)
            sent += 1
            if len(todo) >= chunk:
                flush(todo)
                todo = []
        flush(todo)
    finally:
        producer.close()
    return sent


def produce_file(
    brokers: list[str],
    path: Path,
    fmt: str | None = None,
    *,
    flush: bool = True,
    exact_offsets: bool = False,
    policy: SensitivePolicy | None = None,
) -> IngestReport:
    """Produce a file of messages (jsonl | locomo | irc) to the raw topic; rejects go to dead letters; messages
    of a chat or sender in the deletion ledger are withheld (``report.withheld``), as ``memstream ingest`` does."""
    report = IngestReport()
    parsed = screen(withhold(read_any(path, fmt), read_ledger(brokers), report), policy)
    records = to_records(parsed, report, flush=flush, source=str(path))
    report.new = produce(brokers, records, exact_offsets=exact_offsets)
    return report


def end_offsets(brokers: list[str], topics: Iterable[str]) -> dict[TopicPartition, int]:
    consumer = KafkaConsumer(bootstrap_servers=brokers, enable_auto_commit=False)
    try:
        return _ends(consumer, topics)
    finally:
        consumer.close()


def _ends(consumer: KafkaConsumer, topics: Iterable[str]) -> dict[TopicPartition, int]:
    tps = [TopicPartition(t, p) for t in topics for p in sorted(consumer.partitions_for_topic(t) or ())]
    return dict(consumer.end_offsets(tps)) if tps else {}


def committed_offsets(brokers: list[str], groups: Iterable[str]) -> dict[str, dict[TopicPartition, int]]:
    admin = _admin(brokers)
    try:
        return _committed(admin, groups)
    finally:
        admin.close()


def _committed(admin: KafkaAdminClient, groups: Iterable[str]) -> dict[str, dict[TopicPartition, int]]:
    out = {}
    for group in groups:
        offsets = admin.list_group_offsets({group: None}).get(group, {})
        out[group] = {tp: om.offset for tp, om in offsets.items() if om.offset >= 0}
    return out


class LagProbe:
    """:func:`lag`, asked again and again over one admin client and one consumer (a context manager).

    Each :func:`lag` call opens and closes both: ~15 ms of CPU here, and a poll every 0.1 s then took ~15% of
    a CPU from the workers it watches (``wait_idle``, the throughput bench). The offsets are read afresh on
    every call either way."""

    def __init__(self, brokers: list[str]) -> None:
        self._admin = _admin(brokers)
        try:
            self._consumer = KafkaConsumer(bootstrap_servers=brokers, enable_auto_commit=False)
        except BaseException:
            self._admin.close()
            raise

    def __enter__(self) -> LagProbe:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._consumer.close()
        self._admin.close()

    def lag(self, group: str | None = None, topics: Iterable[str] = CONSUMED_TOPICS) -> dict:
        """``{group: {topic: unconsumed records}}`` for every consumer group (or just ``group``).

        The worker group is measured on every topic it consumes (``topics``), the others on the topics they
        have committed. Committed offsets are read before end offsets, so a lag of zero everywhere means every
        committed batch's output was already in the topics it was read from.
        """
        if group is None:
            groups = sorted({g["group_id"] for g in self._admin.list_groups()} | {DEFAULT_GROUP})
        else:
            groups = [group]
        committed = _committed(self._admin, groups)
        wanted = set(topics)
        for offsets in committed.values():
            wanted |= {tp.topic for tp in offsets}
        ends = _ends(self._consumer, sorted(wanted))
        report: dict[str, dict[str, int]] = {}
        for g in groups:
            mine = set(topics) if g == (group or DEFAULT_GROUP) else {tp.topic for tp in committed[g]}
            per_topic: dict[str, int] = {}
            for tp, end in ends.items():
                if tp.topic in mine:
                    per_topic[tp.topic] = per_topic.get(tp.topic, 0) + max(0, end - committed[g].get(tp, 0))
            report[g] = dict(sorted(per_topic.items()))
        return report


def lag(brokers: list[str], group: str | None = None, topics: Iterable[str] = CONSUMED_TOPICS) -> dict:
    """``{group: {topic: unconsumed records}}`` once (see :meth:`LagProbe.lag`)."""
    with LagProbe(brokers) as probe:
        return probe.lag(group, topics)


def wait_idle(brokers: list[str], group: str = DEFAULT_GROUP, *, timeout_s: float = 120.0,
              poll_s: float = 0.5, stable: int = 2) -> dict[str, int]:  # fmt: skip
    """Block until ``group`` has nothing left to consume on ``stable`` consecutive polls."""
    deadline = time.monotonic() + timeout_s
    calm = 0
    with LagProbe(brokers) as probe:
        while True:
            current = probe.lag(group)[group]
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


def record_forgotten(brokers: list[str], chat_id: str, sender: str, keys: list[bytes]) -> None:
    """Append a deletion's embedding-cache keys to the ledger topic (:func:`streams.kafka_log.forget_records`),
    each record alone in its batch; waits for the acks."""
    producer = KafkaProducer(bootstrap_servers=brokers, acks="all", batch_size=0)
    try:
        for key, value in forget_records(chat_id, sender, keys):
            producer.send(LEDGER_TOPIC, key=key, value=value)
            producer.flush()
    finally:
        producer.close()


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
