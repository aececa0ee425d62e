"""The Faust app: every stage bound to its Kafka topic, running the same stage list as the embedded runner.

An agent takes a batch of events (the next one filling meanwhile, its turns queued for the model:
:mod:`streams.faust_take`), wraps them as :class:`~streams.log.Record`, runs the stage through
:class:`streams.worker.Pipeline` (effects, then the sends and the broker's acks) and only then acks the
events, so a crash before that point redelivers the batch (see :mod:`streams.worker`).

Nothing happens at import time and nothing here reads settings: ``create_app(wiring)`` builds the app from
a :class:`Wiring` (how to open the clients and working memory, the stage and worker configs), which the
application builds (``memstream.worker``; ``faust -A memstream.worker:app worker``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import faust

from backends.embed.base import warm_up
from streams.clients import Clients
from streams.config import PipelineConfig
from streams.faust_private import BoundedFetchApp, partitions_for
from streams.faust_take import take_ahead
from streams.kafka_log import BATCH_BYTES, ID_HEADER, send_all
from streams.log import Produce, Record
from streams.topics import ALL_TOPICS, DISTILL_JOBS, DISTILL_RESULTS, MEMORY_DECISIONS, RAW_MESSAGES
from streams.worker import Pipeline, WorkerConfig
from streams.working_memory import WorkingMemory

__all__ = ["READY_LOG", "Wiring", "create_app", "record_of"]

READY_LOG = "clients open, model loaded"  # logged once the worker's clients are open and its model loaded

log = logging.getLogger("memstream.faust")


@dataclass(frozen=True)
class Wiring:
    """What a worker is built from (the application fills it in from its settings)."""

    brokers: list[str]
    pipeline: PipelineConfig
    worker: WorkerConfig
    open_clients: Callable[[], Awaitable[Clients]]
    open_working_memory: Callable[[], Awaitable[WorkingMemory]]
    # the periodic segmentation audit: clients -> (chats audited, versions written)
    audit: Callable[[Clients], Awaitable[tuple[int, int]]] | None = None
    audit_interval_s: float = 0.0


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

    def __init__(self, app: faust.App, wiring: Wiring) -> None:
        self.app = app
        self.wiring = wiring
        self.cfg = wiring.worker
        self.pipeline: Pipeline | None = None
        self._lock = asyncio.Lock()
        self._send_lock = asyncio.Lock()
        self._committed_at = 0.0
        self._commit_later: asyncio.Task | None = None

    async def commit_idle(self) -> None:
        """An agent caught up: commit what is acked now rather than at the next commit interval (at most
        every quarter interval), so a worker that is done shows lag 0 at once and a restart after a burst
        redelivers nothing. While busy the agents rarely catch up and the interval commits as before."""
        if self._commit_later is not None and not self._commit_later.done():  # one is already coming
            return
        wait = self._committed_at + self.cfg.commit_interval_s / 4 - asyncio.get_running_loop().time()
        if wait > 0:  # committed a moment ago: once more when the quarter interval is over
            self._commit_later = asyncio.create_task(self._commit(wait))
            return
        await self._commit(0.0)

    async def _commit(self, after_s: float) -> None:
        if after_s > 0:
            await asyncio.sleep(after_s)
        self._committed_at = asyncio.get_running_loop().time()
        try:
            await self.app.consumer.commit()
        except Exception:  # the interval commit tries again
            log.warning("commit after catching up failed", exc_info=True)

    async def ready(self) -> Pipeline:
        async with self._lock:
            if self.pipeline is None:
                clients = await self.wiring.open_clients()
                wm = await self.wiring.open_working_memory()
                self.pipeline = Pipeline(clients, wm, self.cfg, self.wiring.pipeline)
            return self.pipeline

    async def close(self) -> None:
        if self._commit_later is not None:
            self._commit_later.cancel()
        if self.pipeline is not None:
            await self.pipeline.stop_ahead()
            await self.pipeline.wm.close()
            await self.pipeline.clients.close()
            self.pipeline = None

    async def send(self, items: list[Produce]) -> None:
        """Send a batch's output and wait for the acks (exact offsets: in the two rounds of ``send_all``)."""
        producer = self.app.producer

        async def send_one(p: Produce, partition: int | None) -> Awaitable[Any]:
            headers = [(ID_HEADER, p.record_id.encode())]
            return await producer.send(p.topic, p.key.encode(), p.value.encode(), partition, None, headers)

        async def partitions_of(topic: str) -> set[int]:
            return await partitions_for(producer, topic)

        if not self.cfg.exact_offsets:
            await send_all(items, send_one)
            return
        async with self._send_lock:  # two agents' rounds interleaved could batch a partition's last records
            await send_all(items, send_one, partitions_of)

    def embed_ahead(self, events: list[Any]) -> None:
        """A raw batch waiting behind the current one: its turns queued for the model (once it is loaded)."""
        if self.pipeline is not None:
            self.pipeline.embed_ahead([record_of(e) for e in events])

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


