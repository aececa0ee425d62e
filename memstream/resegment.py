"""Re-segmentation and rollback operations shared by the CLI and the API (async, no printing).

The decisions are in :mod:`agents.resegment`; this module reads the store and the ledger, calls them and
persists: topic summaries to the store, versioned topic events, distillation jobs and memory decisions to
the log (so Kafka consumers can follow), then runs the embedded pipeline so distillation, consolidation and
indexing happen as for streamed topics. With a Kafka log the records are appended and the workers process.

Replay rebuilds every chat from raw as segmentation version 1; versions it made obsolete are marked
``discarded`` the next time the chat's versions are read (their topics are no longer in the store).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime

from agents import resegment as core
from agents.config import SegmenterConfig
from agents.topic_audit import AuditReport
from memstream.clients import Clients
from schemas import ChatMessage, DistillJob, MemoryDecision, TopicEvent, TopicSummary
from schemas.segmentation import SegmentationDiff, SegmentationVersion
from streams.codec import encode
from streams.log import FileLog, Produce
from streams.runner import EmbeddedRunner, Progress, RunStats
from streams.segmentation_ledger import VersionLedger
from streams.stages.audit import AuditStage
from streams.topics import DISTILL_JOBS, MEMORY_DECISIONS, TOPIC_SEGMENTS

__all__ = [
    "ResegmentReport",
    "RollbackReport",
    "apply_audit",
    "SegmentationError",
    "current_version",
    "list_versions",
    "resegment",
    "rollback",
    "topics_view",
]


class SegmentationError(ValueError):
    """A request that cannot be carried out (empty range, nothing to roll back, unknown version)."""


@dataclass
class ResegmentReport:
    chat_id: str
    version: int
    since: datetime
    until: datetime | None
    diff: SegmentationDiff
    applied: bool
    messages: int
    skipped_active: int = 0
    superseded: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    summaries_invalidated: int = 0
    memories_created: int = 0
    memories_invalidated: int = 0
    stats: RunStats | None = None


@dataclass
class RollbackReport:
    chat_id: str
    rolled_back: list[int]
    current_version: int
    topics_hidden: int = 0
    topics_restored: int = 0
    records_hidden: int = 0
    records_restored: int = 0


def _now() -> datetime:
    return datetime.now(UTC)


def _base(chat_id: str, at: datetime) -> SegmentationVersion:
    return SegmentationVersion(chat_id=chat_id, version=1, kind="stream", reason="streaming segmentation",
                               created_at=at)  # fmt: skip


async def list_versions(clients: Clients, ledger: VersionLedger, chat_id: str) -> list[SegmentationVersion]:
    """The chat's versions, oldest first (version 1, the stream, always listed); stale ones discarded."""
    entries = await ledger.versions(chat_id)
    present = {t.topic_id for t in await clients.store.list_topics(chat_id)}
    out = []
    for e in entries:
        if e.version > 1 and e.status == "active" and e.new_topic_ids and not present & set(e.new_topic_ids):
            e = e.model_copy(
                update={"status": "discarded", "rollback_reason": "topics not in the store (replay)"}
            )
            await ledger.save(e, "discarded", "replay rebuilt the chat from raw as version 1")
        out.append(e)
    if not out or out[0].version != 1:
        out.insert(0, _base(chat_id, out[0].created_at if out else _now()))
    return out


def current_version(entries: list[SegmentationVersion]) -> int:
    return max((e.version for e in entries if e.status == "active"), default=1)


async def topics_view(clients: Clients, chat_id: str, version: int | None = None) -> list[TopicSummary]:
    """The chat's current topics (active and closed), or every topic made by ``version`` whatever its state."""
    topics = await clients.store.list_topics(chat_id)
    if version is None:
        return [t for t in topics if t.state in core.CURRENT_STATES]
    return [t for t in topics if t.segmentation_version == version]


async def _process(clients: Clients, items: list[Produce], progress: Progress | None) -> RunStats | None:
    runner = EmbeddedRunner(clients, clients.settings.pipeline)
    await runner.produce(items)
    if not isinstance(clients.log, FileLog):  # production: the Faust workers consume these topics
        return None
    return await runner.run_until_idle(progress)


def _events(items: list[TopicEvent]) -> list[Produce]:
    return [Produce(TOPIC_SEGMENTS.name, e.chat_id, e.event_id, encode(e)) for e in items]


def _jobs(items: list[DistillJob]) -> list[Produce]:
    return [Produce(DISTILL_JOBS.name, j.chat_id, j.job_id, encode(j)) for j in items]


def _decisions(items: list[MemoryDecision]) -> list[Produce]:
    return [Produce(MEMORY_DECISIONS.name, d.chat_id, d.decision_id, encode(d)) for d in items]


