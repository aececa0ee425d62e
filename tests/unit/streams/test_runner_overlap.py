"""The embedded runner keeps the model busy while the stages' Python runs: raw messages are queued for the
model more than one batch ahead of the segmenter, and the consolidator follows the graph stage a batch of
results at a time (never ahead of it) instead of waiting for the graph stage to read a whole round."""

from __future__ import annotations

import asyncio

import numpy as np

from backends.embed.embedder import CachedEmbedder
from memstream.clients import build_clients
from memstream.formats import read_any
from memstream.ops import IngestReport, screen, to_records
from memstream.settings import Settings
from streams.runner import EmbeddedRunner
from streams.stages.consolidate import ConsolidateStage
from streams.topics import DISTILL_RESULTS
from tests.helpers import make_messages, write_jsonl


class GatedEmbedder:
    """Records every call; no call ends until the gate opens (a model busy with a long forward)."""

    name = "gated-test"
    dim = 8

    def __init__(self) -> None:
        self.calls: list[int] = []
        self.gate = asyncio.Event()

    async def embed(self, texts: list[str], *, is_query: bool = False) -> np.ndarray:
        self.calls.append(len(texts))
        await self.gate.wait()
        out = np.ones((len(texts), self.dim), dtype=np.float32)
        out[:, 0] = [len(t) for t in texts]
        return out


async def _runner(tmp_path, rows: list[dict], embedder=None) -> tuple[EmbeddedRunner, object]:
    settings = Settings(data_dir=tmp_path / "d", embedder="none")
    clients = await build_clients(settings, embedder=embedder)
    runner = EmbeddedRunner(clients, clients.settings.pipeline, batch=32)
    src = write_jsonl(tmp_path / "in.jsonl", rows)
    await runner.produce(to_records(screen(read_any(src, None), None), IngestReport(), flush=True, source="t"))
    return runner, clients


async def test_raw_messages_go_to_the_model_more_than_one_batch_ahead(tmp_path):
    inner = GatedEmbedder()
    runner, clients = await _runner(tmp_path, make_messages(2, 60), CachedEmbedder(inner))
    run = asyncio.create_task(runner.run_until_idle())
    try:
        for _ in range(200):  # the segmenter waits for its first batch's vectors: nothing has ended yet
            if len(inner.calls) >= EmbeddedRunner.AHEAD_BATCHES:
                break
            await asyncio.sleep(0.01)
        assert inner.calls[: EmbeddedRunner.AHEAD_BATCHES] == [32] * EmbeddedRunner.AHEAD_BATCHES
        inner.gate.set()
        await asyncio.wait_for(run, 60)
        assert await runner.lag() == dict.fromkeys(await runner.lag(), 0)
    finally:
        inner.gate.set()
        await asyncio.gather(run, return_exceptions=True)
        await clients.close()


async def test_the_consolidator_follows_the_graph_stage_batch_by_batch(tmp_path, monkeypatch):
    runner, clients = await _runner(tmp_path, make_messages(40, 8))  # 40 topics closed in one round
    topic = DISTILL_RESULTS.name
    seen: list[tuple[int, int, int]] = []  # (consolidator offset, graph offset, results in the topic)
    process = ConsolidateStage.process

    async def watched(self, records):
        seen.append((records[0].offset, await runner.log.committed("graph", topic),
                     await runner.log.end_offset(topic)))  # fmt: skip
        return await process(self, records)

    monkeypatch.setattr(ConsolidateStage, "process", watched)
    try:
        await runner.run_until_idle()
        assert len(seen) > 16 and await runner.lag() == dict.fromkeys(await runner.lag(), 0)
        assert all(mine < graphed for mine, graphed, _ in seen)  # the graph stage read each result first
        assert any(graphed < end for _, graphed, end in seen)  # ... not the whole round before the first
    finally:
        await clients.close()
