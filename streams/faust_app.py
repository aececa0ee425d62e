"""The Faust app: every stage bound to its Kafka topic, running the same stage code as the embedded runner.

At-least-once with idempotent effects (no transactions needed): an agent takes a batch of events, wraps
them as :class:`~streams.log.Record`, runs the stage, sends what it produced (keyed by chat id, the record
id in the ``memstream-id`` header) and waits for the broker's acks; only after that are the batch's events
acked, so a crash before that point redelivers the batch. Redelivery changes nothing twice: output ids
derive from input ids and the store de-duplicates, segmenter pools are fenced by offset in working memory,
and consolidation decisions are journalled there so a redelivered result repeats its decisions instead of
deciding again on a store that already holds them.

The consolidator applies its decisions to the store right after deciding (and still emits them to the
decisions topic), so the next result of a chat sees the effects of the previous one — as the embedded
runner guarantees by draining the indexer between results. The standalone indexer agent re-applies the
decisions topic idempotently (decision ids) for audit and for other consumers.

Nothing happens at import time: ``create_app(settings)`` builds the app; ``faust -A streams.faust_app:app``
builds one from the environment on first access.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import faust

from agents.segmenter import ChatPool
from agents.stages import ConsolidateStage, DistillStage, IndexStage, SegmentStage, StageOutput
from memstream.clients import Clients, open_embedder, open_llm, open_store
from memstream.settings import Settings
from schemas import MemoryDecision
from streams.codec import DecodeError, decode
from streams.log import Produce, Record
from streams.sensitive import screen_value
from streams.topics import ALL_TOPICS, DISTILL_JOBS, DISTILL_RESULTS, MEMORY_DECISIONS, RAW_MESSAGES
from streams.working_memory import WorkingMemory, open_working_memory

log = logging.getLogger("memstream.faust")

LEDGER_TOPIC = "memstream.deletion-ledger"  # compacted, one partition, key "chat\x1fsender" ("*" = chat)
ID_HEADER = "memstream-id"
Send = Callable[[list[Produce]], Awaitable[None]]


@dataclass(frozen=True)
class WorkerConfig:
    app_id: str = "memstream"  # the consumer group of every agent
    batch: int = 256
    within_s: float = 0.5
    distill_batch: int = 16
    consolidate_batch: int = 16
    index_agent: bool = True
    exact_offsets: bool = False  # one record per produce batch (Tansu under-reports end offsets otherwise)
    session_timeout_s: float = 10.0
    commit_interval_s: float = 1.0
    pool_ttl_s: float | None = 30 * 86400.0
    window_ttl_s: float | None = 86400.0
    journal_ttl_s: float | None = 7 * 86400.0
    ledger_refresh_s: float = 2.0
    heartbeat_path: Path | None = None


def brokers_of(log_url: str) -> list[str]:
    """``kafka://h1:9092,h2:9092`` -> ``["h1:9092", "h2:9092"]``."""
    if not log_url.startswith("kafka://"):
        raise ValueError(f"expected a kafka:// log URL, got {log_url!r}")
    hosts = [h.strip() for h in log_url[len("kafka://") :].strip("/").split(",") if h.strip()]
    if not hosts:
        raise ValueError(f"no broker in {log_url!r}")
    return hosts


def ledger_key(chat_id: str, sender: str) -> bytes:
    return f"{chat_id}\x1f{sender}".encode()


def ledger_value(chat_id: str, sender: str, at: str) -> bytes:
    return json.dumps({"chat_id": chat_id, "sender": sender, "at": at}).encode()


