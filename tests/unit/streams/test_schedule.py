"""The embedded runner's part of the results' schedule (streams.stages.Stages.consolidate_results with
streams.runner.LogJournal): each stage reads on from its own committed offset, so after a failed run no
result is graphed or decided twice, and results the schedule drops (a deleted chat's) are passed."""

from __future__ import annotations

import pytest

from memstream.clients import build_clients
from memstream.formats import read_any
from memstream.ops import IngestReport, screen, to_records
from memstream.settings import Settings
from streams.runner import EmbeddedRunner
from streams.stages import Stages
from streams.stages.consolidate import ConsolidateStage
from streams.stages.distill import DistillStage
from streams.stages.graph import GraphStage
from streams.topics import DISTILL_RESULTS
from tests.helpers import write_jsonl
from tests.unit.streams.test_runner_prefetch import _messages


async def _runner(tmp_path, name: str):
    clients = await build_clients(Settings(data_dir=tmp_path / name, embedder="none"), embedder=None)
    runner = EmbeddedRunner(clients, clients.settings.pipeline)
    src = write_jsonl(tmp_path / "in.jsonl", _messages())
    await runner.produce(to_records(screen(read_any(src, None), None), IngestReport(), flush=True, source="t"))
    return runner, clients


async def _memories(clients) -> dict[str, list[str]]:
    return {c: sorted(m.model_dump_json() for m in await clients.store.list_memories(c, live_only=False))
            for c in await clients.store.chats()}  # fmt: skip


def _counting(monkeypatch, cls, seen: list[str]) -> None:
    process = cls.process

    async def counted(self, records):
        seen.extend(r.record_id for r in records)
        return await process(self, records)

    monkeypatch.setattr(cls, "process", counted)


async def test_a_run_that_failed_midway_graphs_and_decides_each_result_once(tmp_path, monkeypatch):
    runner, clients = await _runner(tmp_path, "clean")
    try:
        await runner.run_until_idle()
        want = await _memories(clients)
    finally:
        await clients.close()

    runner, clients = await _runner(tmp_path, "failed")
    graphed: list[str] = []
    decided: list[str] = []
    _counting(monkeypatch, GraphStage, graphed)
    process = ConsolidateStage.process

    async def fails_once(self, records):
        if len(decided) == 5 and "failed" not in decided:
            decided.append("failed")
            raise ConnectionError("store timed out")  # the graph stage has read the batch, 5 are decided
        decided.extend(r.record_id for r in records)
        return await process(self, records)

    monkeypatch.setattr(ConsolidateStage, "process", fails_once)
    try:
        with pytest.raises(ConnectionError):
            await runner.run_until_idle()
        topic = DISTILL_RESULTS.name
        assert await runner.log.committed("graph", topic) > await runner.log.committed("consolidator", topic) == 5
        await runner.run_until_idle()
        results = [r.record_id for r in await runner.log.read(topic, 0, 10_000)]
        decided.remove("failed")
        assert sorted(graphed) == sorted(decided) == sorted(results) != []  # each once
        assert await _memories(clients) == want != {}
        assert await runner.lag() == dict.fromkeys(await runner.lag(), 0)
    finally:
        await clients.close()


async def test_a_graph_stage_behind_the_consolidator_reads_on_and_nothing_is_decided_again(tmp_path, monkeypatch):
    runner, clients = await _runner(tmp_path, "d")
    try:
        await runner.run_until_idle()
        want = await _memories(clients)
        topic = DISTILL_RESULTS.name
        results = [r.record_id for r in await runner.log.read(topic, 0, 10_000)]
        await runner.log.commit("graph", {topic: 0}, [])  # a graph store new to this data dir, say
        graphed: list[str] = []
        decided: list[str] = []
        _counting(monkeypatch, GraphStage, graphed)
        _counting(monkeypatch, ConsolidateStage, decided)
        await runner.run_until_idle()
        assert graphed == results != [] and decided == []
        assert await _memories(clients) == want
        assert await runner.lag() == dict.fromkeys(await runner.lag(), 0)
    finally:
        await clients.close()


async def test_a_deleted_chats_results_are_passed_by_both_stages(tmp_path, monkeypatch):
    """A chat deleted while its results are in the log: the schedule drops them (batches of one result,
    so whole batches are dropped), and the run still ends with every stage caught up."""
    runner, clients = await _runner(tmp_path, "d")
    monkeypatch.setattr(EmbeddedRunner, "RESULTS_BATCH", 1)
    process = DistillStage.process

    async def then_delete(self, records):
        out = await process(self, records)
        await clients.log.record_deletion("chat-1", "*", "2026-01-01T00:00:00+00:00")
        return out

    monkeypatch.setattr(DistillStage, "process", then_delete)
    schedule, batches = Stages.consolidate_results, []

    async def bounded(self, records, journal):  # a batch read again and again would never yield to a timeout
        batches.append(records[0].offset)
        assert len(batches) < 1000, "the runner takes the same results again and again"
        return await schedule(self, records, journal)

    monkeypatch.setattr(Stages, "consolidate_results", bounded)
    try:
        await runner.run_until_idle()
        results = await runner.log.read(DISTILL_RESULTS.name, 0, 10_000)
        assert {r.key for r in results} == {"chat-0", "chat-1"}
        assert await runner.lag() == dict.fromkeys(await runner.lag(), 0)
        assert await clients.store.list_memories("chat-1", live_only=False) == []
        assert await clients.store.list_memories("chat-0", live_only=False)
    finally:
        await clients.close()
