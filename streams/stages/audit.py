"""The periodic audit of topic segmentation (design doc 001, 6.3 异步全面审计): a thin adapter.

For one chat (or every chat) it reads the recently closed topics from the store, embeds their messages
(the embedder's cache makes this a lookup for text seen before), runs :func:`agents.topic_audit.audit_chat`
and always returns the report. With ``apply`` it makes the soft repair only: suspicious (low-cohesion)
topics keep their messages and get a lower ``weight``. Split and merge repairs change which topics exist,
so they are applied as a new segmentation version (:func:`memstream.resegment.apply_audit`: versioned
events, superseded topics, and a rollback like any re-segmentation).

The reference time is the chat's latest topic activity (event time), never the wall clock, so an audit of a
replayed log decides the same.
"""

from __future__ import annotations

import logging

from agents import topic_audit
from agents.config import AuditConfig
from streams.clients import Clients
from streams.stages.io import StageOutput, embed

log = logging.getLogger("memstream.audit")


class AuditStage:
    group = "auditor"

    def __init__(self, clients: Clients, cfg: AuditConfig) -> None:
        self.clients = clients
        self.cfg = cfg

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
            vecs = await embed(self.clients, [m.text for m in msgs])
            views.append(topic_audit.TopicView(chat_id=chat_id, topic_id=t.topic_id, messages=msgs,
                                               vectors=None if vecs is None else vecs.tolist()))  # fmt: skip
            topics[t.topic_id] = (t, msgs)
        return topic_audit.audit_chat(chat_id, views, self.cfg), topics

    async def _apply(
        self, report: topic_audit.AuditReport, topics: dict[str, tuple], out: StageOutput
    ) -> None:
        store = self.clients.store
        for check in report.topics:
            summary = topics[check.topic_id][0]
            if check.suspicious and summary.weight != check.weight:  # soft repair: lower weight, keep all
                await store.upsert_topic(summary.model_copy(update={"weight": check.weight,
                                                                    "cohesion": check.cohesion}))  # fmt: skip