def create_app(wiring: Wiring) -> faust.App:
    """The Faust app: every stage of :func:`streams.stages.build_stages` bound to its topic."""
    cfg, brokers = wiring.worker, wiring.brokers
    app = BoundedFetchApp(
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
        producer_max_batch_size=BATCH_BYTES,  # exact offsets: see _Runtime.send
        stream_ack_exceptions=False,
        stream_wait_empty=True,
        topic_allow_declare=True,  # a no-op for bootstrapped topics; gives Faust's leader topic 1 partition
    )
    app.memstream_fetch_wait_ms = cfg.fetch_wait_ms
    runtime = _Runtime(app, wiring)
    topics = {s.name: app.topic(s.name, partitions=s.partitions, key_serializer="raw", value_serializer="raw")
              for s in ALL_TOPICS}  # fmt: skip

    def bind(stage: str, topic: str, batch: int) -> None:
        on_full = runtime.embed_ahead if stage == "segment" else None

        async def agent(stream):
            async for events in take_ahead(stream, batch, cfg.within_s, on_full=on_full,
                                           on_idle=runtime.commit_idle):  # fmt: skip
                await runtime.run(stage, [record_of(e) for e in events])

        agent.__name__ = f"{stage}_agent"
        app.agent(topics[topic], name=f"memstream.{stage}")(agent)

    bind("segment", RAW_MESSAGES.name, cfg.batch)
    bind("distill", DISTILL_JOBS.name, cfg.distill_batch)
    bind("consolidate", DISTILL_RESULTS.name, cfg.consolidate_batch)  # and the graph stage, same records
    if cfg.index_agent:
        bind("index", MEMORY_DECISIONS.name, cfg.batch)

    @app.task
    async def open_clients() -> None:  # at start, not when the first batch is already waiting for them
        try:
            pipeline = await runtime.ready()
            seconds = await warm_up(pipeline.clients.embedder)  # the model too, not on the first batch
        except Exception:  # the first batch tries again (with its retries)
            log.exception("opening the clients failed")
            return
        log.info(READY_LOG, extra={"model_load_s": round(seconds, 3)})

    @app.timer(interval=cfg.ledger_refresh_s, name="memstream.ledger")
    async def read_ledger() -> None:  # an idle worker forgets a deletion's vectors too, not at its next batch
        if runtime.pipeline is not None:
            try:
                await runtime.pipeline.deletions()
            except Exception:  # the next tick, or the next batch, reads it again
                log.warning("reading the deletion ledger failed", exc_info=True)

    if cfg.heartbeat_path is not None:
        heartbeat = cfg.heartbeat_path

        @app.timer(interval=5.0, name="memstream.heartbeat")
        async def beat() -> None:  # the container health check reads this file's age
            heartbeat.parent.mkdir(parents=True, exist_ok=True)
            heartbeat.touch()

    if (
        wiring.audit is not None and wiring.audit_interval_s > 0
    ):  # the periodic segmentation audit, one worker
        run_audit = wiring.audit

        @app.timer(interval=wiring.audit_interval_s, on_leader=True, name="memstream.audit")
        async def audit() -> None:
            try:
                pipeline = await runtime.ready()
                chats, versions = await run_audit(pipeline.clients)
            except Exception:  # the next tick tries again; the audit never stops a worker
                log.exception("segmentation audit failed")
                return
            log.info("segmentation audit", extra={"chats": chats, "versions": versions})

    @app.on_before_shutdown.connect
    async def _close(sender, **kwargs) -> None:
        await runtime.close()

    app.memstream_runtime = runtime  # type: ignore[attr-defined]
    return app
