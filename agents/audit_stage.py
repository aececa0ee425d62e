"""The periodic audit of topic segmentation (design doc 001, 6.3 异步全面审计): a thin adapter.

For one chat (or every chat) it reads the recently closed topics from the store, embeds their messages
(the embedder's cache makes this a lookup for text seen before), runs :func:`agents.topic_audit.audit_chat`
and always returns the report. With ``apply`` it also repairs (the kinds enabled by ``AuditConfig.split`` /
``merge``), as new events only:

- a split: SPLIT events (one per part, ``related_topic_ids`` = the original) to the topic-segments log, the
  original's stored summary marked ``split``, the parts stored as closed topics, a distillation job per part;
- a merge: a MERGED event (``topic_id`` = the earliest topic, ``related_topic_ids`` = the absorbed ones),
  the keeper stored with every message, the others marked ``merged``, a distillation job for the keeper;
- soft repair: suspicious (low-cohesion) topics keep their messages and get a lower ``weight``.

The reference time is the chat's latest topic activity (event time), never the wall clock, so an audit of a
replayed log decides the same. The caller sends ``StageOutput.produced`` (embedded log or Kafka).
"""

from __future__ import annotations

import logging
from datetime import datetime

from agents import topic_audit
from agents.stages import StageOutput, _embed
from memstream.clients import Clients
from schemas import ChatMessage, DistillJob, TopicEvent, TopicEventKind, TopicSummary, stable_id
from streams.topics import DISTILL_JOBS, TOPIC_SEGMENTS

log = logging.getLogger("memstream.audit")
PREFIX = "audit"


class AuditStage:
    group = "auditor"

    def __init__(self, clients: Clients) -> None:
        self.clients = clients
        self.cfg = clients.settings.audit

    async def run(
        self, chat_id: str | None = None, *, apply: bool = False
    ) -> tuple[list[topic_audit.AuditReport], StageOutput]:
        out = StageOutput()
        reports = []
        chats = [chat_id] if chat_id else await self.clients.store.chats()
        for chat in chats:
            try:
                report, topics = await self._audit(chat)
            except Exception as exc:  # one chat's failure must not stop the audit of the others
                log.warning("audit failed", extra={"chat_id": chat, "error": repr(exc)})
                continue
            reports.append(report)
            if apply:
                await self._apply(report, topics, out)
            out.processed += 1
        return reports, out

    async def _audit(self, chat_id: str) -> tuple[topic_audit.AuditReport, dict[str, tuple]]:
        stored = [t for t in await self.clients.store.list_topics(chat_id) if t.state == "closed"]
        if stored:
            now = max(t.last_active_at for t in stored)
            stored = [
                t for t in stored if (now - t.last_active_at).total_seconds() <= self.cfg.audit_window_s
            ]
        views, topics = [], {}
        for t in stored:
            msgs = await self.clients.store.get_messages(chat_id, t.message_ids)
            vecs = await _embed(self.clients, [m.text for m in msgs])
            views.append(topic_audit.TopicView(chat_id=chat_id, topic_id=t.topic_id, messages=msgs,
                                               vectors=None if vecs is None else vecs.tolist()))  # fmt: skip
            topics[t.topic_id] = (t, msgs)
        return topic_audit.audit_chat(chat_id, views, self.cfg), topics

    async def _apply(
        self, report: topic_audit.AuditReport, topics: dict[str, tuple], out: StageOutput
    ) -> None:
        chat = report.chat_id
        store = self.clients.store
        for check in report.topics:
            summary = topics[check.topic_id][0]
            if check.suspicious and summary.weight != check.weight:  # soft repair: lower weight, keep all
                await store.upsert_topic(summary.model_copy(update={"weight": check.weight,
                                                                    "cohesion": check.cohesion}))  # fmt: skip
        for split in report.splits if self.cfg.split else []:  # repairs that hurt on IRC dev are opt-in
            summary, msgs = topics[split.topic_id]
            ref = _reference(summary)
            by_id = {m.message_id: m for m in msgs}
            for event in topic_audit.split_events(ref, split, prefix=PREFIX):
                part = [by_id[m] for m in event.message_ids if m in by_id]
                self._emit(event, part, out)
                await store.upsert_topic(_summary(event, part))
            await store.upsert_topic(summary.model_copy(update={"state": "split"}))
        for merge in report.merges if self.cfg.merge else []:
            keep = topics[merge.keep_topic_id][0]
            at = max(topics[t][0].last_active_at for t in [merge.keep_topic_id, *merge.merged_topic_ids])
            event = topic_audit.merge_event(chat, merge, at, keep.segmentation_version, prefix=PREFIX)
            msgs = await store.get_messages(chat, event.message_ids)
            self._emit(event, msgs, out)
            await store.upsert_topic(_summary(event, msgs))
            for gone in merge.merged_topic_ids:
                await store.upsert_topic(topics[gone][0].model_copy(update={"state": "merged"}))

    def _emit(self, event: TopicEvent, messages: list[ChatMessage], out: StageOutput) -> None:
        out.emit(TOPIC_SEGMENTS, event.chat_id, event.event_id, event)
        if messages:
            job = DistillJob(job_id=stable_id("job", event.event_id), chat_id=event.chat_id,
                             topic_id=event.topic_id, messages=messages, at=event.at)  # fmt: skip
            out.emit(DISTILL_JOBS, job.chat_id, job.job_id, job)


def _reference(t: TopicSummary) -> TopicEvent:
    """The closed topic as the event it was closed with (only its ids and times are read; never emitted)."""
    return TopicEvent(
        event_id=stable_id(t.chat_id, t.topic_id, "audit", prefix="te-"),
        kind=TopicEventKind.CLOSED,
        chat_id=t.chat_id,
        topic_id=t.topic_id,
        message_ids=list(t.message_ids),
        segmentation_version=t.segmentation_version,
        at=t.last_active_at,
    )


def _summary(event: TopicEvent, msgs: list[ChatMessage]) -> TopicSummary:
    ts: list[datetime] = [m.ts for m in msgs] or [event.at]
    return TopicSummary(
        chat_id=event.chat_id,
        topic_id=event.topic_id,
        state="closed",
        message_ids=[m.message_id for m in msgs],
        participants=sorted({m.display_name for m in msgs}),
        started_at=min(ts),
        last_active_at=max(ts),
        segmentation_version=event.segmentation_version,
    )
