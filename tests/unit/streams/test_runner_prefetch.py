"""With ``derived_vectors="text"`` the embedded runner embeds the consolidator's candidates as soon as the
distiller made them, in the background (calls of ``EmbeddedRunner.PREFETCH_CHUNK`` texts): fewer, larger forwards, and the very same memories as deciding each result with its own
embedding call. (The default, "sources", embeds no candidate: tests/unit/streams/test_derived_vectors.py.)"""

from __future__ import annotations

import asyncio
import hashlib
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from backends.embed.embedder import CachedEmbedder
from language.text import tokenize
from memstream.clients import build_clients
from memstream.ops import ingest
from memstream.settings import Settings
from streams.stages.consolidate import ConsolidateStage
from tests.helpers import write_jsonl

FACTS = [
    "I moved to Berlin last week for a new job at Siemens.",
    "My sister Anna just adopted a cat called Mochi.",
    "We are planning a trip to Hangzhou in April.",
    "I started learning the guitar two months ago.",
    "Our team lead Carol prefers the deploy to happen on Tuesdays.",
    "I am allergic to peanuts, so no satay.",
    "Dave bought a red bike for his commute.",
    "The budget review moved to Friday at 3pm.",
    "I finished reading Dune and loved it.",
    "My laptop broke, the screen cracked on the train.",
]


def _messages() -> list[dict]:
    """Two chats of personal statements, with gaps that close topics (so results reach the consolidator)."""
    start = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)
    rows = []
    for c in range(2):
        t = start
        for i in range(60):
            t += timedelta(minutes=2 if i % 6 else 240)
            rows.append({"chat_id": f"chat-{c}", "message_id": f"c{c}-m{i}", "sender": ["alice", "bob"][i % 2],
                         "ts": t.isoformat(), "text": FACTS[(i * 3 + c) % len(FACTS)]})  # fmt: skip
    return rows


class HashingEmbedder:
    """Signed feature hashing of the tokens: deterministic and independent of how texts are batched."""

    name = "hashing-test"
    dim = 64

    def __init__(self) -> None:
        self.calls: list[int] = []

    async def embed(self, texts: list[str], *, is_query: bool = False) -> np.ndarray:
        self.calls.append(len(texts))
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        out[:, 0] = 0.1
        for row, text in enumerate(texts):
            for token in tokenize(text):
                h = hashlib.blake2b(token.encode(), digest_size=4).digest()
                out[row, int.from_bytes(h[:2], "little") % self.dim] += 1.0 if h[2] & 1 else -1.0
        return out / np.linalg.norm(out, axis=1, keepdims=True)


async def _run(tmp_path, name: str, src) -> tuple[dict, list[int]]:
    inner = HashingEmbedder()
    clients = await build_clients(Settings(data_dir=tmp_path / name, embedder="none", derived_vectors="text"),
                                  embedder=CachedEmbedder(inner))  # fmt: skip
    try:
        await ingest(clients, src)
        snap = {}
        for chat in await clients.store.chats():
            mems = await clients.store.list_memories(chat, live_only=False)
            snap[chat] = sorted(m.model_dump_json() for m in mems)
        return snap, inner.calls
    finally:
        await clients.close()


async def test_prefetched_candidates_give_the_same_memories_in_fewer_calls(tmp_path, monkeypatch):
    src = write_jsonl(tmp_path / "in.jsonl", _messages())
    ahead, ahead_calls = await _run(tmp_path, "ahead", src)

    async def no_prefetch(self, records, extra=None) -> int:
        self._candidates = {}
        return 0

    monkeypatch.setattr(ConsolidateStage, "prefetch", no_prefetch)
    monkeypatch.setattr(ConsolidateStage, "prefetch_ahead", lambda self, records, chunk, first=(): None)
    one_by_one, calls = await _run(tmp_path, "one", src)
    assert sum(len(v) for v in ahead.values()) > 20 and ahead == one_by_one
    assert sum(ahead_calls) == sum(calls)  # the same texts embedded (each once: the cache) ...
    assert len(ahead_calls) < 0.6 * len(calls)  # ... in far fewer forwards (4 vs 37 here)


async def test_prefetching_in_small_calls_gives_the_same_memories(tmp_path, monkeypatch):
    """The background prefetch embeds in calls of ``PREFETCH_CHUNK`` texts: any size, the same memories."""
    from streams.runner import EmbeddedRunner

    src = write_jsonl(tmp_path / "in.jsonl", _messages())
    big, big_calls = await _run(tmp_path, "big", src)
    monkeypatch.setattr(EmbeddedRunner, "PREFETCH_CHUNK", 3)
    small, small_calls = await _run(tmp_path, "small", src)
    assert small == big and sum(small_calls) == sum(big_calls)
    assert len(small_calls) > len(big_calls) and max(small_calls[1:]) <= 3  # after the raw turns' one call


