"""Deletion that deletes: a user's (or a chat's) data and everything derived from it, at once and physically.

Order (a user U in chat C; a chat deletion removes everything of C the same way):

1. the ledger records ``(C, U, time)`` (replay and the workers skip U from now on) plus hashes of U's
   message ids, never their text;
2. the embedded pipeline is drained, so nothing still in flight can derive from U afterwards; the closed
   topics U shared with others are recorded with the ledger, to be distilled again (step 5);
3. the store drops U's messages and every record derived from them (:mod:`retrieval.deletion`), the graph
   their person, statements and evidence, the segmenter's checkpoint and working memory their messages
   (:mod:`agents.forget`), the embedding cache the vectors of every deleted text;
4. the log's records holding U's messages become tombstones (:mod:`streams.log_erase`);
5. each topic recorded at step 2 is distilled again over the messages it keeps (a distillation job on the
   log, processed at once), so the chat keeps a summary and title without U; then the record goes;
6. every SQLite file zeroes what was freed and truncates its WAL (:mod:`backends.sqlite.scrub`); then the data
   dir's files are scanned for the deleted texts' bytes, and a file still holding any is vacuumed
   (rewritten whole) and scanned again (:mod:`memstream.erasure_check`);
7. the ledger records the deletion as done.

A deletion is a durable job from step 1: until step 7 it is *pending*. Readers refuse a chat with a pending
deletion (:func:`memstream.clients.refuse_if_pending`; the API answers 503 with Retry-After), and a process that processes
(``serve``, ``ingest``, ``replay``, ``delete``) finishes every pending deletion before anything else
(:func:`finish_pending`): a deletion killed midway is completed on restart, without being asked again. The
topics to distil again are recorded before anything is removed because afterwards nothing else says which
they were: the store has trimmed them, the log has erased the messages they lost.

With a Kafka log the same runs against the production store and working memory; the distillation of
step 5 runs in-process over a throw-away local log (like a replay), and the raw topic is handled by
:func:`memstream.kafka_replay.delete_data`.
"""

from __future__ import annotations

import logging
import sqlite3
import tempfile
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from agents.forget import forget_in_pool_json
from agents.segment_state import ChatPool, dump_pools, load_pools
from backends.embed.embedder import cache_keys, forget_cached
from backends.sqlite.scrub import erase_freed
from language.text import clear_text_caches
from memstream.clients import Clients, pending_in
from memstream.erasure_check import checked_erasure
from retrieval.deletion import Forgotten, to_redistil
from schemas import ChatMessage, DistillJob, DistillResult, TopicSummary, stable_id
from streams.codec import DecodeError, decode, encode
from streams.log import FileLog, Produce
from streams.log_erase import erase_in_log, needles_of, raw_messages
from streams.topics import DISTILL_JOBS, DISTILL_RESULTS
from streams.working_memory import PoolRewrite, WorkingMemory

log = logging.getLogger("memstream.deletion")

SEGMENTER_GROUP = "segmenter"

# the points of a deletion after which what it did is durable, in order (``delete_data(on_step=...)``)
STEPS = ("ledgered", "drained", "planned", "store_forgotten", "all_forgotten", "log_erased", "redistilled",
         "scrubbed")  # fmt: skip


@runtime_checkable
class RedistilPlan(Protocol):
    """The log's deletion ledger keeps, until they are distilled again, the topics a pending deletion of a
    sender distils again (:class:`streams.log.FileLog`, and the Kafka ledger topic)."""

    async def plan_redistil(self, chat_id: str, sender: str, topic_ids: Iterable[str]) -> set[str]:
        """Record ``topic_ids`` durably; return every topic recorded for the deletion (a killed run's too)."""
        ...

    async def end_redistil(self, chat_id: str, sender: str) -> None: ...


@dataclass
class DeletionReport:
    chat_id: str
    user: str | None
    at: str
    removed: int = 0  # messages and docs (and topics, for a chat), as the store counts them
    messages: int = 0
    memories: int = 0
    reopened: int = 0
    topics_trimmed: int = 0
    topics_redistilled: int = 0
    graph: int = 0
    log_records: int = 0
    cache_vectors: int = 0
    working_memory: int = 0
    byte_remnants: int = 0  # data-dir files still holding a deleted text's bytes after the last scan

    @property
    def job_id(self) -> str:
        return deletion_id(self.chat_id, self.user, self.at)

    def as_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if isinstance(v, int)}


