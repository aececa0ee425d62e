"""Batch re-segmentation and rollback: the pure decision core (design doc 001, section 6.4).

A re-segmentation runs the streaming segmenter afresh, with the current settings, over a chat's stored
messages in ``[since, until)`` — widened to whole topics: a closed topic with any message in the range is
taken whole, and messages of still-active topics are left to the stream. The result is a new segmentation
version. New topics identical to an old one (same members) keep the old id; every other new topic gets an id
derived from the version, so ids never collide across versions. What the application writes (topic events,
summaries, distillation jobs, memory decisions) is built here too, as plain models; the ops layer
(:mod:`memstream.resegment`) only reads, calls these functions and persists.

Nothing is rewritten in place: superseded topics are kept (state ``superseded``), topic-level memory records
(summary, title) of superseded topics are invalidated by DELETE decisions, and a rollback restores them as
new record versions (ADD decisions) while invalidating what the rolled-back version created.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agents import segmenter
from agents.config import SegmenterConfig
from agents.segmentation_diff import TopicSet, diff_segmentations
from schemas import (
    ChatMessage,
    DecisionOp,
    DistillJob,
    MemoryDecision,
    MemoryKind,
    MemoryRecord,
    TopicEvent,
    TopicEventKind,
    TopicSummary,
    stable_id,
)
from schemas.segmentation import SegmentationDiff, SegmentationVersion

__all__ = [
    "TOPIC_LEVEL_KINDS",
    "NewTopic",
    "ResegmentPlan",
    "RollbackPlan",
    "Scope",
    "distill_jobs",
    "hide_decisions",
    "plan_resegment",
    "plan_rollback",
    "restore_decisions",
    "restore_id",
    "rollback_events",
    "select_scope",
    "topic_level_records",
    "version_events",
    "version_summaries",
]

TOPIC_LEVEL_KINDS = (MemoryKind.SUMMARY, MemoryKind.TITLE)  # records that describe a topic as a whole
CURRENT_STATES = ("active", "closed")


@dataclass(frozen=True)
class Scope:
    """The topics and messages one re-segmentation covers."""

    topics: list[TopicSummary]  # closed topics of the current view touching the range, in start order
    message_ids: list[str]  # every message to re-segment (the range, widened to whole topics)
    skipped_active: int  # messages in the range left out because their topic is still active


@dataclass(frozen=True)
class NewTopic:
    topic_id: str
    message_ids: list[str]
    weights: dict[str, float]
    participants: list[str]
    unchanged_of: str | None = None  # the old topic it reproduces exactly (keeps that id)


@dataclass(frozen=True)
class ResegmentPlan:
    chat_id: str
    version: int
    old: list[TopicSummary]
    new: list[NewTopic]
    diff: SegmentationDiff
    skipped_active: int = 0

    @property
    def superseded(self) -> list[TopicSummary]:
        kept = {t.unchanged_of for t in self.new}
        return [t for t in self.old if t.topic_id not in kept]

    @property
    def created(self) -> list[NewTopic]:
        return [t for t in self.new if t.unchanged_of is None]


@dataclass(frozen=True)
class RollbackPlan:
    chat_id: str
    version: int
    hide_topics: list[TopicSummary]  # the rolled-back version's topics -> state rolled_back
    restore_topics: list[TopicSummary]  # the topics it superseded -> closed again
    hide_records: list[MemoryRecord] = field(default_factory=list)
    restore_records: list[MemoryRecord] = field(default_factory=list)


def select_scope(topics: Sequence[TopicSummary], in_range: Sequence[ChatMessage]) -> Scope:
    """Widen the range's messages to the whole closed topics they belong to; keep active topics out."""
    active = {m for t in topics if t.state == "active" for m in t.message_ids}
    ids = {m.message_id for m in in_range}
    touched = [t for t in topics if t.state == "closed" and ids.intersection(t.message_ids)]
    chosen = dict.fromkeys(m.message_id for m in in_range if m.message_id not in active)
    for t in touched:
        chosen.update(dict.fromkeys(t.message_ids))
    return Scope(topics=touched, message_ids=list(chosen), skipped_active=len(ids & active))