async def _scope_messages(
    clients: Clients, chat_id: str, since: datetime, until: datetime | None
) -> tuple[core.Scope, list[ChatMessage]]:
    in_range = [m for m in await clients.store.list_messages(chat_id, since=since, until=until)
                if until is None or m.ts < until]  # fmt: skip
    if not in_range:
        span = f"[{since.isoformat()}, {until.isoformat() if until else '…'})"
        raise SegmentationError(f"chat {chat_id!r} has no stored messages in {span}")
    scope = core.select_scope(await clients.store.list_topics(chat_id), in_range)
    if not scope.message_ids:
        raise SegmentationError(
            f"every message of chat {chat_id!r} in that range belongs to a still-active topic; "
            "re-segment once the topics are closed"
        )
    msgs = await clients.store.get_messages(chat_id, scope.message_ids)
    order = {m: i for i, m in enumerate(scope.message_ids)}
    msgs.sort(key=lambda m: (m.ts, order[m.message_id]))
    return scope, msgs


async def resegment(
    clients: Clients,
    ledger: VersionLedger,
    chat_id: str,
    since: datetime,
    until: datetime | None = None,
    *,
    cfg: SegmenterConfig | None = None,
    dry_run: bool = False,
    reason: str = "",
    progress: Progress | None = None,
) -> ResegmentReport:
    """Re-segment ``chat_id``'s messages in ``[since, until)`` with ``cfg`` (default: the settings') as a new
    version; ``dry_run`` only reports. Nothing is written when the new segmentation equals the current one."""
    if until is not None and until <= since:
        raise SegmentationError("--until must be later than --since")
    cfg = cfg or clients.settings.segmenter
    entries = await list_versions(clients, ledger, chat_id)
    version = max(e.version for e in entries) + 1
    scope, msgs = await _scope_messages(clients, chat_id, since, until)
    vectors = await clients.embedder.embed([m.text for m in msgs]) if clients.embedder and msgs else None
    audit = getattr(clients.settings, "audit", None)  # the stream's close-time check, when configured
    plan = core.plan_resegment(
        chat_id, version, scope.topics, msgs, vectors, cfg, scope.skipped_active, audit
    )
    report = ResegmentReport(
        chat_id, version, since, until, plan.diff, applied=False, messages=len(msgs),
        skipped_active=scope.skipped_active, superseded=[t.topic_id for t in plan.superseded],
        created=[t.topic_id for t in plan.created],
    )  # fmt: skip
    if dry_run or not plan.diff.changed:
        return report
    await _apply(clients, ledger, plan, msgs, entries, report, since, until, cfg, reason, progress)
    return report


async def apply_audit(
    clients: Clients, ledger: VersionLedger, chat_id: str | None = None, *, progress: Progress | None = None
) -> tuple[list[AuditReport], list[ResegmentReport]]:
    """Audit ``chat_id`` (default: every chat) and apply its repairs. Suspicious topics get their lower weight
    in place (a soft repair, nothing is lost); the split and merge repairs enabled in the settings are applied
    as a new segmentation version of the chat (kind ``audit``), exactly like a re-segmentation: the repaired
    topics are superseded, the new ones distilled, and ``rollback`` undoes it."""
    reports, _ = await AuditStage(clients, clients.settings.audit).run(chat_id, apply=True)
    cfg = clients.settings.audit
    applied = []
    for r in reports:
        splits, merges = (r.splits if cfg.split else []), (r.merges if cfg.merge else [])
        if not splits and not merges:
            continue
        topics = {t.topic_id: t for t in await clients.store.list_topics(r.chat_id)}
        entries = await list_versions(clients, ledger, r.chat_id)
        version = max(e.version for e in entries) + 1
        plan = core.plan_repairs(r.chat_id, version, topics, splits, merges)
        msgs = await clients.store.get_messages(r.chat_id, [m for t in plan.old for m in t.message_ids])
        if not plan.created or not msgs:
            continue
        since = min(m.ts for m in msgs)
        report = ResegmentReport(
            r.chat_id, version, since, None, plan.diff, applied=False, messages=len(msgs),
            superseded=[t.topic_id for t in plan.superseded], created=[t.topic_id for t in plan.created],
        )  # fmt: skip
        why = "; ".join([s.reason for s in splits] + [m.reason for m in merges])
        await _apply(clients, ledger, plan, msgs, entries, report, since, None, clients.settings.segmenter,
                     f"audit: {why}", progress, kind="audit")  # fmt: skip
        applied.append(report)
    return reports, applied