class _Recording(HashingEmbedder):
    def __init__(self, forward_s: float = 0.002) -> None:
        super().__init__()
        self.texts: list[list[str]] = []
        self.forward_s = forward_s
        self._model = asyncio.Lock()  # one forward at a time, as the model's thread runs them

    async def embed(self, texts: list[str], *, is_query: bool = False) -> np.ndarray:
        async with self._model:
            self.texts.append(list(texts))
            await asyncio.sleep(self.forward_s)  # the forward: other calls may come meanwhile
            return await super().embed(texts, is_query=is_query)


async def test_under_serve_the_prefetch_runs_on_the_embed_lane_and_nothing_is_embedded_twice(tmp_path):
    """``serve`` hands the runner an EmbedderProxy: the cache (its in-flight table, its connection) lives on
    the embed lane's loop, so the prefetch must run there too, or the stages re-embed its texts one by one."""
    from memstream.serving import EmbedderProxy, Lane

    src = write_jsonl(tmp_path / "in.jsonl", _messages())
    snaps, calls = [], []
    for proxied in (False, True):
        inner = _Recording()
        lane = await Lane("embed").start() if proxied else None
        emb = CachedEmbedder(inner)
        settings = Settings(data_dir=tmp_path / f"d{proxied}", embedder="none", derived_vectors="text")
        clients = await build_clients(settings, embedder=EmbedderProxy(emb, lane) if lane else emb)
        try:
            await ingest(clients, src)
            snaps.append({c: sorted(m.model_dump_json() for m in await clients.store.list_memories(c, live_only=False))
                          for c in await clients.store.chats()})  # fmt: skip
        finally:
            await clients.close()
            if lane is not None:
                await lane.stop()
        texts = [t for call in inner.texts for t in call]
        assert len(texts) == len(set(texts))  # each text embedded once
        calls.append([len(c) for c in inner.texts])
    assert snaps[0] == snaps[1] and calls[0] == calls[1]


async def test_a_run_that_failed_midway_prefetches_again_on_the_next_run(tmp_path, monkeypatch):
    """``serve`` retries with the same runner: what the failed run reserved is released, and the next run
    embeds the consolidator's texts ahead again (not one by one as each result asks)."""
    from memstream.formats import read_any
    from memstream.ops import IngestReport, screen, to_records
    from streams.runner import EmbeddedRunner

    inner = _Recording(forward_s=0.05)  # slow: the failed run leaves texts not embedded yet
    settings = Settings(data_dir=tmp_path / "d", embedder="none", derived_vectors="text")
    clients = await build_clients(settings, embedder=CachedEmbedder(inner))
    runner = EmbeddedRunner(clients, clients.settings.pipeline)
    src = write_jsonl(tmp_path / "in.jsonl", _messages())
    await runner.produce(to_records(screen(read_any(src, None), None), IngestReport(), flush=True, source="t"))
    process, failed = ConsolidateStage.process, []

    async def fails_once(self, records):
        if not failed:
            failed.append(True)
            raise ConnectionError("store timed out")
        return await process(self, records)

    monkeypatch.setattr(ConsolidateStage, "process", fails_once)
    try:
        with pytest.raises(ConnectionError):
            await runner.run_until_idle()
        inner.texts.clear()
        await runner.run_until_idle()
        sizes = [len(c) for c in inner.texts]
        assert sizes and len(sizes) < sum(sizes)  # ahead, in calls; not each text alone as a result asks
        assert await runner.lag() == dict.fromkeys(await runner.lag(), 0)
    finally:
        await clients.close()


async def test_the_embed_lane_keeps_the_callers_priority():
    """Under ``serve`` the processor's calls run on the embed lane's loop: the raw messages it embeds ahead
    must still queue after the stages' own calls (the priority, a context variable, goes along with the
    call: ``call_soon_threadsafe`` runs it in a copy of the caller's context)."""
    from backends.embed.base import AHEAD, NORMAL, SOON, current_priority, embedding_priority
    from memstream.serving import EmbedderProxy, Lane

    class Seen(HashingEmbedder):
        def __init__(self) -> None:
            super().__init__()
            self.priorities: list[int] = []

        async def embed(self, texts, *, is_query=False):
            self.priorities.append(current_priority())
            return await super().embed(texts, is_query=is_query)

    inner = Seen()
    lane = await Lane("embed").start()
    try:
        proxy = EmbedderProxy(CachedEmbedder(inner), lane)
        await proxy.embed(["a stage's own call"])
        with embedding_priority(AHEAD):
            await proxy.embed(["the next batch, embedded ahead"])
        await proxy.embed_ahead(["a result's candidate"], 8)
        assert inner.priorities == [NORMAL, AHEAD, SOON]
    finally:
        await lane.stop()