def apply_ledger_entry(entries: dict[bytes, tuple[str, str]], key: bytes | None, value: bytes | None) -> None:
    """Fold one ledger record into ``entries`` (last write per key wins; a tombstone removes)."""
    if key is None:
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
        self._consumer: Any = None
        self._producer: Any = None
        self._refreshed = 0.0
        self._lock = asyncio.Lock()

    async def open(self) -> KafkaLog:
        from aiokafka import AIOKafkaConsumer, TopicPartition

        self._tp = TopicPartition(LEDGER_TOPIC, 0)
        self._consumer = AIOKafkaConsumer(bootstrap_servers=self.brokers, enable_auto_commit=False)
        await self._consumer.start()
        self._consumer.assign([self._tp])
        await self._consumer.seek_to_beginning(self._tp)
        await self.refresh()
        return self

    async def refresh(self) -> None:
        """Read the ledger up to its current end."""
        async with self._lock:
            end = (await self._consumer.end_offsets([self._tp]))[self._tp]
            idle = 0
            while await self._consumer.position(self._tp) < end and idle < 3:
                batch = await self._consumer.getmany(self._tp, timeout_ms=500)
                records = batch.get(self._tp, [])
                idle = 0 if records else idle + 1
                for rec in records:
                    apply_ledger_entry(self._entries, rec.key, rec.value)
            self._refreshed = time.monotonic()

    async def deletions(self) -> set[tuple[str, str]]:
        if time.monotonic() - self._refreshed >= self.refresh_s:
            await self.refresh()
        return set(self._entries.values())

    async def _producer_started(self):
        if self._producer is None:
            from aiokafka import AIOKafkaProducer

            self._producer = AIOKafkaProducer(
                bootstrap_servers=self.brokers, acks="all", max_batch_size=1 if self.exact_offsets else 16384
            )
            await self._producer.start()
        return self._producer

    async def append(self, items: list[Produce]) -> int:
        """Send records (keyed by chat id, id in a header) and wait for the acks; returns how many."""
        producer = await self._producer_started()
        futures = [
            await producer.send(
                p.topic, p.value.encode(), key=p.key.encode(), headers=[(ID_HEADER, p.record_id.encode())]
            )
            for p in items
        ]
        await asyncio.gather(*futures)
        return len(items)

    async def record_deletion(self, chat_id: str, sender: str, at: str) -> None:
        producer = await self._producer_started()
        await producer.send_and_wait(
            LEDGER_TOPIC, ledger_value(chat_id, sender, at), key=ledger_key(chat_id, sender)
        )
        self._entries[ledger_key(chat_id, sender)] = (chat_id, sender)

    async def close(self) -> None:
        for client in (self._consumer, self._producer):
            if client is not None:
                await client.stop()
        self._consumer = self._producer = None


def _peek_chat(record: Record) -> str | None:
    """The chat a raw record belongs to, for loading its state (validation happens in the stage)."""
    try:
        obj = json.loads(record.value)
    except ValueError:
        return None
    chat = obj.get("chat_id") if isinstance(obj, dict) else None
    return chat if isinstance(chat, str) and chat else None


def _is_deleted(deleted: set[tuple[str, str]], chat_id: str, sender: str | None = None) -> bool:
    return (chat_id, "*") in deleted or (sender is not None and (chat_id, sender) in deleted)


def _kept_decisions(produced: list[Produce], deleted: set[tuple[str, str]]) -> list[Produce]:
    """Decisions whose chat or speaker was deleted meanwhile are dropped (replay drops them too)."""
    kept = []
    for p in produced:
        try:
            d = decode(MEMORY_DECISIONS, p.value)
        except DecodeError:
            continue
        speaker = d.record.speaker if isinstance(d, MemoryDecision) and d.record else None
        if isinstance(d, MemoryDecision) and not _is_deleted(deleted, d.chat_id, speaker):
            kept.append(p)
    return kept


