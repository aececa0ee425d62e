"""Operations shared by the CLI and the API: ingest, replay, delete, export (async, no printing)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from memstream.clients import Clients
from memstream.formats import Parsed, read_any
from schemas import DeadLetter, stable_id
from schemas.messages import StreamControl
from streams.codec import encode
from streams.log import Produce
from streams.runner import EmbeddedRunner, Progress, RunStats
from streams.sensitive import SensitivePolicy, apply
from streams.stages.io import sender_deleted
from streams.topics import DEAD_LETTERS, RAW_MESSAGES

if TYPE_CHECKING:
    from memstream.deletion import DeletionReport

log = logging.getLogger("memstream.ops")


@dataclass
class IngestReport:
    read: int = 0
    new: int = 0  # messages not in the log before (re-ingesting a file adds none)
    rejected: int = 0
    chats: set[str] = field(default_factory=set)
    controls: set[str] = field(default_factory=set)  # the record ids of the flush controls produced
    withheld: int = 0  # messages of a chat or sender the deletion ledger holds: not kept (:func:`withhold`)
    stats: RunStats | None = None


def to_records(parsed: Iterable[Parsed], report: IngestReport, *, flush: bool, source: str) -> Iterable[Produce]:
    """Parsed input -> raw-topic records (+ dead letters for rejects, + one flush control per chat)."""
    last_ts: dict[str, datetime] = {}
    for p in parsed:
        report.read += 1
        if p.message is None:
            report.rejected += 1
            dl = DeadLetter(
                dead_letter_id=stable_id("ingest", source, p.where, p.raw, prefix="dl-"),
                stage="ingest",
                topic=RAW_MESSAGES.name,
                error=p.error or "rejected",
                payload=p.raw,
                at=datetime.now(UTC),
            )
            yield Produce(DEAD_LETTERS.name, "-", dl.dead_letter_id, encode(dl))
            continue
        m = p.message
        report.chats.add(m.chat_id)
        last_ts[m.chat_id] = max(m.ts, last_ts.get(m.chat_id, m.ts))
        yield Produce(RAW_MESSAGES.name, m.chat_id, m.revision_key, encode(m))
    if flush:
        for chat_id, ts in sorted(last_ts.items()):
            ctl = StreamControl(control="flush", chat_id=chat_id, at=ts)
            report.controls.add(record_id := stable_id("flush", chat_id, ts.isoformat()))
            yield Produce(RAW_MESSAGES.name, chat_id, record_id, encode(ctl))


def withhold(parsed: Iterable[Parsed], deleted: Collection[tuple[str, str]], report: IngestReport) -> Iterator[Parsed]:
    """The input without the messages of a deleted chat or of a deleted sender in its chat (the deletion
    ledger ``deleted``): the pipeline would drop them unprocessed, so they are not written to the log either
    (no copy of a deleted user's new messages is kept). Counted in ``report.withheld``."""
    for p in parsed:
        if p.message is not None and sender_deleted(deleted, p.message):
            report.withheld += 1
            report.read += 1  # read, though not passed on to :func:`to_records` (which counts the rest)
            continue
        yield p


def screen(parsed: Iterable[Parsed], policy: SensitivePolicy | None) -> Iterator[Parsed]:
    """The sensitive-information policy on every message before it is stored (see :mod:`streams.sensitive`):
    masked text and ``metadata.sensitive`` counts; a message the policy drops becomes a reject (dead letter)
    carrying the masked text."""
    for p in parsed:
        m = p.message
        res = apply(policy, m.chat_id, m.text) if policy is not None and m is not None else None
        if res is None or not res.counts:
            yield p
            continue
        meta = {**m.metadata, "sensitive": {**res.counts, "masked": res.masked}}
        m = m.model_copy(update={"text": res.text, "metadata": meta})
        if res.drop:
            why = f"dropped by the sensitive-information policy ({', '.join(sorted(res.counts))})"
            yield Parsed(raw=encode(m), error=why, where=p.where)
        else:
            yield Parsed(message=m, raw=p.raw and encode(m), where=p.where)


async def ingest(
    clients: Clients,
    path: Path,
    *,
    fmt: str | None = None,
    flush: bool = True,
    progress: Progress | None = None,
    on_read: Callable[[], None] | None = None,
) -> IngestReport:
    report = IngestReport()
    await finish_deletions(clients)
    runner = EmbeddedRunner(clients, clients.settings.pipeline)

    def counted(items: Iterable[Parsed]) -> Iterable[Parsed]:
        for item in items:
            if on_read:
                on_read()
            yield item

    parsed = withhold(counted(read_any(path, fmt)), await clients.log.deletions(), report)  # before the policy:
    parsed = screen(parsed, clients.settings.sensitive)  # a dropped message of a deleted user leaves no dead letter
    records = to_records(parsed, report, flush=flush, source=str(path))
    report.new = await runner.produce(records, lambda p: p.topic == RAW_MESSAGES.name and p.record_id not in report.controls)
    report.stats = await runner.run_until_idle(progress)
    log.info("ingested", extra={"read": report.read, "new": report.new, "rejected": report.rejected,
                                "withheld": report.withheld, "chats": len(report.chats)})  # fmt: skip
    return report


async def replay(clients: Clients, progress: Progress | None = None) -> RunStats:
    """Rebuild memory from offset 0 into an empty store (raw messages and the deletion ledger are kept)."""
    await finish_deletions(clients)
    runner = EmbeddedRunner(clients, clients.settings.pipeline)
    await runner.reset_for_replay()
    for chat_id in await clients.store.chats():
        await clients.store.delete_chat(chat_id)
    graph = clients.graph  # derived data too
    if graph is not None:
        for chat_id in await graph.chats():
            await graph.delete_chat(chat_id)
    return await runner.run_until_idle(progress)


async def delete(clients: Clients, chat_id: str, user: str | None) -> int:
    """Delete a chat's or one user's data and everything derived from it, now and physically, and record
    it so replay never brings it back (see :mod:`memstream.deletion`). Returns the messages and docs removed."""
    return (await delete_report(clients, chat_id, user)).removed


async def delete_report(clients: Clients, chat_id: str, user: str | None) -> DeletionReport:
    """:func:`delete` with the full report; the configured working memory (Redis) forgets them too."""
    from memstream.clients import open_working_memory
    from memstream.deletion import delete_data, finish_pending

    url = clients.settings.working_memory_url
    wm = None if url.startswith("memory:") else await open_working_memory(url)
    try:
        await finish_pending(clients, wm)
        return await delete_data(clients, chat_id, user, wm=wm)
    finally:
        if wm is not None:
            await wm.close()


async def finish_deletions(clients: Clients) -> list[DeletionReport]:
    """Complete the deletions a killed process left pending (:func:`memstream.deletion.finish_pending`), with
    the configured working memory; nothing is opened when none is pending."""
    from memstream.clients import open_working_memory, pending_in
    from memstream.deletion import finish_pending

    if not await pending_in(clients.log):
        return []
    url = clients.settings.working_memory_url
    wm = None if url.startswith("memory:") else await open_working_memory(url)
    try:
        return await finish_pending(clients, wm)
    finally:
        if wm is not None:
            await wm.close()