def plan_resegment(
    chat_id: str,
    version: int,
    old: Sequence[TopicSummary],
    messages: Sequence[ChatMessage],
    vectors: Sequence[object] | None,
    cfg: SegmenterConfig,
    skipped_active: int = 0,
    audit: Any | None = None,
) -> ResegmentPlan:
    """Segment ``messages`` (stream order) afresh under ``version`` and compare with the ``old`` topics.

    ``audit`` (the settings' ``AuditConfig``) applies the stream's close-time split check to every closed
    topic, so that a re-segmentation with unchanged settings reproduces the stream.
    """
    if version < 2:
        raise ValueError("a re-segmentation writes version 2 or later (version 1 is the stream)")
    raw = _segment(chat_id, version, messages, vectors, cfg)
    if audit is not None and getattr(audit, "close_check", False) and getattr(audit, "split", False):
        raw = _close_time_splits(raw, messages, vectors, audit)
    old_by_members = {frozenset(t.message_ids): t.topic_id for t in old}
    new = []
    for ev in raw:
        same = old_by_members.get(frozenset(ev.message_ids))
        topic_id = same or stable_id(chat_id, ev.message_ids[0], f"v{version}", prefix="t-")
        new.append(NewTopic(topic_id, list(ev.message_ids), dict(ev.weights), list(ev.participants), same))
    diff = diff_segmentations(
        [TopicSet(t.topic_id, tuple(t.message_ids)) for t in old],
        [TopicSet(t.topic_id, tuple(t.message_ids)) for t in new],
    )
    return ResegmentPlan(chat_id, version, list(old), new, diff, skipped_active)


def plan_repairs(
    chat_id: str, version: int, topics: Mapping[str, TopicSummary], splits: Sequence[Any], merges: Sequence[Any]
) -> ResegmentPlan:
    """The audit's repairs (``topic_audit`` split and merge proposals) as segmentation ``version``: each split
    topic becomes its parts, each merge group one topic; a topic is repaired at most once per version and
    proposals naming a topic no longer current are skipped."""
    old: list[TopicSummary] = []
    new: list[NewTopic] = []

    def take(ids: list[str]) -> bool:
        if any(t not in topics or topics[t].state != "closed" or t in taken for t in ids):
            return False
        taken.update(ids)
        old.extend(topics[t] for t in ids)
        return True

    taken: set[str] = set()

    for split in splits:
        if take([split.topic_id]):
            for ids, people in zip(split.parts, split.participants, strict=True):
                tid = stable_id(chat_id, ids[0], f"v{version}", prefix="t-")
                new.append(NewTopic(tid, list(ids), {}, list(people)))
    for merge in merges:
        if take([merge.keep_topic_id, *merge.merged_topic_ids]):
            tid = stable_id(chat_id, merge.message_ids[0], f"v{version}", prefix="t-")
            new.append(NewTopic(tid, list(merge.message_ids), {}, list(merge.participants)))
    diff = diff_segmentations(
        [TopicSet(t.topic_id, tuple(t.message_ids)) for t in old],
        [TopicSet(t.topic_id, tuple(t.message_ids)) for t in new],
    )
    return ResegmentPlan(chat_id, version, old, new, diff)


def _segment(
    chat_id: str, version: int, messages: Sequence[ChatMessage], vectors, cfg: SegmenterConfig
) -> list[TopicEvent]:
    """The CLOSED events of a fresh streaming run, ordered by each topic's first message."""
    pool = segmenter.ChatPool(chat_id=chat_id, segmentation_version=version)
    closed: list[TopicEvent] = []
    for i, msg in enumerate(messages):
        pool, events = segmenter.step(pool, msg, None if vectors is None else vectors[i], cfg)
        closed += [e for e in events if e.kind == TopicEventKind.CLOSED]
    if messages:
        pool, events = segmenter.flush(pool, messages[-1].ts)
        closed += events
    order = {m.message_id: i for i, m in enumerate(messages)}
    closed = [e for e in closed if e.message_ids]
    return sorted(closed, key=lambda e: min(order.get(m, len(order)) for m in e.message_ids))