def deletion_id(chat_id: str, user: str | None, at: str) -> str:
    """The job id of the deletion ledgered at ``at`` (also the id its log tombstones carry)."""
    return stable_id("deletion", chat_id, user or "*", at)


async def finish_pending(clients: Clients, wm: WorkingMemory | None = None) -> list[DeletionReport]:
    """Complete every deletion the ledger holds as pending (a process killed midway), oldest first, each with
    its own ledger time (the same job: the same tombstones, nothing ledgered twice). Call it where processing
    starts, under the lock that processing holds."""
    reports = []
    for chat_id, sender, at in sorted(await pending_in(clients.log), key=lambda p: p[2]):
        log.warning("finishing a deletion that did not complete", extra={"chat_id": chat_id, "at": at})
        try:
            when = datetime.fromisoformat(at)
        except ValueError:
            when = None
        reports.append(await delete_data(clients, chat_id, None if sender == "*" else sender, wm=wm, now=when,
                                         at=at, resumed=True))  # fmt: skip
    return reports


async def delete_data(
    clients: Clients,
    chat_id: str,
    user: str | None,
    *,
    wm: WorkingMemory | None = None,
    now: datetime | None = None,
    at: str | None = None,
    resumed: bool = False,
    on_step: Callable[[str], object] | None = None,
) -> DeletionReport:
    """Delete ``user``'s data in ``chat_id`` (None: the whole chat) everywhere this process reaches. ``at``:
    the ledger time of a pending deletion being finished (else ``now``'s); ``resumed``: finishing one a killed
    process began (every file is vacuumed: what it removed left no text to look for); ``on_step``: called
    with the name of each of :data:`STEPS` once it is done (where the tests kill the process)."""
    from streams.runner import EmbeddedRunner  # the runner imports the stages, which import the clients

    step = on_step or (lambda _: None)
    at = at or (now or datetime.now(UTC)).isoformat()
    report = DeletionReport(chat_id=chat_id, user=user, at=at)
    file_log = clients.log if isinstance(clients.log, FileLog) else None
    await clients.log.record_deletion(chat_id, user or "*", at)
    step("ledgered")
    raw: list[ChatMessage] = []
    if file_log is not None:
        await EmbeddedRunner(clients, clients.settings.pipeline).run_until_idle()  # drain: nothing in flight may derive from them later
        raw = await raw_messages(file_log, chat_id, user)
    elif hasattr(clients.log, "raw_messages"):  # Kafka: the raw topic holds every revision of an edited message
        raw = await clients.log.raw_messages(chat_id, user)
    step("drained")
    texts = {m.message_id: m.text for m in raw}  # the latest text of each message
    planned = await _plan_redistil(clients, chat_id, user, set(texts)) if user is not None else set()
    step("planned")
    gone = await _forget_in_store(clients, chat_id, user, set(texts))
    step("store_forgotten")
    texts.update(gone.texts)
    ids = set(texts) | gone.message_ids
    said = list(dict.fromkeys([*(m.text for m in raw), *texts.values()]))  # every revision (edits) too
    report.messages, report.memories, report.reopened = len(ids), gone.memories, gone.reopened
    report.removed, report.topics_trimmed = gone.removed, gone.topics_trimmed + gone.topics_dropped
    if file_log is not None:
        await file_log.record_deleted_ids(chat_id, user or "*", ids)
    cache_texts = [*said, *gone.record_texts]
    graph = clients.graph
    if graph is not None:
        g = await (graph.forget_chat(chat_id) if user is None
                   else graph.forget_user(chat_id, user, sorted(gone.names), sorted(ids)))  # fmt: skip
        report.graph, cache_texts = g.removed, cache_texts + g.texts

    def rewrite(raw_pool: str) -> str | None:
        if user is None:
            return None
        return forget_in_pool_json(raw_pool, ids, sender=user, texts=texts, vectors=gone.vectors)

    if file_log is not None:
        report.working_memory += await _forget_in_checkpoint(file_log, chat_id, rewrite)
    if wm is not None:
        if user is None:
            await wm.forget_chat(chat_id)
            report.working_memory += 1
        else:
            report.working_memory += await wm.forget_messages(
                chat_id, ids, rewrite, needles_of(sorted(ids), said)
            )
    report.cache_vectors = _forget_in_cache(clients, cache_texts)
    publish = getattr(clients.log, "record_forgotten", None)
    if publish is not None and cache_texts:  # Kafka workers elsewhere keep caches of their own
        await publish(chat_id, user or "*", cache_keys(cache_texts))
    step("all_forgotten")
    if file_log is not None:
        report.log_records = await erase_in_log(file_log, chat_id, user, ids, said, report.job_id,
                                                derived_ids=gone.memory_ids | gone.topic_ids, all_derived=resumed)
    step("log_erased")
    stated_again: list[str] = []  # what the shared topics' new distillations state (others' lines, a title)
    if user is not None and planned:
        report.topics_redistilled, stated_again = await _redistil(clients, chat_id, user, planned, at, file_log)
    step("redistilled")
    _erase_freed(clients)
    restated = await _restated(clients, chat_id, gone.record_texts, stated_again) if user is not None else set()
    checked = [*said, *(t for t in gone.record_texts if t not in restated)]
    report.byte_remnants = len(await checked_erasure(clients, checked, vacuum_all=resumed,
                                                     removed=(chat_id, user, ids)))
    step("scrubbed")
    if file_log is not None:  # the WAL holds only the completion (no deleted byte): emptied too
        await file_log.complete_deletion(chat_id, user or "*", at, datetime.now(UTC).isoformat())
        await file_log.erase_freed()
    cleared = clear_text_caches()  # nor in this process's memory (other processes: when they see the ledger)
    log.info("deleted", extra=report.as_dict() | {"text_cache_entries_cleared": cleared})
    return report