class Pipeline:
    """The worker side of the stages: state around each batch, effects before acks. Free of Faust."""

    def __init__(self, clients: Clients, wm: WorkingMemory, cfg: WorkerConfig) -> None:
        self.clients = clients
        self.wm = wm
        self.cfg = cfg
        self.segment = SegmentStage(clients)
        self.distill = DistillStage(clients)
        self.consolidate = ConsolidateStage(clients)
        self.index = IndexStage(clients)

    async def deletions(self) -> set[tuple[str, str]]:
        return await self.clients.log.deletions()

    async def segment_batch(self, records: list[Record], send: Send) -> StageOutput:
        """Load the batch's chats' pools, run the segmenter, send, then save the pools (fenced by offset)."""
        last: dict[str, int] = {}
        for r in records:
            for chat in {r.key, _peek_chat(r)} - {None, "-"}:
                last[chat] = max(last.get(chat, -1), r.offset)
        pools = {}
        for chat in last:
            raw = await self.wm.get_pool(chat)
            if raw:
                pools[chat] = ChatPool.model_validate_json(raw)
        self.segment.pools = pools
        policy = self.clients.settings.sensitive  # producers that wrote Kafka directly were not screened
        records = [r if r.value is None else replace(r, value=screen_value(r.value, policy)) for r in records]
        out = await self.segment.process(records)
        await send(out.produced)
        for chat, raw in self.segment.dump_state().items():  # only the pools this batch changed
            version = last.get(chat)
            if raw is not None and not await self.wm.put_pool(chat, raw, self.cfg.pool_ttl_s, version=version):
                # a redelivered batch (or a worker that lost the partition): the stored pool is newer
                log.info("newer segmenter pool kept", extra={"chat_id": chat, "version": version})
        for pool in self.segment.pools.values():
            await self._save_windows(pool)
        return out

    async def _save_windows(self, pool: ChatPool) -> None:
        active = {t.topic_id: list(t.message_ids) for t in pool.topics}
        for topic_id in set(await self.wm.topic_windows(pool.chat_id)) - set(active):
            await self.wm.drop_topic_window(pool.chat_id, topic_id)
        for topic_id, ids in active.items():
            await self.wm.put_topic_window(pool.chat_id, topic_id, ids, self.cfg.window_ttl_s)

    async def distill_batch(self, records: list[Record], send: Send) -> StageOutput:
        deleted = await self.deletions()
        out = await self.distill.process([r for r in records if not _is_deleted(deleted, r.key)])
        await send(out.produced)
        return out

    async def consolidate_batch(self, records: list[Record], send: Send) -> StageOutput:
        """One result at a time: decide (or recall the journalled decisions), apply, then emit."""
        total = StageOutput()
        deleted = await self.deletions()
        for r in records:
            if _is_deleted(deleted, r.key):
                continue
            entry = f"consolidate:{r.record_id}"
            journalled = await self.wm.get_journal(r.key, entry)
            if journalled is not None:
                produced = [Produce(**p) for p in json.loads(journalled)]
            else:
                out = await self.consolidate.process([r])
                produced = out.produced
                total.dead += out.dead
                total.processed += out.processed
                payload = json.dumps([asdict(p) for p in produced])
                await self.wm.put_journal(r.key, entry, payload, self.cfg.journal_ttl_s)
            decisions = [p for p in produced if p.topic == MEMORY_DECISIONS.name]
            kept = _kept_decisions(decisions, deleted)
            applied = await self.index.process(
                [Record(p.topic, -1, p.key, p.record_id, p.value) for p in kept]
            )
            others = [p for p in produced if p.topic != MEMORY_DECISIONS.name]
            total.produced += others + kept + applied.produced
        await send(total.produced)
        return total

    async def index_batch(self, records: list[Record], send: Send) -> StageOutput:
        deleted = await self.deletions()
        out = await self.index.process([r for r in records if not _is_deleted(deleted, r.key)])
        await send(out.produced)
        return out


def record_of(event: Any) -> Record:
    """A Faust event as a log :class:`Record` (record id from the header, else topic:partition:offset)."""
    msg = event.message
    headers = dict(msg.headers or ())
    rid = headers.get(ID_HEADER)
    rid = rid.decode("utf-8", "replace") if isinstance(rid, bytes) else rid
    key = msg.key.decode("utf-8", "replace") if isinstance(msg.key, bytes) else (msg.key or "-")
    value = event.value if event.value is not None else b""
    value = value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
    return Record(msg.topic, msg.offset, key, rid or f"{msg.topic}:{msg.partition}:{msg.offset}", value)


class _Runtime:
    """Opens the clients once per worker (lazily, in the worker's loop) and runs batches with retries."""

    def __init__(self, app: faust.App, settings: Settings, cfg: WorkerConfig) -> None:
        self.app = app
        self.settings = settings
        self.cfg = cfg
        self.pipeline: Pipeline | None = None
        self._lock = asyncio.Lock()

    async def ready(self) -> Pipeline:
        async with self._lock:
            if self.pipeline is None:
                brokers = brokers_of(self.settings.resolved_log_url)
                kafka_log = await KafkaLog(brokers, refresh_s=self.cfg.ledger_refresh_s).open()
                emb = open_embedder(self.settings)
                store = await open_store(self.settings, emb.dim if emb is not None else None)
                clients = Clients(self.settings, kafka_log, store, emb, open_llm(self.settings))  # type: ignore[arg-type]
                wm = open_working_memory(self.settings.working_memory_url)
                self.pipeline = Pipeline(clients, wm, self.cfg)
            return self.pipeline

    async def close(self) -> None:
        if self.pipeline is not None:
            await self.pipeline.wm.close()
            await self.pipeline.clients.close()
            self.pipeline = None

    async def send(self, items: list[Produce]) -> None:
        producer = self.app.producer
        futures = []
        for p in items:
            headers = [(ID_HEADER, p.record_id.encode())]
            futures.append(
                await producer.send(p.topic, p.key.encode(), p.value.encode(), None, None, headers)
            )
        await asyncio.gather(*futures)

    async def run(self, stage: str, records: list[Record]) -> None:
        """Process a batch until it succeeds: its events are acked only when this returns."""
        delay = 0.5
        while True:
            try:
                pipeline = await self.ready()
                await getattr(pipeline, f"{stage}_batch")(records, self.send)
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("batch failed; retrying", extra={"stage": stage, "records": len(records)})
                await asyncio.sleep(delay)
                delay = min(delay * 2, 30.0)


