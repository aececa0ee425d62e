"""The vector cache's in-flight sharing: a text being embedded by one call is waited for by another (the
runner embeds ahead of the stages in the background), never embedded twice; an abandoned call is redone."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from backends.embed.embedder import CachedEmbedder


class SlowEmbedder:
    """Deterministic vectors after a pause (the model's forward in its thread); records every call."""

    name = "slow-test"
    dim = 4

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.gate = asyncio.Event()

    async def embed(self, texts: list[str], *, is_query: bool = False) -> np.ndarray:
        self.calls.append(list(texts))
        await self.gate.wait()
        return np.array([[len(t), 1.0, t.count("a"), 2.0] for t in texts], dtype=np.float32)


async def test_a_text_in_flight_is_waited_for_not_embedded_again():
    inner = SlowEmbedder()
    emb = CachedEmbedder(inner)
    ahead = asyncio.create_task(emb.embed(["alpha", "beta"]))  # the background call
    await asyncio.sleep(0)
    stage = asyncio.create_task(emb.embed(["beta", "gamma", "alpha"]))  # a stage asking meanwhile
    await asyncio.sleep(0)
    inner.gate.set()
    first, second = await ahead, await stage
    assert inner.calls == [["alpha", "beta"], ["gamma"]]  # beta and alpha were not embedded twice
    assert np.allclose(second[0], first[1]) and np.allclose(second[2], first[0])
    assert await emb.embed(["gamma"]) is not None and len(inner.calls) == 2  # cached now


async def test_an_abandoned_embedding_is_redone_by_the_caller_waiting_for_it():
    inner = SlowEmbedder()
    emb = CachedEmbedder(inner)
    ahead = asyncio.create_task(emb.embed(["alpha"]))
    await asyncio.sleep(0)
    stage = asyncio.create_task(emb.embed(["alpha"]))
    await asyncio.sleep(0)
    ahead.cancel()  # the run ended: the background task is cancelled mid-forward
    with pytest.raises(asyncio.CancelledError):
        await ahead
    inner.gate.set()
    got = await stage
    assert inner.calls == [["alpha"], ["alpha"]] and got.shape == (1, 4)
    assert emb._inflight == {}


async def test_embedding_ahead_reserves_every_text_at_once_and_fills_them_in_calls_of_chunk():
    inner = SlowEmbedder()
    emb = CachedEmbedder(inner)
    inner.gate.set()
    await emb.embed(["cached"])  # already in the cache: not embedded again
    inner.gate.clear()
    inner.calls.clear()
    task = emb.embed_ahead(["a1", "cached", "a2", "a3", "a1", "a4", "a5"], chunk=2)
    stage = asyncio.create_task(emb.embed(["a5", "new"]))  # asks before the task ran: waits for a5's call
    await asyncio.sleep(0)
    inner.gate.set()
    assert await task == 5
    second = await stage
    assert [c for c in inner.calls if c != ["new"]] == [["a1", "a2"], ["a3", "a4"], ["a5"]]  # a5: its own call
    assert ["new"] in inner.calls
    assert np.allclose(second[0], np.array([2.0, 1.0, 1.0, 2.0]) / np.sqrt(10.0))  # a5 (normalised)
    assert emb._inflight == {}


async def test_embedding_ahead_hands_every_chunk_to_the_model_before_the_first_is_done():
    inner = SlowEmbedder()  # the gate stays shut: no call ends until every chunk was asked for
    emb = CachedEmbedder(inner)
    task = emb.embed_ahead(["b1", "b2", "b3", "b4", "b5"], chunk=2)
    for _ in range(3):
        await asyncio.sleep(0)
    assert inner.calls == [["b1", "b2"], ["b3", "b4"], ["b5"]]  # the model never waits for this loop
    inner.gate.set()
    assert await task == 5 and emb._inflight == {}


async def test_embedding_ahead_cancelled_before_it_ran_releases_its_texts():
    inner = SlowEmbedder()
    inner.gate.set()
    emb = CachedEmbedder(inner)
    task = emb.embed_ahead(["x", "y"], chunk=8)
    task.cancel()  # never started: its reservations must not leave askers waiting for ever
    with pytest.raises(asyncio.CancelledError):
        await task
    assert emb._inflight == {}
    out = await asyncio.wait_for(emb.embed(["y", "x"]), 5)
    assert inner.calls == [["y", "x"]] and out.shape == (2, 4)


async def test_embedding_ahead_that_fails_lets_a_waiting_stage_embed_the_rest_itself():
    class FailsSecond(SlowEmbedder):
        async def embed(self, texts, *, is_query=False):
            if len(self.calls) == 1:
                self.calls.append(list(texts))
                raise RuntimeError("model gone")
            return await super().embed(texts, is_query=is_query)

    inner = FailsSecond()
    inner.gate.set()
    emb = CachedEmbedder(inner)
    task = emb.embed_ahead(["p", "q", "r"], chunk=1)
    waiting = asyncio.create_task(emb.embed(["r", "q"]))
    with pytest.raises(RuntimeError, match="model gone"):
        await task
    out = await asyncio.wait_for(waiting, 5)
    # every chunk was handed over at once: r's call was under way when q's failed, so only q is done again
    assert inner.calls[:3] == [["p"], ["q"], ["r"]] and out.shape == (2, 4)
    assert sorted(t for call in inner.calls[3:] for t in call) == ["q"]
    assert emb._inflight == {}
