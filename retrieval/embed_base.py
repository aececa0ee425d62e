"""What every in-process embedder shares: the vector size, L2 normalisation and the lazy-load +
serialised-forward machinery (models load on the first ``embed``, in a worker thread)."""

from __future__ import annotations

import asyncio
from typing import Any

import numpy as np

DIM = 384


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Row-wise L2 normalisation to float32; zero rows stay zero."""
    v = np.asarray(vectors, dtype=np.float32)
    if v.ndim == 1:
        v = v[None, :]
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return (v / np.where(norms == 0.0, 1.0, norms)).astype(np.float32, copy=False)


def _empty(dim: int) -> np.ndarray:
    return np.zeros((0, dim), dtype=np.float32)


class _LazyModelEmbedder:
    """Shared lazy-load + serialised-forward machinery; subclasses implement ``_load`` and ``_encode``."""

    name: str
    dim: int = DIM

    def __init__(self, batch: int = 64) -> None:
        self.batch = max(1, batch)
        self._model: Any = None
        self._lock: asyncio.Lock | None = None
        self._lock_loop: asyncio.AbstractEventLoop | None = None

    def _load(self) -> Any:  # runs in a worker thread
        raise NotImplementedError

    def _encode(self, model: Any, texts: list[str], is_query: bool) -> np.ndarray:  # worker thread
        raise NotImplementedError

    async def embed(self, texts: list[str], *, is_query: bool = False) -> np.ndarray:
        if not texts:
            return _empty(self.dim)
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock_loop is not loop:  # a lock serves one loop (tests share a model)
            self._lock, self._lock_loop = asyncio.Lock(), loop
        async with self._lock:  # one forward at a time: the model is shared and CPU-bound
            if self._model is None:
                self._model = await asyncio.to_thread(self._load)
            out = await asyncio.to_thread(self._encode, self._model, list(texts), is_query)
        return l2_normalise(out)
