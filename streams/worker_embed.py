"""The worker's embedder: the stages near the end of the pipeline go first.

One worker runs every stage in one event loop over one model, which runs one forward at a time from its
priority queue (:mod:`backends.embed.base`). A segmenter batch (hundreds of turns) or a window of the
consolidator's candidates embedded ahead holds the model for a second or more, and the graph stage, which
embeds a few entity names and edge texts per distillation result, waited behind each of them: the
consolidator (the pipeline's tail) advanced a result or two a second while the segmenter ran. Here the bulk
callers (:func:`bulk`) queue at the lowest priority, in chunks of similar-length texts, so any other call
waits for one chunk at most; all the chunks are queued at once, so the model goes from one to the next
without waiting for the event loop. Vectors are the model's; only the order of the work changes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import numpy as np

from backends.embed.base import AHEAD, current_priority, embedding_priority
from retrieval.protocols import Embedder

__all__ = ["BULK_CHUNK", "PriorityEmbedder", "bulk"]

BULK_CHUNK = 64  # texts per chunk of a bulk call: ~0.1-0.2 s of MiniLM on two cores (LoCoMo turns)

T = TypeVar("T")


async def bulk(work: Callable[[], Awaitable[T]]) -> T:
    """Run ``work`` with its embedding calls queued as bulk (after every other call)."""
    with embedding_priority(AHEAD):
        return await work()


class PriorityEmbedder:
    """Wraps the worker's embedder: a bulk call goes in chunks of similar-length texts, all queued at once."""

    def __init__(self, inner: Embedder, chunk: int = BULK_CHUNK) -> None:
        self.inner = inner
        self.chunk = max(1, chunk)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def embed(self, texts: list[str], *, is_query: bool = False) -> np.ndarray:
        if current_priority() < AHEAD or len(texts) <= self.chunk:
            return await self.inner.embed(texts, is_query=is_query)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths pad little
        chunks = [order[start : start + self.chunk] for start in range(0, len(order), self.chunk)]
        parts = await asyncio.gather(*(self.inner.embed([texts[i] for i in rows], is_query=is_query)
                                       for rows in chunks))  # fmt: skip
        out = np.empty((len(texts), parts[0].shape[1]), dtype=parts[0].dtype)
        for rows, vecs in zip(chunks, parts, strict=True):
            out[rows] = vecs
        return out