def _close_time_splits(
    closed: list[TopicEvent], messages: Sequence[ChatMessage], vectors, audit: Any
) -> list[TopicEvent]:
    """Each closed topic, or the parts the close-time check (``agents.topic_audit``) splits it into."""
    from agents import topic_audit

    index = {m.message_id: i for i, m in enumerate(messages)}
    out: list[TopicEvent] = []
    for ev in closed:
        members = [i for i in (index.get(m) for m in ev.message_ids) if i is not None]
        vecs = None if vectors is None else [[float(x) for x in vectors[i]] for i in members]
        view = topic_audit.TopicView(chat_id=ev.chat_id, topic_id=ev.topic_id, weights=ev.weights,
                                     messages=[messages[i] for i in members], vectors=vecs)  # fmt: skip
        proposal = topic_audit.check_topic(view, audit).split
        out += topic_audit.split_events(ev, proposal) if proposal is not None else [ev]
    return out


# ---- what applying a version writes ------------------------------------------------------------------


def _related(ids: Sequence[str], others: Sequence[TopicSummary] | Sequence[NewTopic]) -> list[str]:
    mine = set(ids)
    return [t.topic_id for t in others if mine.intersection(t.message_ids)]


def version_events(
    plan: ResegmentPlan, by_id: dict[str, ChatMessage], kind: str = "resegment"
) -> list[TopicEvent]:
    """One CLOSED event per created topic, naming the superseded topics it replaces (reason ``kind:vN``)."""
    events = []
    for t in plan.created:
        msgs = [by_id[m] for m in t.message_ids if m in by_id]
        if not msgs:
            continue
        events.append(
            TopicEvent(
                event_id=stable_id(plan.chat_id, kind, plan.version, t.topic_id, prefix="te-"),
                kind=TopicEventKind.CLOSED,
                chat_id=plan.chat_id,
                topic_id=t.topic_id,
                message_ids=list(t.message_ids),
                weights=dict(t.weights),
                related_topic_ids=_related(t.message_ids, plan.superseded),
                participants=list(t.participants),
                reason=f"{kind}:v{plan.version}",
                segmentation_version=plan.version,
                at=max(m.ts for m in msgs),
            )
        )
    return events


def version_summaries(
    plan: ResegmentPlan, by_id: dict[str, ChatMessage]
) -> tuple[list[TopicSummary], list[TopicSummary]]:
    """(superseded topics marked ``superseded``, created topics as ``closed`` summaries of the version)."""
    gone = [t.model_copy(update={"state": "superseded"}) for t in plan.superseded]
    made = []
    for t in plan.created:
        msgs = sorted((by_id[m] for m in t.message_ids if m in by_id), key=lambda m: m.ts)
        if msgs:
            made.append(
                TopicSummary(
                    chat_id=plan.chat_id,
                    topic_id=t.topic_id,
                    state="closed",
                    message_ids=[m.message_id for m in msgs],
                    participants=sorted({m.display_name for m in msgs}),
                    started_at=msgs[0].ts,
                    last_active_at=msgs[-1].ts,
                    segmentation_version=plan.version,
                )
            )
    return gone, made


def distill_jobs(events: Sequence[TopicEvent], by_id: dict[str, ChatMessage]) -> list[DistillJob]:
    """The distillation jobs of the new topics (ids derived from the events, as the segment stage does)."""
    return [
        DistillJob(
            job_id=stable_id("job", e.event_id),
            chat_id=e.chat_id,
            topic_id=e.topic_id,
            messages=[by_id[m] for m in e.message_ids if m in by_id],
            at=e.at,
        )
        for e in events
    ]