async def _apply(
    clients, ledger, plan, msgs, entries, report, since, until, cfg, reason, progress, kind="resegment"
) -> None:
    at = _now()
    by_id = {m.message_id: m for m in msgs}
    if not await ledger.versions(plan.chat_id):
        await ledger.save(entries[0], "recorded", "the streaming segmentation")
    entry = SegmentationVersion(
        chat_id=plan.chat_id, version=plan.version, kind=kind, since=since, until=until, reason=reason,
        settings=cfg.model_dump(), superseded_topic_ids=report.superseded, new_topic_ids=report.created,
        diff=plan.diff, created_at=at,
    )  # fmt: skip
    await ledger.save(entry, "applying")
    before = {r.memory_id: r.live for r in await clients.store.list_memories(plan.chat_id, live_only=False)}
    gone, made = core.version_summaries(plan, by_id)
    for summary in [*gone, *made]:  # superseded first: the new topics tag the turns last
        await clients.store.upsert_topic(summary)
    events = core.version_events(plan, by_id, kind)
    live = await clients.store.list_memories(plan.chat_id)
    hidden = core.topic_level_records(live, report.superseded)
    why = f"segmentation version {plan.version} superseded the topic"
    items = [
        *_events(events),
        *_decisions(core.hide_decisions(hidden, "resegment", plan.version, at, why)),
        *_jobs(core.distill_jobs(events, by_id)),
    ]
    report.stats = await _process(clients, items, progress)
    after = await clients.store.list_memories(plan.chat_id, live_only=False)
    created = [r.memory_id for r in after if r.memory_id not in before]
    invalidated = [r.memory_id for r in after if before.get(r.memory_id) and not r.live]
    entry = entry.model_copy(update={"memories_created": created, "memories_invalidated": invalidated})
    await ledger.save(entry, "applied", f"{len(made)} topics, {len(gone)} superseded")
    report.applied = True
    report.summaries_invalidated = len(hidden)
    report.memories_created, report.memories_invalidated = len(created), len(invalidated)


async def rollback(
    clients: Clients, ledger: VersionLedger, chat_id: str, *, to: int | None = None, reason: str = ""
) -> RollbackReport:
    """Roll back the chat's newest active version (or every active version above ``to``), newest first."""
    entries = await list_versions(clients, ledger, chat_id)
    active = [e for e in entries if e.status == "active" and e.version > 1]
    if to is not None:
        target = next((e for e in entries if e.version == to), None)
        if target is None:
            raise SegmentationError(f"chat {chat_id!r} has no segmentation version {to}")
        if target.status != "active":
            raise SegmentationError(
                f"version {to} of chat {chat_id!r} is {target.status}; pick an active one"
            )
        todo = [e for e in active if e.version > to]
    else:
        todo = active[-1:]
    if not todo:
        where = f"above version {to}" if to is not None else "to roll back"
        raise SegmentationError(
            f"chat {chat_id!r} has no active re-segmentation {where} "
            f"(current version {current_version(entries)}; version 1 is the streaming segmentation)"
        )
    report = RollbackReport(chat_id, [], current_version(entries))
    for entry in sorted(todo, key=lambda e: -e.version):
        await _rollback_one(clients, ledger, entry, reason, report)
    report.current_version = current_version(await ledger.versions(chat_id))
    return report


async def _rollback_one(
    clients: Clients, ledger: VersionLedger, entry: SegmentationVersion, reason: str, report: RollbackReport
) -> None:
    at = _now()
    topics = await clients.store.list_topics(entry.chat_id)
    records = await clients.store.list_memories(entry.chat_id, live_only=False)
    plan = core.plan_rollback(entry, topics, records)
    for t in plan.hide_topics:  # hidden first: the restored topics tag the turns last
        await clients.store.upsert_topic(t.model_copy(update={"state": "rolled_back"}))
    for t in plan.restore_topics:
        await clients.store.upsert_topic(t.model_copy(update={"state": "closed"}))
    why = f"segmentation version {entry.version} rolled back"
    items = [
        *_events(core.rollback_events(plan)),
        *_decisions(core.hide_decisions(plan.hide_records, "rollback", entry.version, at, why)),
        *_decisions(core.restore_decisions(plan.restore_records, entry.version, at)),
    ]
    await _process(clients, items, None)
    done = entry.model_copy(update={"status": "rolled_back", "rolled_back_at": at, "rollback_reason": reason})
    await ledger.save(done, "rolled_back", reason or "rollback")
    report.rolled_back.append(entry.version)
    report.topics_hidden += len(plan.hide_topics)
    report.topics_restored += len(plan.restore_topics)
    report.records_hidden += len(plan.hide_records)
    report.records_restored += len(plan.restore_records)