async def _plan_redistil(clients: Clients, chat_id: str, user: str, ids: Collection[str]) -> set[str]:
    """Before anything is removed: the closed topics that will lose ``user``'s messages (``ids`` from the log,
    and the store's) and keep others', recorded with the log's ledger; returns every topic recorded (a killed
    run's too: its store has trimmed them, so the ids no longer find them)."""
    store = clients.store
    ids = {*ids, *(m.message_id for m in await store.list_messages(chat_id) if m.sender == user)}
    topics = to_redistil(await store.list_topics(chat_id), ids)
    if isinstance(clients.log, RedistilPlan):
        return await clients.log.plan_redistil(chat_id, user, topics)
    return set(topics)


async def _redistil(
    clients: Clients, chat_id: str, user: str, planned: Collection[str], at: str, file_log: FileLog | None
) -> tuple[int, list[str]]:
    """Distil the planned topics again over the messages they keep, then end the plan. Returns how many jobs
    and the texts their results state."""
    topics = [t for t in await clients.store.list_topics(chat_id) if t.topic_id in planned]
    jobs = await redistil_jobs(clients, chat_id, topics, at)
    stated = await _run_jobs(clients, jobs, file_log)
    if isinstance(clients.log, RedistilPlan):
        await clients.log.end_redistil(chat_id, user)
    return len(jobs), stated


async def _restated(clients: Clients, chat_id: str, texts: Collection[str], stated_again: Sequence[str]) -> set[str]:
    """Of a deletion's removed record texts, those stated again without the user: by the chat's live records
    or by the new distillations of the topics they shared (``stated_again``: a summary of others' lines, the
    same title). Their bytes are no remnant; the user's own texts are always checked."""
    if not texts:
        return set()
    live = {r.text for r in await clients.store.list_memories(chat_id)}
    blob = "\n".join(stated_again)
    return {t for t in texts if t in live or (t and t in blob)}


def _erase_freed(clients: Clients) -> None:
    """Last, after the distillation's writes too: every embedded file zeroes what was freed and empties its
    WAL (the store and the graph did after their deletion; the log and a second pass here)."""
    for holder in (clients.log, clients.store, clients.graph):
        db = getattr(holder, "db", None) if holder is not None else None
        if isinstance(db, sqlite3.Connection):
            erase_freed(db, "log_meta" if isinstance(holder, FileLog) else "meta")


async def _forget_in_store(clients: Clients, chat_id: str, user: str | None, ids: Collection[str]) -> Forgotten:
    store = clients.store
    if user is None:
        if hasattr(store, "forget_chat"):
            return await store.forget_chat(chat_id)
        return Forgotten(removed=await store.delete_chat(chat_id))
    if hasattr(store, "forget_user"):
        return await store.forget_user(chat_id, user, ids)
    return Forgotten(removed=await store.delete_user(chat_id, user), message_ids=set(ids))


