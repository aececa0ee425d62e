"""Vectors of derived items: aggregates of whole messages take their source turns' vectors.

A Q&A pair is two messages, a summary and a title stand for their topic's messages: what the embedding would
capture of them is in the source turns' vectors, which the segmenter has already stored. With
``derived_vectors="sources"`` (the default) such an item's vector is the normalised mean of its source turns'
vectors, read from the store; it is embedded itself only when a source has no vector there (a store without
them, a source deleted meanwhile). Facts and tasks are single sentences of a message, finer than the turn
(LoCoMo: cosine 0.44 between a fact and its turn), so they are always embedded; so are graph edges (mostly
the same sentences: cache hits). ``"text"`` embeds every item's own text.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Literal, Protocol

import numpy as np

from streams.clients import Clients
from streams.stages.io import embed

__all__ = [
    "COMPOSED_KINDS", "DerivedVectors", "Sourced", "composed", "item_vectors", "mean_unit", "share_turn_vectors_of",
    "shared_turn_vectors",
]

DerivedVectors = Literal["sources", "text"]
COMPOSED_KINDS = frozenset({"qa", "summary", "title"})  # whole messages: their turns' mean vector


_SHARED: ContextVar[dict[tuple[str, str], np.ndarray] | None] = ContextVar("memstream_turn_vectors", default=None)


@contextmanager
def shared_turn_vectors() -> Iterator[None]:
    """Within this block (this task and the tasks it starts), :func:`item_vectors` reads each source turn's
    stored vector once: a runtime deciding a batch of results one at a time, each decision then applied,
    composes the same items twice (the consolidator's candidates, the indexer's records), and each read is
    a round trip to Elasticsearch. For a short block only (a batch of results): a turn edited meanwhile
    keeps its old vector here until the block ends, and its new text is distilled again after it."""
    token = _SHARED.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)


async def share_turn_vectors_of(clients: Clients, items: Sequence[Sourced], mode: DerivedVectors) -> None:
    """Within :func:`shared_turn_vectors`: the source turns of these items that compose their vectors, read
    now in one call across their chats (a batch of results), not a read per result and stage."""
    shared = _SHARED.get()
    if shared is None or clients.embedder is None:
        return
    keys = [(item.chat_id, m) for item in items if composed(item, mode) for m in item.source_message_ids]
    keys = [k for k in dict.fromkeys(keys) if k not in shared]
    if keys:
        shared.update(await clients.store.turn_vectors_in(keys))


async def _turn_vectors(clients: Clients, chat_id: str, ids: list[str]) -> dict[str, np.ndarray]:
    shared = _SHARED.get()
    if shared is None:
        return await clients.store.turn_vectors(chat_id, ids)
    missing = [m for m in ids if (chat_id, m) not in shared]
    if missing:
        shared.update(((chat_id, m), v) for m, v in (await clients.store.turn_vectors(chat_id, missing)).items())
    return {m: shared[(chat_id, m)] for m in ids if (chat_id, m) in shared}


class Sourced(Protocol):
    chat_id: str
    text: str
    source_message_ids: list[str]


def composed(item: Sourced, mode: DerivedVectors) -> bool:
    """Whether ``item``'s vector is composed from its source turns (else its text is embedded)."""
    return (
        mode == "sources"
        and str(getattr(item, "kind", "")) in COMPOSED_KINDS
        and bool(item.source_message_ids)
    )


def mean_unit(vectors: Sequence[np.ndarray]) -> np.ndarray | None:
    """The L2-normalised mean of ``vectors`` (None for none, or when they cancel out)."""
    if not vectors:
        return None
    mean = np.mean(np.stack(vectors), axis=0)
    norm = float(np.linalg.norm(mean))
    return (mean / norm).astype(np.float32) if norm > 1e-6 else None


async def item_vectors(clients: Clients, items: Sequence[Sourced], mode: DerivedVectors) -> np.ndarray | None:
    """One vector per item (None without an embedder): composed from the source turns' stored vectors in
    ``"sources"`` mode, else (or when a source's vector is missing) the item's own text embedded."""
    if clients.embedder is None or not items:
        return None
    rows: list[np.ndarray | None] = [None] * len(items)
    by_chat: dict[str, set[str]] = {}
    for item in items:
        if composed(item, mode):
            by_chat.setdefault(item.chat_id, set()).update(item.source_message_ids)
    found = {c: await _turn_vectors(clients, c, sorted(ids)) for c, ids in by_chat.items()}
    for i, item in enumerate(items):
        turns = found.get(item.chat_id, {})
        if composed(item, mode) and all(m in turns for m in item.source_message_ids):
            rows[i] = mean_unit([turns[m] for m in item.source_message_ids])
    todo = [i for i, row in enumerate(rows) if row is None]
    vectors = await embed(clients, [items[i].text for i in todo])
    if vectors is not None:
        for j, i in enumerate(todo):
            rows[i] = vectors[j]
    dim = next((r.shape[0] for r in rows if r is not None), clients.embedder.dim)
    return np.stack([r if r is not None else np.zeros(dim, np.float32) for r in rows]).astype(np.float32)
