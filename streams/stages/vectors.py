"""Vectors of derived items: aggregates of whole messages take their source turns' vectors, facts their sentence's.

A Q&A pair is two messages, a summary and a title stand for their topic's messages: what the embedding would
capture of them is in the source turns' vectors, which the segmenter has already stored. With
``derived_vectors="sources"`` (the default) such an item's vector is the normalised mean of its source turns'
vectors, read from the store; it is embedded itself only when a source has no vector there (a store without
them, a source deleted meanwhile). A fact restates one sentence of a message, finer than the turn (LoCoMo:
cosine 0.44 between a fact and its turn): its vector is that sentence's, pooled from the turn's own forward
(:meth:`backends.embed.embedder.CachedEmbedder.sentence_vectors`; the turn's vector for a turn of one sentence),
plus ``FACT_NAME_WEIGHT`` times its speaker's name's vector (the rewrite names the speaker where the turn said
"I"), normalised: no forward of its own. A fact whose sentence is not found (an LLM's free rewrite, a model
that pools no sentences, a turn embedded before it did) is embedded; so are tasks and graph edges (mostly the
same sentences: cache hits). ``"text"`` embeds every item's own text.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Literal, Protocol

import numpy as np

from language.extract.text import split_sentences
from language.text import tokenize
from streams.clients import Clients
from streams.stages.io import embed

__all__ = [
    "COMPOSED_KINDS", "FACT_NAME_WEIGHT", "DerivedVectors", "Sourced", "composed", "item_vectors", "mean_unit",
    "share_turn_vectors_of", "shared_turn_vectors", "source_sentence",
]

DerivedVectors = Literal["sources", "text"]
COMPOSED_KINDS = frozenset({"qa", "summary", "title"})  # whole messages: their turns' mean vector
# a fact's vector: its sentence's + this times its speaker's name's, so that a fact is found by who said it
# as well as by what it says; a larger weight finds slightly more but abstains worse (python -m
# bench.fact_vectors; the figures are in docs/BENCHMARKS.md, "Fact vectors")
FACT_NAME_WEIGHT = 0.5
SENTENCE_SHARE = 0.5  # a fact restates the sentence whose words it holds at least this share of


_SHARED: ContextVar[dict[tuple[str, str], np.ndarray] | None] = ContextVar("memstream_turn_vectors", default=None)


_TEXTS: ContextVar[dict[tuple[str, str], str] | None] = ContextVar("memstream_turn_texts", default=None)


@contextmanager
def shared_turn_vectors() -> Iterator[None]:
    """Within this block (this task and the tasks it starts), :func:`item_vectors` reads each source turn's
    stored vector once: a runtime deciding a batch of results one at a time, each decision then applied,
    composes the same items twice (the consolidator's candidates, the indexer's records), and each read is
    a round trip to Elasticsearch. For a short block only (a batch of results): a turn edited meanwhile
    keeps its old vector here until the block ends, and its new text is distilled again after it."""
    token, texts = _SHARED.set({}), _TEXTS.set({})
    try:
        yield
    finally:
        _SHARED.reset(token)
        _TEXTS.reset(texts)


async def share_turn_vectors_of(clients: Clients, items: Sequence[Sourced], mode: DerivedVectors) -> None:
    """Within :func:`shared_turn_vectors`: the source turns of these items that compose their vectors, read
    now in one call across their chats (a batch of results), not a read per result and stage."""
    shared = _SHARED.get()
    if shared is None or clients.embedder is None:
        return
    keys = [(item.chat_id, m) for item in items if composed(item, mode) for m in item.source_message_ids]
    facts = [(item.chat_id, item.source_message_ids[0]) for item in items
             if sentence_composed(item, mode, clients.embedder)]  # fmt: skip
    texts = await _turn_texts(clients, facts)  # a fact of a turn of one sentence takes that turn's vector
    keys += [k for k in facts if k in texts and len(split_sentences(texts[k])) == 1]
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


async def _turn_texts(clients: Clients, keys: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """The texts of these (chat, message) turns, read once within :func:`shared_turn_vectors`."""
    shared = _TEXTS.get()
    missing = [k for k in dict.fromkeys(keys) if shared is None or k not in shared]
    found = dict(shared or {})
    if missing:
        read = {(m.chat_id, m.message_id): m.text for m in await clients.store.get_messages_in(missing)}
        found.update(read)
        if shared is not None:
            shared.update(read)
    return {k: found[k] for k in keys if k in found}


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


def sentence_composed(item: Sourced, mode: DerivedVectors, embedder: object) -> bool:
    """Whether ``item`` is a fact whose vector may come from its source sentence: it has a speaker, and the
    embedder pools sentences (``pools_sentences``: the ONNX MiniLM; other models embed facts as before, and
    the name's weight was chosen on MiniLM)."""
    return (mode == "sources" and bool(getattr(embedder, "pools_sentences", False))
            and str(getattr(item, "kind", "")) == "fact" and bool(item.source_message_ids)
            and bool(getattr(item, "speaker", None)))  # fmt: skip


def source_sentence(turn: str, fact: str) -> tuple[str, int] | None:
    """The sentence of the message ``turn`` that ``fact`` restates, and how many sentences ``turn`` has: of
    the sentences with at least ``SENTENCE_SHARE`` of their BM25 tokens (content words; jieba words and
    bigrams of Chinese) in the fact, the one sharing the most tokens with it (then the larger share, then the
    first): "I love it!" does not win over the sentence the fact rewrote. None when no sentence is restated
    so (a free rewrite, a sentence of stopwords only)."""
    sentences = split_sentences(turn)
    words = set(tokenize(fact))
    best, score = None, (0, 0.0)
    for sentence in sentences:
        own = set(tokenize(sentence))
        shared = len(own & words)
        if own and shared / len(own) >= SENTENCE_SHARE and (shared, shared / len(own)) > score:
            best, score = sentence, (shared, shared / len(own))
    return (best, len(sentences)) if best is not None else None


async def _fact_rows(clients: Clients, items: Sequence[Sourced], todo: list[int], rows: list, weight: float) -> None:
    """Fill ``rows[i]`` for the facts ``todo`` whose source sentence has a vector (see the module doc)."""
    vectors_of = getattr(clients.embedder, "sentence_vectors", None)
    if vectors_of is None:
        return
    keys = {i: (items[i].chat_id, items[i].source_message_ids[0]) for i in todo}
    texts = await _turn_texts(clients, list(keys.values()))
    picked: dict[int, tuple[str, str, int]] = {}
    for i, key in keys.items():
        found = source_sentence(texts[key], items[i].text) if key in texts else None
        if found is not None:
            picked[i] = (texts[key], *found)
    sentences = await vectors_of([(t, s) for t, s, n in picked.values() if n > 1])
    single: dict[str, set[str]] = {}  # a turn of one sentence: its own vector, by chat
    for i, (_, _, n) in picked.items():
        if n == 1:
            single.setdefault(keys[i][0], set()).add(keys[i][1])
    whole = {(chat, m): v for chat, ids in single.items()
             for m, v in (await _turn_vectors(clients, chat, sorted(ids))).items()}  # fmt: skip
    base = {i: sentences.get((t, s)) if n > 1 else whole.get(keys[i]) for i, (t, s, n) in picked.items()}
    base = {i: v for i, v in base.items() if v is not None}
    speakers = sorted({str(getattr(items[i], "speaker", "")) for i in base})
    names = await embed(clients, speakers)
    if names is None:
        return
    name_of = dict(zip(speakers, names, strict=True))
    for i, v in base.items():
        rows[i] = mean_unit([v, weight * name_of[str(getattr(items[i], "speaker", ""))]])


def mean_unit(vectors: Sequence[np.ndarray]) -> np.ndarray | None:
    """The L2-normalised mean of ``vectors`` (None for none, or when they cancel out)."""
    if not vectors:
        return None
    mean = np.mean(np.stack(vectors), axis=0)
    norm = float(np.linalg.norm(mean))
    return (mean / norm).astype(np.float32) if norm > 1e-6 else None


async def item_vectors(clients: Clients, items: Sequence[Sourced], mode: DerivedVectors,
                       fact_name_weight: float = FACT_NAME_WEIGHT) -> np.ndarray | None:  # fmt: skip
    """One vector per item (None without an embedder): composed from the source turns' stored vectors in
    ``"sources"`` mode (a fact: its sentence's and ``fact_name_weight`` times its speaker's name's), else
    (or when a source's vector is missing) the item's own text embedded."""
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
    facts = [i for i, row in enumerate(rows) if row is None and sentence_composed(items[i], mode, clients.embedder)]
    if facts:
        await _fact_rows(clients, items, facts, rows, fact_name_weight)
    todo = [i for i, row in enumerate(rows) if row is None]
    vectors = await embed(clients, [items[i].text for i in todo])
    if vectors is not None:
        for j, i in enumerate(todo):
            rows[i] = vectors[j]
    dim = next((r.shape[0] for r in rows if r is not None), clients.embedder.dim)
    return np.stack([r if r is not None else np.zeros(dim, np.float32) for r in rows]).astype(np.float32)
