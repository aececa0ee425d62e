"""The worker's embedder: the stages near the end of the pipeline go first.

One worker runs every stage in one event loop over one model, which embeds one call at a time in arrival
order. A segmenter batch (hundreds of turns) or a window of the consolidator's candidates embedded ahead
holds the model for a second or more, and the graph stage, which embeds a few entity names and edge texts
per distillation result, waited behind each of them: the consolidator (the pipeline's tail) advanced a
result or two a second while the segmenter ran. Here the bulk callers (:func:`bulk`) go in chunks of
similar-length texts, each chunk only when no other call is waiting or running, so any other call waits
for one chunk at most. Vectors are the model's; only the order of the work changes.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import numpy as np

from retrieval.protocols import Embedder

__all__ = ["BULK_CHUNK", "PriorityEmbedder", "bulk"]

BULK_CHUNK = 64  # texts per chunk of a bulk call: ~0.2 s of MiniLM on two idle cores (LoCoMo turns)

_BULK: contextvars.ContextVar[bool] = contextvars.ContextVar("memstream_bulk_embedding", default=False)
T = TypeVar("T")


async def bulk(work: Callable[[], Awaitable[T]]) -> T:
    """Run ``work`` with its embedding calls marked as bulk (yielding to every other call)."""
    token = _BULK.set(True)
    try:
        return await work()
    finally:
        _BULK.reset(token)


class PriorityEmbedder:
    """Wraps the worker's embedder: bulk calls go in chunks, each after every other call in flight."""

    def __init__(self, inner: Embedder, chunk: int = BULK_CHUNK) -> None:
        self.inner = inner
        self.chunk = max(1, chunk)
        self._urgent = 0
        self._clear = asyncio.Event()
        self._clear.set()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def embed(self, texts: list[str], *, is_query: bool = False) -> np.ndarray:
        if not _BULK.get():
            self._urgent += 1
            self._clear.clear()
            try:
                return await self.inner.embed(texts, is_query=is_query)
            finally:
                self._urgent -= 1
                if not self._urgent:
                    self._clear.set()
        if len(texts) <= self.chunk:
            await self._clear.wait()
            return await self.inner.embed(texts, is_query=is_query)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths pad little
        out: np.ndarray | None = None
        for start in range(0, len(order), self.chunk):
            rows = order[start : start + self.chunk]
            await self._clear.wait()
            vecs = await self.inner.embed([texts[i] for i in rows], is_query=is_query)
            if out is None:
                out = np.empty((len(texts), vecs.shape[1]), dtype=vecs.dtype)
            out[rows] = vecs
        assert out is not None
        return out