async def _forget_in_checkpoint(file_log: FileLog, chat_id: str, rewrite: PoolRewrite) -> int:
    """Apply ``rewrite`` to the chat's segmenter pool in the log's checkpoint (None drops it)."""
    parts = await file_log.load_state(SEGMENTER_GROUP)
    if chat_id in parts:
        await file_log.commit(SEGMENTER_GROUP, {}, [], {chat_id: rewrite(parts[chat_id])}, synced=True)
        return 1
    if parts.get(""):  # a checkpoint from before per-chat parts: every chat in one part
        pools = load_pools(parts[""])
        if chat_id in pools:
            new = rewrite(pools[chat_id].model_dump_json())
            if new is None:
                del pools[chat_id]
            else:
                pools[chat_id] = ChatPool.model_validate_json(new)
            await file_log.commit(SEGMENTER_GROUP, {}, [], {"": dump_pools(pools)}, synced=True)
            return 1
    return 0


def _forget_in_cache(clients: Clients, texts: Sequence[str]) -> int:
    """Drop the deleted texts' vectors from the embedder's cache and the data dir's cache file."""
    if not texts:
        return 0
    emb, n = clients.embedder, 0
    if emb is not None and hasattr(emb, "forget"):
        n += emb.forget(texts)
    path = clients.settings.data_dir / "embed-cache.db"
    if emb is None or Path(str(getattr(emb, "cache", ""))).resolve() != path.resolve():
        n += forget_cached(path, texts)
    return n


async def redistil_jobs(
    clients: Clients, chat_id: str, topics: Sequence[TopicSummary], at: str
) -> list[Produce]:
    """A distillation job per closed topic that lost messages, over the messages it keeps."""
    out = []
    for topic in (t for t in topics if t.state == "closed"):
        msgs = await clients.store.get_messages(chat_id, topic.message_ids)
        if not msgs:
            continue
        job = DistillJob(job_id=stable_id("job", "forget", chat_id, topic.topic_id, at), chat_id=chat_id,
                         topic_id=topic.topic_id, messages=msgs, at=max(m.ts for m in msgs))  # fmt: skip
        out.append(Produce(DISTILL_JOBS.name, chat_id, job.job_id, encode(job)))
    return out


async def _run_jobs(clients: Clients, jobs: list[Produce], file_log: FileLog | None) -> list[str]:
    """Process the jobs now: on the embedded log, or (Kafka) over a throw-away local log. Returns the texts
    their results state (summaries, titles, facts, Q&A)."""
    from streams.runner import EmbeddedRunner

    if file_log is not None:
        runner = EmbeddedRunner(clients, clients.settings.pipeline)
        await runner.produce(jobs)
        await runner.run_until_idle()
        return await _result_texts(file_log, jobs)
    with tempfile.TemporaryDirectory(prefix="memstream-forget-") as tmp:
        local = await FileLog(Path(tmp) / "log.db").open()
        try:
            for chat, sender in sorted(await clients.log.deletions()):
                await local.record_deletion(chat, sender, "copy")
            local_clients = Clients(settings=clients.settings, log=local, store=clients.store,
                                    embedder=clients.embedder, llm=clients.llm, graph=clients.graph)  # fmt: skip
            runner = EmbeddedRunner(local_clients, local_clients.settings.pipeline)
            await runner.produce(jobs)
            await runner.run_until_idle()
            return await _result_texts(local, jobs)
        finally:
            await local.close()


async def _result_texts(log_: FileLog, jobs: list[Produce]) -> list[str]:
    """Every text the distill results of ``jobs`` hold."""
    ids = {p.record_id for p in jobs}
    keys = {p.key for p in jobs}
    out: list[str] = []
    for key in keys:
        for r in await log_.keyed(DISTILL_RESULTS.name, key):
            try:
                result = decode(DISTILL_RESULTS, r.value)
            except DecodeError:
                continue
            if isinstance(result, DistillResult) and result.job_id in ids:
                out += [result.title, result.summary, *(f.text for f in result.facts),
                        *(f"Q: {q.question} A: {q.answer}" for q in result.qa_pairs), *(t.text for t in result.tasks)]
    return out
