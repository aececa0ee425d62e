"""The embedded log keeps raw messages and, of derived records every stage has read, the newest
``log_keep_derived``: kept for ever, they were most of a long chat's log. Offsets go on from the last record,
and replay rebuilds the same memory from the raw messages."""

from __future__ import annotations

from memstream.clients import build_clients
from memstream.ops import ingest, replay
from memstream.settings import Settings
from streams.topics import DERIVED_TOPICS, RAW_MESSAGES
from tests.helpers import make_messages, write_jsonl


def _texts(records) -> list[tuple[str, str]]:
    return sorted((r.kind.value, r.text) for r in records)


async def test_consumed_derived_records_are_dropped_and_offsets_go_on(tmp_path):
    rows = make_messages(2, 120)
    settings = Settings(data_dir=tmp_path / "d", embedder="none", log_keep_derived=0)
    clients = await build_clients(settings, embedder=None)
    try:
        log = clients.log
        await ingest(clients, write_jsonl(tmp_path / "a.jsonl", rows[:120]))
        counts = await log.topic_counts()
        ends = {t.name: await log.end_offset(t.name) for t in DERIVED_TOPICS}
        assert counts[RAW_MESSAGES.name] == await log.end_offset(RAW_MESSAGES.name) > 120  # all raw kept (+ a flush)
        assert all(ends[t.name] > 1 and counts.get(t.name, 0) == 1 for t in DERIVED_TOPICS)  # only the last
        await ingest(clients, write_jsonl(tmp_path / "b.jsonl", rows[120:]))
        after = {t.name: await log.end_offset(t.name) for t in DERIVED_TOPICS}
        assert all(after[t] > ends[t] for t in after)  # counted on from the kept last record
        assert (await log.topic_counts())[RAW_MESSAGES.name] == await log.end_offset(RAW_MESSAGES.name) > 240
        before = {c: _texts(await clients.store.list_memories(c)) for c in ("chat-0", "chat-1")}
        assert all(before.values())
        stats = await replay(clients)
        assert stats.dead_letters == 0
        assert {c: _texts(await clients.store.list_memories(c)) for c in before} == before
    finally:
        await clients.close()


async def test_the_newest_derived_records_are_kept(tmp_path):
    """The default keeps a window of read derived records, for readers tailing the log (topic events)."""
    rows = make_messages(1, 80)
    settings = Settings(data_dir=tmp_path / "d", embedder="none", log_keep_derived=5)
    clients = await build_clients(settings, embedder=None)
    try:
        await ingest(clients, write_jsonl(tmp_path / "a.jsonl", rows))
        counts = await clients.log.topic_counts()
        ends = {t.name: await clients.log.end_offset(t.name) for t in DERIVED_TOPICS}
        assert all(counts.get(t, 0) == min(5, ends[t]) for t in ends) and max(ends.values()) > 5
        longest = max(ends, key=ends.__getitem__)
        assert [r.offset for r in await clients.log.read(longest, 0, 100)] == list(range(ends[longest] - 5, ends[longest]))
    finally:
        await clients.close()


async def test_the_locomo_bench_keeps_every_decision_it_counts(tmp_path):
    """``bench locomo`` reads the run's decision mix back from the log: its settings keep every record."""
    from bench.locomo import KEEP_ALL, consolidation_stats

    rows = make_messages(2, 150)
    settings = Settings(data_dir=tmp_path / "d", embedder="none", log_keep_derived=KEEP_ALL)
    clients = await build_clients(settings, embedder=None)
    try:
        await ingest(clients, write_jsonl(tmp_path / "a.jsonl", rows))
        stats = await consolidation_stats(clients, len(rows), 0)
        applied = clients.store.db.execute("SELECT COUNT(*) FROM decisions").fetchone()[0]
        assert stats["decisions"] == applied > 5
    finally:
        await clients.close()
    few = await build_clients(settings.model_copy(update={"data_dir": tmp_path / "e", "log_keep_derived": 5}))
    try:  # what the count would be with a window: the newest 5 only
        await ingest(few, write_jsonl(tmp_path / "b.jsonl", rows))
        assert (await consolidation_stats(few, len(rows), 0))["decisions"] == 5
    finally:
        await few.close()