def create_app(settings: Settings, cfg: WorkerConfig | None = None) -> faust.App:
    """The Faust app for ``settings`` (its ``log_url`` must be ``kafka://…``)."""
    cfg = cfg or WorkerConfig()
    brokers = brokers_of(settings.resolved_log_url)
    app = faust.App(
        cfg.app_id,
        broker=[f"kafka://{b}" for b in brokers],
        key_serializer="raw",
        value_serializer="raw",
        web_enabled=False,
        autodiscover=False,
        consumer_auto_offset_reset="earliest",
        broker_session_timeout=cfg.session_timeout_s,
        broker_heartbeat_interval=min(3.0, cfg.session_timeout_s / 3),
        broker_commit_interval=cfg.commit_interval_s,
        producer_acks=-1,
        producer_max_batch_size=1 if cfg.exact_offsets else 16384,
        stream_ack_exceptions=False,
        stream_wait_empty=True,
        topic_allow_declare=True,  # a no-op for bootstrapped topics; gives Faust's leader topic 1 partition
    )
    runtime = _Runtime(app, settings, cfg)
    topics = {s.name: app.topic(s.name, partitions=s.partitions, key_serializer="raw", value_serializer="raw")
              for s in ALL_TOPICS}  # fmt: skip

    def bind(stage: str, topic: str, batch: int) -> None:
        async def agent(stream):
            async for events in stream.take_events(batch, within=cfg.within_s):
                await runtime.run(stage, [record_of(e) for e in events])

        agent.__name__ = f"{stage}_agent"
        app.agent(topics[topic], name=f"memstream.{stage}")(agent)

    bind("segment", RAW_MESSAGES.name, cfg.batch)
    bind("distill", DISTILL_JOBS.name, cfg.distill_batch)
    bind("consolidate", DISTILL_RESULTS.name, cfg.consolidate_batch)
    if cfg.index_agent:
        bind("index", MEMORY_DECISIONS.name, cfg.batch)

    if cfg.heartbeat_path is not None:
        heartbeat = cfg.heartbeat_path

        @app.timer(interval=5.0, name="memstream.heartbeat")
        async def beat() -> None:  # the container health check reads this file's age
            heartbeat.parent.mkdir(parents=True, exist_ok=True)
            heartbeat.touch()

    if settings.audit.audit_interval_s > 0:  # the periodic segmentation audit (design doc 6.3), one worker

        @app.timer(interval=settings.audit.audit_interval_s, on_leader=True, name="memstream.audit")
        async def audit() -> None:
            from agents.audit_stage import AuditStage
            from memstream.resegment import apply_audit
            from streams.segmentation_ledger import open_ledger

            applied = []
            try:
                pipeline = await runtime.ready()
                if settings.audit.audit_apply:  # repairs as segmentation versions, appended to Kafka
                    ledger = await open_ledger(settings.data_dir)
                    try:
                        reports, applied = await apply_audit(pipeline.clients, ledger)
                    finally:
                        await ledger.close()
                else:
                    reports, _ = await AuditStage(pipeline.clients).run()
            except Exception:  # the next tick tries again; the audit never stops a worker
                log.exception("segmentation audit failed")
                return
            log.info("segmentation audit", extra={"chats": len(reports), "versions": len(applied)})

    @app.on_before_shutdown.connect
    async def _close(sender, **kwargs) -> None:
        await runtime.close()

    app.memstream_runtime = runtime  # type: ignore[attr-defined]
    return app


_default: dict[str, faust.App] = {}


def __getattr__(name: str) -> faust.App:
    """``faust -A streams.faust_app:app worker``: the app built from the environment, on first access."""
    if name != "app":
        raise AttributeError(name)
    if "app" not in _default:
        _default["app"] = create_app(Settings())
    return _default["app"]
