"""The segmentation stage adapter: raw messages -> stored turns, topic events, distillation jobs.

A stage never reads or commits offsets itself; a runner (embedded or Faust) feeds it decoded records and
persists its output. This is what lets the same code run in-process and over Kafka.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from agents import segmenter, topic_audit
from agents.config import AuditConfig, SegmenterConfig
from schemas import (
    ChatMessage,
    DistillJob,
    TopicEvent,
    TopicEventKind,
    TopicSummary,
    stable_id,
)
from schemas.messages import StreamControl
from streams.clients import Clients
from streams.log import Record
from streams.sensitive import SensitivePolicy, screen_records
from streams.stages import edits
from streams.stages.io import StageOutput, decode_all, embed, sender_deleted
from streams.topics import (
    DISTILL_JOBS,
    RAW_MESSAGES,
    TOPIC_SEGMENTS,
)

log = logging.getLogger("memstream.stages")

__all__ = ["SegmentStage"]


def _with_inferred_parents(msgs: list[ChatMessage], stepped: list[list[TopicEvent]]) -> list[ChatMessage]:
    parents = {
        (e.chat_id, e.message_ids[0]): e.parent_message_id
        for events in stepped
        for e in events
        if e.kind in (TopicEventKind.OPENED, TopicEventKind.EXTENDED)
        and e.reason != "soft"
        and e.parent_message_id not in (None, e.message_ids[0])
    }
    return [
        m.model_copy(
            update={"metadata": {**m.metadata, "inferred_reply_to": parents[(m.chat_id, m.message_id)]}}
        )
        if not m.reply_to and (m.chat_id, m.message_id) in parents
        else m
        for m in msgs
    ]


class SegmentStage:
    """Raw messages -> stored turns, topic events, distillation jobs for closed topics."""

    group = "segmenter"
    source = RAW_MESSAGES

    def __init__(self, clients: Clients, cfg: SegmenterConfig, audit: AuditConfig,
                 sensitive: SensitivePolicy | None = None) -> None:  # fmt: skip
        self.clients = clients
        self.cfg = cfg
        self.audit = audit
        self.sensitive = sensitive or SensitivePolicy()
        self.pools: dict[str, segmenter.ChatPool] = {}
        self._dirty: set[str] = set()  # chats whose pool changed since the last checkpoint
        self._legacy = False  # loaded from a whole-state checkpoint: rewrite it per chat
        self.deleted: set[tuple[str, str]] = set()
        self._skipped: set[tuple[str, str]] = set()  # (chat, message id) of deleted senders' messages seen
        self._checks: dict[tuple[str, str], topic_audit.TopicCheck] = {}  # close-time checks of this batch
        # active topics a merge absorbed in this batch, as they stood: stored marked merged whether or not a
        # batch boundary fell between their opening and the merge (the same rows for any batch size)
        self._absorbed: dict[tuple[str, str], TopicSummary] = {}
        self._read: dict[tuple[str, str], ChatMessage] = {}  # stored messages read in this batch (_messages)
        self._edited: list[ChatMessage] = []  # this batch's edits (a topic closing in it sees the new text)

    def load_state(self, parts: Mapping[str, str] | None) -> None:
        """The checkpoint: one part per chat (``""``: an older checkpoint holding every chat at once)."""
        parts = dict(parts or {})
        legacy = parts.pop("", None)
        self.pools = segmenter.load_pools(legacy) if legacy else {}
        self.pools.update({chat: segmenter.ChatPool.model_validate_json(raw) for chat, raw in parts.items()})
        self._legacy = legacy is not None
        self._dirty = set(self.pools) if self._legacy else set()

    def use_pools(self, pools: dict[str, segmenter.ChatPool]) -> None:
        """The pools of the next batch's chats, parsed by the caller (a worker keeps them in working memory,
        fenced by offset, and keeps its last ones parsed): the stage's whole state until the next call."""
        self.pools = dict(pools)
        self._dirty, self._legacy = set(), False

    def pool(self, chat: str) -> segmenter.ChatPool | None:
        """The current pool of ``chat`` (None: no message of it seen)."""
        return self.pools.get(chat)

    def active_topics(self) -> dict[str, dict[str, list[str]]]:
        """Per chat held, its active topics' message ids (a worker keeps them in working memory)."""
        return {chat: {t.topic_id: list(t.message_ids) for t in pool.topics} for chat, pool in self.pools.items()}

    def dump_state(self) -> dict[str, str | None]:
        """The pools that changed since the last call (each chat is its own part)."""
        parts: dict[str, str | None] = {chat: self.pools[chat].model_dump_json() for chat in self._dirty}
        if self._legacy:
            parts[""] = None
        self._dirty, self._legacy = set(), False
        return parts

    async def process(self, records: list[Record]) -> StageOutput:
        out = StageOutput()
        self._read = {}
        self.deleted = await self.clients.log.deletions()
        records = screen_records(records, self.sensitive)  # a producer that wrote the raw topic itself
        items = self._without_deleted_parents(decode_all(self.source, "segment", records, out))
        msgs = [m for m in items if isinstance(m, ChatMessage) and not self._is_deleted(m)]
        msgs, edited = await edits.split_edits(self.clients, msgs)
        self._edited = edited
        vectors = await embed(self.clients, [m.text for m in msgs])
        by_key = {m.key: m for m in msgs}
        vec_by_key = {m.key: vectors[i] for i, m in enumerate(msgs)} if vectors is not None else {}
        stepped: list[list[TopicEvent]] = []
        for item in items:
            if isinstance(item, StreamControl):
                stepped.append(self._flush(item))
            elif isinstance(item, ChatMessage) and item.key in by_key:
                stepped.append(self._step(item, vec_by_key.get(item.key), out, records))
        # stored with the inferred reply (the immediate layer's reply chain) before any job reads them
        await self.clients.store.upsert_messages(_with_inferred_parents(msgs, stepped), vectors)
        await self._read_closed(stepped)
        touched: dict[tuple[str, str], TopicEvent] = {}
        for events in stepped:
            for event in events:
                out.emit(TOPIC_SEGMENTS, event.chat_id, event.event_id, event)
                touched[(event.chat_id, event.topic_id)] = event
                if event.kind != TopicEventKind.CLOSED:
                    continue
                for repair in await self._on_closed(event, out):  # after the CLOSED event, never instead
                    out.emit(TOPIC_SEGMENTS, repair.chat_id, repair.event_id, repair)
                    touched[(repair.chat_id, repair.topic_id)] = repair
            out.processed += 1
        await self._save_topics(touched)
        self._read = {}  # the edits below change stored messages
        for m in edited:  # after this batch's new messages and topics are stored
            try:
                await edits.apply_edit(self.clients, m, out)
            except Exception as exc:  # one bad edit must not stop the chat
                record = next((r for r in records if m.message_id in r.value), records[0])
                out.dead_letter("segment", record, f"edit failed: {exc!r}", m.chat_id)
        return out

    async def _on_closed(self, event: TopicEvent, out: StageOutput) -> list[TopicEvent]:
        """Close-time check (design doc 6.3): SPLIT at a semantic break, or MERGED into a near-duplicate
        recently closed topic; distillation jobs go to the repaired topics. Returns the repair events."""
        stored = await self._messages(event.chat_id, event.message_ids)
        messages = edits.as_edited(stored, self._edited)
        repairs: list[TopicEvent] = []
        audit = self.audit
        if audit.close_check and messages:
            try:
                repairs = await self._close_check(event, messages)
            except Exception as exc:  # a failed check never blocks the topic: it is distilled as closed
                log.warning("close-time check failed", extra={"topic_id": event.topic_id, "error": repr(exc)})
                repairs = []
        if not repairs:
            await self._emit_job(event, out, messages)
        for repair in repairs:
            by_id = {m.message_id: m for m in messages}
            if repair.kind == TopicEventKind.MERGED:
                by_id = {m.message_id: m for m in await self._messages(repair.chat_id, repair.message_ids)}
            await self._emit_job(repair, out, [by_id[m] for m in repair.message_ids if m in by_id])
        return repairs

    async def _read_closed(self, stepped: list[list[TopicEvent]]) -> None:
        """The stored messages of every topic this batch closed, in one read across its chats (a round trip
        each on Elasticsearch: at the end of a burst a batch closes hundreds), for :meth:`_messages`."""
        keys = [(e.chat_id, m) for events in stepped for e in events if e.kind == TopicEventKind.CLOSED
                for m in e.message_ids if (e.chat_id, m) not in self._read]  # fmt: skip
        if keys:
            for msg in await self.clients.store.get_messages_in(keys):
                self._read[(msg.chat_id, msg.message_id)] = msg

    async def _messages(self, chat_id: str, message_ids: list[str]) -> list[ChatMessage]:
        """``store.get_messages`` within one batch: a closed topic's messages are read once for its job and
        its stored summary, not once each (each read is a round trip to Elasticsearch)."""
        missing = [m for m in dict.fromkeys(message_ids) if (chat_id, m) not in self._read]
        if missing:
            for msg in await self.clients.store.get_messages(chat_id, missing):
                self._read[(chat_id, msg.message_id)] = msg
        return [self._read[(chat_id, m)] for m in dict.fromkeys(message_ids) if (chat_id, m) in self._read]

    async def _close_check(self, event: TopicEvent, messages: list[ChatMessage]) -> list[TopicEvent]:
        audit = self.audit
        vectors = await embed(self.clients, [m.text for m in messages])
        view = topic_audit.TopicView(
            chat_id=event.chat_id, topic_id=event.topic_id, messages=messages, weights=event.weights,
            vectors=None if vectors is None else vectors.tolist(),
        )  # fmt: skip
        check = topic_audit.check_topic(view, audit)
        self._checks[(event.chat_id, event.topic_id)] = check
        if audit.split and check.split is not None:
            return topic_audit.split_events(event, check.split)
        if not audit.merge or vectors is None:
            return []
        recent = await self._recent_views(event, messages[0].ts, audit)
        found = topic_audit.find_merges([*recent, view], audit, only={event.topic_id})
        return [
            topic_audit.merge_event(event.chat_id, p, event.at, event.segmentation_version) for p in found
        ]

    async def _recent_views(self, event: TopicEvent, start, audit) -> list[topic_audit.TopicView]:
        """Closed topics of the chat that ended within ``merge_gap_s`` before ``start``, with vectors."""
        views = []
        for t in await self.clients.store.list_topics(event.chat_id):
            gap = (start - t.last_active_at).total_seconds()
            if t.state != "closed" or t.topic_id == event.topic_id or gap > audit.merge_gap_s:
                continue
            msgs = await self._messages(t.chat_id, t.message_ids)
            vecs = await embed(self.clients, [m.text for m in msgs])
            if msgs and vecs is not None:
                views.append(topic_audit.TopicView(chat_id=t.chat_id, topic_id=t.topic_id, messages=msgs,
                                                   vectors=vecs.tolist()))  # fmt: skip
        return views

    def _is_deleted(self, msg: ChatMessage) -> bool:
        return sender_deleted(self.deleted, msg)

    def _without_deleted_parents(self, items: list) -> list:
        """A reply to a deleted sender's message (met in a replay of a log that still holds it) keeps no
        pointer to it: the deletion removed that link from the live state too (agents.forget)."""
        if not self.deleted:
            return items
        self._skipped |= {(m.chat_id, m.message_id) for m in items if isinstance(m, ChatMessage) and self._is_deleted(m)}
        return [m.model_copy(update={"reply_to": None})
                if isinstance(m, ChatMessage) and m.reply_to and (m.chat_id, m.reply_to) in self._skipped else m
                for m in items]  # fmt: skip

    def _step(self, msg: ChatMessage, vec, out: StageOutput, records: list[Record]) -> list[TopicEvent]:
        pool = self.pools.get(msg.chat_id) or segmenter.ChatPool(chat_id=msg.chat_id)
        before = pool
        try:
            pool, events = segmenter.step(pool, msg, vec, self.cfg)
        except Exception as exc:  # a bug on one message must not stop the chat
            record = next((r for r in records if msg.message_id in r.value), records[0])
            out.dead_letter("segment", record, f"segmenter failed: {exc!r}", msg.chat_id)
            return []
        for event in events:
            for gone in event.related_topic_ids if event.kind == TopicEventKind.MERGED else ():
                if (active := before.topic(gone)) is not None:
                    self._absorbed[(msg.chat_id, gone)] = _active_summary(msg.chat_id, active, "merged")
        if pool is not self.pools.get(msg.chat_id):  # a changed pool is a new object (a seen message: same)
            self.pools[msg.chat_id] = pool
            self._dirty.add(msg.chat_id)
        return events

    def _flush(self, control: StreamControl) -> list[TopicEvent]:
        events: list[TopicEvent] = []
        chats = [control.chat_id] if control.chat_id else sorted(self.pools)
        for chat_id in chats:
            if chat_id in self.pools:
                pool, evs = segmenter.flush(self.pools[chat_id], control.at)
                self.pools[chat_id] = pool
                self._dirty.add(chat_id)
                events.extend(evs)
        return events

    async def _emit_job(self, event: TopicEvent, out: StageOutput, messages: list[ChatMessage]) -> None:
        if not messages:
            return
        job = DistillJob(
            job_id=stable_id("job", event.event_id),
            chat_id=event.chat_id,
            topic_id=event.topic_id,
            messages=messages,
            at=event.at,
        )
        out.emit(DISTILL_JOBS, job.chat_id, job.job_id, job)

    async def _save_topics(self, touched: dict[tuple[str, str], TopicEvent]) -> None:
        """The batch's touched topics stored in one write (:meth:`~retrieval.protocols.Store.upsert_topics`),
        then the topics absorbed by its merges marked."""
        split = {(e.chat_id, t) for e in touched.values() if e.kind == TopicEventKind.SPLIT
                 for t in e.related_topic_ids}  # fmt: skip
        summaries: list[TopicSummary] = []
        for (chat_id, topic_id), event in touched.items():
            pool = self.pools.get(chat_id)
            active = pool.topic(topic_id) if pool else None
            if active is not None:
                summary = _active_summary(chat_id, active, "active")
            elif event.kind in (TopicEventKind.CLOSED, TopicEventKind.SPLIT, TopicEventKind.MERGED):
                # closed topics, the parts of a split, the keeper of a close-time merge
                msgs = await self._messages(chat_id, event.message_ids)
                if not msgs:
                    continue
                check = self._checks.pop((chat_id, topic_id), None)
                summary = TopicSummary(
                    chat_id=chat_id,
                    topic_id=topic_id,
                    state="split" if (chat_id, topic_id) in split else "closed",
                    message_ids=[m.message_id for m in msgs],
                    participants=sorted({m.display_name for m in msgs}),
                    started_at=min(m.ts for m in msgs),
                    last_active_at=max(m.ts for m in msgs),
                    segmentation_version=event.segmentation_version,
                    cohesion=check.cohesion if check else None,
                    weight=check.weight if check else 1.0,
                )
            else:
                continue
            summaries.append(summary)
        stored = {(x.chat_id, x.topic_id) for x in summaries}
        summaries += [x for key, x in self._absorbed.items() if key not in stored]
        self._absorbed.clear()
        await self.clients.store.upsert_topics(summaries)
        for event in [e for e in touched.values() if e.kind == TopicEventKind.MERGED]:
            await self._mark_merged(event)  # after the loop: a topic closed and merged away in one batch
        self._checks.clear()

    async def _mark_merged(self, event: TopicEvent) -> None:
        """Topics absorbed by a merge keep their stored summary, marked merged (never rewritten away)."""
        stored = {t.topic_id: t for t in await self.clients.store.list_topics(event.chat_id)}
        for gone in event.related_topic_ids:
            if gone in stored and stored[gone].state != "merged":
                await self.clients.store.upsert_topic(stored[gone].model_copy(update={"state": "merged"}))


def _active_summary(chat_id: str, active: segmenter.ActiveTopic, state: str) -> TopicSummary:
    """The stored summary of an active topic of the pool."""
    return TopicSummary(chat_id=chat_id, topic_id=active.topic_id, state=state, message_ids=list(active.message_ids),
                        participants=list(active.participants), started_at=active.started_at,
                        last_active_at=active.last_active_at)  # fmt: skip
