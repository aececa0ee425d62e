"""The query vectors a request is about to search with, for a store that can score several in one pass.

A routed question runs several searches, most with a vector of their own (the question, its events, its
sub-queries), one after the other. A scan that reads the whole chat per vector (the int8 kNN of a large
chat, :mod:`backends.sqlite.knn_int8`) can score all of a request's vectors in the pass that reads the chat once.
The router announces them (:func:`upcoming`) for the searches it runs next; a store may use the hint or not,
and what it answers never depends on it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

import numpy as np

_UPCOMING: ContextVar[tuple[np.ndarray, ...]] = ContextVar("memstream_upcoming_query_vectors", default=())


def unit(vector: Sequence[float] | np.ndarray) -> np.ndarray:
    """``vector`` as float32 scaled to unit length, exactly as the stores normalise a query vector (a zero
    vector stays zero)."""
    v = np.asarray(vector, dtype=np.float32).reshape(1, -1)
    norms = np.linalg.norm(v, axis=1, keepdims=True)
    return (v / np.where(norms == 0.0, 1.0, norms))[0]


@contextmanager
def upcoming(vectors: Iterable[Sequence[float] | np.ndarray]) -> Iterator[None]:
    """Within the block (this task and the ones it starts), :func:`expected` gives ``vectors`` (unit)."""
    token = _UPCOMING.set(tuple(unit(v) for v in vectors))
    try:
        yield
    finally:
        _UPCOMING.reset(token)


def expected() -> tuple[np.ndarray, ...]:
    """The unit query vectors announced for the current request (none outside :func:`upcoming`)."""
    return _UPCOMING.get()