def topic_level_records(records: Sequence[MemoryRecord], topic_ids: Sequence[str]) -> list[MemoryRecord]:
    """Live summary/title records of ``topic_ids``."""
    ids = set(topic_ids)
    return [r for r in records if r.live and r.topic_id in ids and r.kind in TOPIC_LEVEL_KINDS]


def hide_decisions(
    records: Sequence[MemoryRecord], action: str, version: int, at: datetime, reason: str
) -> list[MemoryDecision]:
    """DELETE decisions invalidating ``records`` at ``at`` (nothing is physically removed)."""
    return [
        MemoryDecision(
            decision_id=stable_id("decision", action, version, r.memory_id),
            op=DecisionOp.DELETE,
            chat_id=r.chat_id,
            target_memory_id=r.memory_id,
            reason=reason,
            source_event_id=stable_id(r.chat_id, action, version, prefix="seg-"),
            at=at,
        )
        for r in records
        if r.live
    ]


def restore_id(memory_id: str, version: int) -> str:
    return stable_id("mem", memory_id, "restore", version)


def restore_decisions(records: Sequence[MemoryRecord], version: int, at: datetime) -> list[MemoryDecision]:
    """ADD decisions bringing ``records`` back as new live versions (the closed originals stay as history)."""
    out = []
    for r in records:
        sid = stable_id(r.chat_id, "rollback", version, prefix="seg-")
        copy = r.model_copy(
            update={"memory_id": restore_id(r.memory_id, version), "valid_to": None, "superseded_by": None,
                    "version": r.version + 1, "source_event_id": sid}
        )  # fmt: skip
        out.append(
            MemoryDecision(
                decision_id=stable_id("decision", "rollback-restore", version, r.memory_id),
                op=DecisionOp.ADD,
                chat_id=r.chat_id,
                record=copy,
                reason=f"rollback of segmentation version {version}: restore {r.memory_id}",
                source_event_id=sid,
                at=at,
            )
        )
    return out


def plan_rollback(
    entry: SegmentationVersion, topics: Sequence[TopicSummary], records: Sequence[MemoryRecord]
) -> RollbackPlan:
    """What rolling back ``entry`` changes, given the chat's stored topics and every memory record version.

    Hidden: the version's topics and the live records it created (by the ledger, or tied to its topics).
    Restored: the topics it superseded and the records its application invalidated (by the ledger, or the
    superseded topics' summaries/titles closed at the version's creation time), unless restored already.
    """
    new_ids, old_ids = set(entry.new_topic_ids), set(entry.superseded_topic_ids)
    hide_topics = [t for t in topics if t.topic_id in new_ids and t.state in CURRENT_STATES]
    restore_topics = [t for t in topics if t.topic_id in old_ids and t.state == "superseded"]
    created = set(entry.memories_created)
    hide = [r for r in records if r.live and (r.memory_id in created or r.topic_id in new_ids)]
    invalidated = set(entry.memories_invalidated)
    existing = {r.memory_id for r in records}
    restore = [
        r
        for r in records
        if not r.live
        and restore_id(r.memory_id, entry.version) not in existing
        and r.memory_id not in created
        and r.topic_id not in new_ids
        and (r.memory_id in invalidated or (r.topic_id in old_ids and r.valid_to == entry.created_at))
    ]
    return RollbackPlan(entry.chat_id, entry.version, hide_topics, restore_topics, hide, restore)


def rollback_events(plan: RollbackPlan) -> list[TopicEvent]:
    """CLOSED events re-announcing the restored topics, naming the rolled-back topics they replace."""
    return [
        TopicEvent(
            event_id=stable_id(plan.chat_id, "rollback", plan.version, t.topic_id, prefix="te-"),
            kind=TopicEventKind.CLOSED,
            chat_id=plan.chat_id,
            topic_id=t.topic_id,
            message_ids=list(t.message_ids),
            related_topic_ids=_related(t.message_ids, plan.hide_topics),
            participants=list(t.participants),
            reason=f"rollback:v{plan.version}",
            segmentation_version=t.segmentation_version,
            at=t.last_active_at,
        )
        for t in plan.restore_topics
    ]
