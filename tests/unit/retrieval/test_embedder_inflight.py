"""The vector cache's in-flight sharing: a text being embedded by one call is waited for by another (the
runner embeds ahead of the stages in the background), never embedded twice; an abandoned call is redone."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from retrieval.embedder import CachedEmbedder


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
